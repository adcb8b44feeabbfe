"""How the driver completes a checkpoint in storage (engine/driver.py ``_persist``): the
fence reservation is made at the trigger when no other checkpoint is unresolved, else
beside the state-file check, and always precedes the ``_metadata`` write; a subtask
attempt's files are listed at its first checkpoint only; retention comes after the
checkpoint is reported complete (queued behind its commit on the storage worker), and a
failing retention does not undo a completed checkpoint."""

from __future__ import annotations

import dataclasses
import logging
import threading
import time

import pytest

from airflow_provider_seatunnel_ckpt.engine.actions import Broadcast, PersistCheckpoint
from airflow_provider_seatunnel_ckpt.engine.completed_store import CompletedCheckpointStore, wall_ms
from airflow_provider_seatunnel_ckpt.engine.driver import DriverLoop
from airflow_provider_seatunnel_ckpt.engine.fencing import Fenced
from airflow_provider_seatunnel_ckpt.engine.messages import CheckpointKind, StateHandle, TriggerBarrier

STEP_S = 0.25


class _Steps:
    """Storage and fence log in one: each step takes STEP_S and is recorded as it ends."""

    def __init__(self, fenced: bool = False, retention_fails: bool = False):
        self.fenced = fenced
        self.retention_fails = retention_fails
        self.ended: list[str] = []
        self.listed: list[set[str]] = []  # the state files each check had to list
        self.seq = 0
        self._lock = threading.Lock()

    def _end(self, step: str) -> None:
        with self._lock:
            self.ended.append(step)

    # the fence log
    def reserve(self, checkpoint_id: int, savepoint: bool = False) -> int:
        time.sleep(STEP_S)
        if self.fenced:
            raise Fenced("job j was taken over by another driver (attempt 2)")
        self.seq += 1
        self._end(f"reserve {checkpoint_id}")
        return self.seq

    def is_newest(self, seq: int) -> bool:
        return seq == self.seq

    def check(self, before: str = "") -> None:
        pass

    # the storage
    def complete_checkpoint(self, manifest, written=(), *, before_write=None, retention=True):
        assert retention is False, "the driver applies retention itself, later"
        unlisted = {h.file for h in manifest.subtask_states.values() if h.file} - set(written)
        if unlisted:
            time.sleep(STEP_S)  # the state-file listing
            self.listed.append(unlisted)
            self._end("check state files")
        before_write()
        self._end("write _metadata")
        return "file:///c"

    def apply_retention(self, job_id, pipeline_id):
        if self.retention_fails:
            raise OSError("503 Slow Down")
        self._end("retention")
        return []


class _Committer:
    def commit(self, infos):
        pass


def _with_state_files(checkpoint):
    """The checkpoint as if each subtask had uploaded its state to a file of its own."""
    subtasks = tuple(
        dataclasses.replace(
            s, state_handles=(StateHandle(size=1, sha256="0" * 64, path=f"task-{s.subtask}-{s.attempt}.state"),)
        )
        for s in checkpoint.subtasks
    )
    return dataclasses.replace(checkpoint, subtasks=subtasks)


def _complete_one(builder, steps: _Steps) -> tuple[DriverLoop, list[str], tuple]:
    h = builder.with_(num_subtasks=2).started()
    cid = h.trigger()
    for subtask in range(2):
        h[subtask].ack(cid)
    [checkpoint] = h.persist_requests
    checkpoint = _with_state_files(checkpoint)
    lines: list[str] = []
    loop = DriverLoop(
        h.coordinator,
        CompletedCheckpointStore(steps, "job", 1),
        _Committer(),
        fence=steps,
        progress=lambda line: (lines.append(line), steps._end("reported complete")),
    )
    try:
        loop._persist(checkpoint, wall_ms())
        event = loop.events.get(timeout=10)
        loop._handle(event)
    finally:
        loop._io.shutdown(wait=True)
        loop._fence_io.shutdown(wait=True)
    return loop, lines, event


def test_the_reservation_runs_beside_the_state_file_check_and_both_precede_the_write(builder):
    steps = _Steps()
    loop, lines, event = _complete_one(builder, steps)
    assert event[0] == "persisted"
    assert steps.ended.index("write _metadata") > max(
        steps.ended.index(f"reserve {event[1]}"), steps.ended.index("check state files")
    )
    [record] = loop.outcome.completed
    # side by side: about one step, not two
    assert STEP_S * 1000 <= record.persist_ms < 1.8 * STEP_S * 1000, record.persist_ms


def test_a_fenced_reservation_writes_no_metadata(builder):
    steps = _Steps(fenced=True)
    loop, lines, event = _complete_one(builder, steps)
    assert event[0] == "persist_failed" and isinstance(event[2], Fenced)
    assert "write _metadata" not in steps.ended
    assert loop.outcome.completed == [] and lines == []


