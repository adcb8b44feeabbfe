"""How the driver completes a checkpoint in storage (engine/driver.py ``_persist``): the
fence reservation runs beside the state-file check and both precede the ``_metadata``
write; retention comes after the checkpoint is reported complete (queued behind its
commit on the storage worker), and a failing retention does not undo a completed checkpoint."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from airflow_provider_seatunnel_ckpt.engine.completed_store import CompletedCheckpointStore, wall_ms
from airflow_provider_seatunnel_ckpt.engine.driver import DriverLoop
from airflow_provider_seatunnel_ckpt.engine.fencing import Fenced

STEP_S = 0.25


class _Steps:
    """Storage and fence log in one: each step takes STEP_S and is recorded as it ends."""

    def __init__(self, fenced: bool = False, retention_fails: bool = False):
        self.fenced = fenced
        self.retention_fails = retention_fails
        self.ended: list[str] = []
        self._lock = threading.Lock()

    def _end(self, step: str) -> None:
        with self._lock:
            self.ended.append(step)

    # the fence log
    def reserve(self, checkpoint_id: int, savepoint: bool = False) -> None:
        time.sleep(STEP_S)
        if self.fenced:
            raise Fenced("job j was taken over by another driver (attempt 2)")
        self._end("reserve")

    def check(self, before: str = "") -> None:
        pass

    # the storage
    def complete_checkpoint(self, manifest, written=(), *, before_write=None, retention=True):
        assert retention is False, "the driver applies retention itself, later"
        time.sleep(STEP_S)  # the state-file listing
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


def _complete_one(builder, steps: _Steps) -> tuple[DriverLoop, list[str], tuple]:
    h = builder.with_(num_subtasks=2).started()
    cid = h.trigger()
    for subtask in range(2):
        h[subtask].ack(cid)
    [checkpoint] = h.persist_requests
    lines: list[str] = []
    loop = DriverLoop(h.coordinator, CompletedCheckpointStore(steps, "job", 1), _Committer(),
                      fence=steps, progress=lambda line: (lines.append(line), steps._end("reported complete")))
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
    assert steps.ended.index("write _metadata") > max(steps.ended.index("reserve"), steps.ended.index("check state files"))
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