def test_retention_comes_after_the_completion(builder):
    steps = _Steps()
    _complete_one(builder, steps)
    assert steps.ended[-2:] == ["reported complete", "retention"]


def test_a_failing_retention_leaves_the_checkpoint_completed(builder, caplog: pytest.LogCaptureFixture):
    steps = _Steps(retention_fails=True)
    with caplog.at_level(logging.WARNING):
        loop, lines, event = _complete_one(builder, steps)
    assert [r.checkpoint_id for r in loop.outcome.completed] == [event[1]]
    assert loop.outcome.error is None
    assert "could not remove checkpoints beyond the retained ones: 503 Slow Down" in caplog.text


# ---- the reservation made at the trigger, and the attempts whose files were found once ----
class _Run:
    """A coordinator (the harness) and the driver loop that performs its actions on ``_Steps``."""

    def __init__(self, builder, steps: _Steps):
        self.h = builder.with_(num_subtasks=2).started()
        self.steps = steps
        self.loop = DriverLoop(
            self.h.coordinator,
            CompletedCheckpointStore(steps, "job", 1),
            _Committer(),
            fence=steps,
            progress=lambda line: None,
        )

    def trigger(self) -> int:
        cid = self.h.trigger()
        [broadcast] = [
            a
            for a in self.h.log
            if isinstance(a, Broadcast) and isinstance(a.message, TriggerBarrier) and a.message.checkpoint_id == cid
        ]
        self.loop._execute([broadcast])
        return cid

    def complete(self, cid: int, *, other_reservation_first: bool = False) -> tuple:
        ahead = self.loop._reserved_ahead.get(cid)
        if ahead is not None:
            ahead.result(timeout=10)  # made while the subtasks snapshot and upload
        if other_reservation_first:  # e.g. a savepoint persisted in the meantime
            self.steps.reserve(cid + 1000)
        for subtask in range(2):
            self.h[subtask].ack(cid)
        self.loop._execute([PersistCheckpoint(_with_state_files(self.h.persist_requests[-1]))])
        event = self.loop.events.get(timeout=10)
        self.loop._handle(event)
        return event

    def close(self) -> None:
        self.loop._io.shutdown(wait=True)
        self.loop._fence_io.shutdown(wait=True)


def test_reserved_at_the_trigger_and_listed_once_per_attempt_the_metadata_write_is_all_that_is_left(builder):
    steps = _Steps()
    run = _Run(builder, steps)
    try:
        first = run.trigger()
        run.loop._reserved_ahead[first].result(timeout=10)
        assert steps.ended == [f"reserve {first}"], "reserved before any ACK"
        run.complete(first)
        second = run.trigger()
        run.complete(second)
    finally:
        run.close()
    assert [r.checkpoint_id for r in run.loop.outcome.completed] == [first, second]
    # one reservation per checkpoint, each before its write; the attempts' files listed once
    assert [e for e in steps.ended if e.startswith("reserve")] == [f"reserve {first}", f"reserve {second}"]
    assert steps.listed == [{"task-0-0.state", "task-1-0.state"}]
    first_ms, second_ms = (r.persist_ms for r in run.loop.outcome.completed)
    assert STEP_S * 1000 <= first_ms < 1.8 * STEP_S * 1000, first_ms  # the listing only
    assert second_ms < 0.5 * STEP_S * 1000, second_ms  # neither a listing nor a reservation


def test_a_new_attempt_s_files_are_listed_again(builder):
    steps = _Steps()
    run = _Run(builder, steps)
    try:
        run.complete(run.trigger())
        run.h[1].restart()
        run.complete(run.trigger())
    finally:
        run.close()
    assert steps.listed == [{"task-0-0.state", "task-1-0.state"}, {"task-1-1.state"}]


def test_a_reservation_made_ahead_is_made_again_when_another_came_after_it(builder):
    steps = _Steps()
    run = _Run(builder, steps)
    try:
        cid = run.trigger()
        event = run.complete(cid, other_reservation_first=True)
    finally:
        run.close()
    assert event[0] == "persisted"
    assert steps.ended.count(f"reserve {cid}") == 2
    assert steps.ended.index("write _metadata") > len(steps.ended) - 1 - steps.ended[::-1].index(f"reserve {cid}")


def test_no_reservation_ahead_while_another_checkpoint_is_unresolved(builder):
    steps = _Steps()
    run = _Run(builder, steps)
    try:
        cid = run.trigger()
        savepoint = TriggerBarrier(cid + 1, CheckpointKind.SAVEPOINT, 0)
        run.loop._execute([Broadcast(savepoint, targets=())])  # triggered while cid is in flight
        run.loop._reserved_ahead[cid].result(timeout=10)
        time.sleep(STEP_S * 1.5)
    finally:
        run.close()
    assert steps.ended == [f"reserve {cid}"]
