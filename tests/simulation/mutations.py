"""The defects of issue 30, those of issue 47 (sink identity, split plans across attempts,
what a driver taken over writes, delete-on-finish), and the ones the simulation found
while it was built, reintroduced one at a time, to show the simulation finds each.

``python -m tests.simulation.mutations`` prints a table: mutation -> the first seed whose
run breaks an invariant, how many seeds that took, and what broke. The test suite runs
the same search (tests/simulation/test_simulation.py) with a seed budget.

Each mutation puts the old behaviour back by patching the real code for the duration of
a ``with`` block; nothing here is used outside the simulation.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from unittest import mock

from airflow_provider_seatunnel_ckpt.connectors.file.sink import FileSinkCommitter
from airflow_provider_seatunnel_ckpt.engine import coordinator as coordinator_module
from airflow_provider_seatunnel_ckpt.engine import runner as runner_module
from airflow_provider_seatunnel_ckpt.engine.actions import ScheduleWakeup
from airflow_provider_seatunnel_ckpt.engine.coordinator import CheckpointCoordinator
from airflow_provider_seatunnel_ckpt.engine.driver import DriverLoop
from airflow_provider_seatunnel_ckpt.engine.fencing import FenceLog, record_name
from airflow_provider_seatunnel_ckpt.engine.messages import Decline
from airflow_provider_seatunnel_ckpt.engine.runner import PIPELINE_ID, JobRun
from airflow_provider_seatunnel_ckpt.engine.split_enumerator import SplitEnumerator
from airflow_provider_seatunnel_ckpt.engine.split_plan import plan_entries, store_plan
from airflow_provider_seatunnel_ckpt.engine.subtask import SubtaskRuntime
from airflow_provider_seatunnel_ckpt.history import HistoryRecorder
from airflow_provider_seatunnel_ckpt.storage.fs_storage import FileSystemCheckpointStorage
from airflow_provider_seatunnel_ckpt.storage.layout import Layout

from .world import SubtaskSink, Violation, simulate


@dataclass(frozen=True)
class Mutation:
    name: str
    defect: str
    patch: Callable[[], contextlib.AbstractContextManager[Any]]


# ---- 1: a zombie driver's side effects ----------------------------------------------------------
def _zombie_deletes() -> contextlib.AbstractContextManager[Any]:
    def delete_aborted(self: DriverLoop, checkpoint_id: int, savepoint: bool = False) -> None:
        try:  # as before the fix: the whole directory, fenced or not
            self.store.storage.delete_checkpoint_dir(
                self.store.job_id, self.store.pipeline_id, checkpoint_id, savepoint
            )
        except Exception:
            pass

    return mock.patch.object(DriverLoop, "_delete_aborted", delete_aborted)


def _state_names_without_run() -> contextlib.AbstractContextManager[Any]:
    return mock.patch.object(
        Layout, "task_state_name", staticmethod(lambda subtask, attempt, run: f"task-{subtask}-{attempt}.state")
    )


def _finished_zombie_cleans_up() -> contextlib.AbstractContextManager[Any]:
    return mock.patch.object(JobRun, "_fenced", lambda self: False)


# ---- 2: a failed subtask that never comes back ------------------------------------------------
def _no_failover_timeout() -> contextlib.AbstractContextManager[Any]:
    # a fresh dict on every read: the coordinator never remembers when a subtask failed
    return mock.patch.object(
        CheckpointCoordinator, "_failed_at", property(lambda self: {}, lambda self, value: None), create=True
    )


# ---- 3: restore discards, then the sink refuses -------------------------------------------------
def _discard_then_refuse() -> contextlib.AbstractContextManager[Any]:
    def restore_output(self: JobRun, committer: Any, restored_infos: list[Any]) -> None:
        restored_id = self.restored_id or 0
        entries = [e for e in self.storage.list_checkpoint_entries(self.request.job_id, PIPELINE_ID) if not e.fenced]
        for entry in [e for e in entries if e.checkpoint_id > restored_id]:
            self.storage.delete_checkpoint_dir(self.request.job_id, PIPELINE_ID, entry.checkpoint_id, entry.savepoint)
        if restored_infos:
            committer.commit(restored_infos)
        committer.rollback(restored_id)  # the sink refuses only here, after the deletion
        committer.cleanup(restored_infos)

    return mock.patch.object(JobRun, "_restore_output", restore_output)


# ---- 4: a synchronous checkpoint failure counted as a decline --------------------------------------
def _sync_failure_declines() -> contextlib.AbstractContextManager[Any]:
    original = SubtaskRuntime._complete_barrier

    def complete_barrier(self: SubtaskRuntime, barrier: Any, *args: Any) -> None:
        self._declining = barrier.checkpoint_id  # type: ignore[attr-defined]
        original(self, barrier, *args)

    def fail_task(self: SubtaskRuntime, error: BaseException) -> None:
        self._fatal = error
        self._send(Decline(self._declining, self.subtask, self.attempt, f"sink pre-commit failed: {error}"))  # type: ignore[attr-defined]

    stack = contextlib.ExitStack()
    stack.enter_context(mock.patch.object(SubtaskRuntime, "_complete_barrier", complete_barrier))
    stack.enter_context(mock.patch.object(SubtaskRuntime, "_fail_task", fail_task))
    return stack


# ---- 5: --discard-existing means different things -----------------------------------------------
def _discard_deletes_committed_output() -> contextlib.AbstractContextManager[Any]:
    # as before: the File sink rolled its committed part files back to the start
    stack = contextlib.ExitStack()
    stack.enter_context(
        mock.patch.object(FileSinkCommitter, "discard_job", lambda self: FileSinkCommitter.rollback(self, 0))
    )
    stack.enter_context(mock.patch.object(FileSinkCommitter, "_read_discarded", lambda self: 0))
    return stack


def _discard_not_marked() -> contextlib.AbstractContextManager[Any]:
    def discard(self: JobRun, existing: Any) -> None:  # as before: no mark, so a crash halfway is not finished
        entries = self.storage.list_checkpoint_entries(self.request.job_id, PIPELINE_ID)
        self.storage.delete_checkpoint_dirs(self.request.job_id, PIPELINE_ID, [e for e in entries if not e.fenced])
        self.discarded = True

    return mock.patch.object(JobRun, "_discard", discard)


# ---- 6: the reconnect race of a transactional sink ---------------------------------------------
def _no_release_at_restart() -> contextlib.AbstractContextManager[Any]:
    # as before the fix: only the driver's discard_orphans, when the subtask registers
    # again, releases what it left prepared; a PREPARE landing after that stays
    return mock.patch.object(SubtaskSink, "release_stale", lambda self, after_checkpoint_id: None)


# ---- 7: aborted savepoints -------------------------------------------------------------------
def _savepoint_kind_dropped() -> contextlib.AbstractContextManager[Any]:
    original = DriverLoop._delete_aborted
    return mock.patch.object(
        DriverLoop, "_delete_aborted", lambda self, checkpoint_id, savepoint=False: original(self, checkpoint_id, False)
    )


# ---- 8: the driver loop spinning ------------------------------------------------------------------
def _stale_wakeup() -> contextlib.AbstractContextManager[Any]:
    def with_wakeup(self: CheckpointCoordinator, actions: list[Any]) -> list[Any]:
        at = self.next_wakeup_ms()
        if at is not None and at != self._last_wakeup:  # as before: "nothing due" was never said
            self._last_wakeup = at
            actions.append(ScheduleWakeup(at))
        return actions

    return mock.patch.object(coordinator_module.CheckpointCoordinator, "_with_wakeup", with_wakeup)


# ---- issue 47, defect 5: sinks matched to their output by place ------------------------------------------
def _sinks_matched_by_place() -> contextlib.AbstractContextManager[Any]:
    # as before: the restored commit infos as stored, each part to the sink at its place
    return mock.patch.object(runner_module, "restored_for_sinks", lambda manifest, *args, **kwargs: manifest)


def _non_restored_output_dropped() -> contextlib.AbstractContextManager[Any]:
    # output of a sink the job no longer has dropped as if --allow-non-restored-state were given
    original = runner_module.restored_for_sinks
    return mock.patch.object(
        runner_module,
        "restored_for_sinks",
        lambda manifest, sink, allow, progress: original(manifest, sink, True, progress),
    )


# ---- found by the simulation while it was built ------------------------------------------------------
def _ack_after_failed_precommit() -> contextlib.AbstractContextManager[Any]:
    original = SubtaskRuntime._complete_barrier

    def complete_barrier(self: SubtaskRuntime, *args: Any) -> None:
        failing, self._fatal = self._fatal, None  # as before: a later barrier still acknowledged
        try:
            original(self, *args)
        finally:
            self._fatal = self._fatal or failing

    return mock.patch.object(SubtaskRuntime, "_complete_barrier", complete_barrier)


def _lost_metadata_answer_keeps_metadata() -> contextlib.AbstractContextManager[Any]:
    # the abort's delete of its own landed _metadata, where the driver's read-back cannot
    # tell (a failed read): the read-back is off here, or the seeds would seldom reach it
    stack = contextlib.ExitStack()
    stack.enter_context(mock.patch.object(FileSystemCheckpointStorage, "_written_by", lambda self, *args: False))
    stack.enter_context(_lost_answer_not_read_back())
    return stack


def _lost_answer_not_read_back() -> contextlib.AbstractContextManager[Any]:
    # as before: a _metadata write that raised is aborted without looking whether it
    # landed; a restarted subtask releases the output that landed _metadata names
    return mock.patch.object(DriverLoop, "_landed_at", lambda self, manifest: None)


# ---- issue 47: plans across attempts, and what a driver taken over writes -------------------------
def _rerun_makes_a_new_plan() -> contextlib.AbstractContextManager[Any]:
    # as before: with nothing restored the source was asked again (Kafka's latest moved on)
    return mock.patch.object(JobRun, "_earlier_plan", lambda self, fingerprint: None)


def _plan_stored_unfenced() -> contextlib.AbstractContextManager[Any]:
    def store(self: JobRun, splits: Any, fingerprint: str) -> dict[str, Any]:
        # as before: the plan was written (and earlier ones pruned) unchecked
        ref = store_plan(self.storage, self.request.job_id, self.attempt_number, plan_entries(splits), fingerprint)
        self._prune_plans()
        return ref

    return mock.patch.object(JobRun, "_store_plan", store)


def _history_written_unfenced() -> contextlib.AbstractContextManager[Any]:
    return mock.patch.object(HistoryRecorder, "_lost_the_job", lambda self: False)


def _finished_job_kept() -> contextlib.AbstractContextManager[Any]:
    # as before: delete-on-finish deleted the checkpoints only (plans, history, records stayed)
    return mock.patch.object(JobRun, "_forget_job", lambda self: None)


# ---- 51.3: a fence log that stays small -----------------------------------------------------------
def _fence_log_never_compacted() -> contextlib.AbstractContextManager[Any]:
    # as before: a claimant deleted the dead reservations only; every claim stayed
    def compact(self: FenceLog, seqs: list[int]) -> None:
        self._compact_below = 0

    return mock.patch.object(FenceLog, "_compact", compact)


def _compaction_deletes_the_claim() -> contextlib.AbstractContextManager[Any]:
    # the floor goes too: the next claimant starts over at a number already used
    original = FenceLog._compact

    def compact(self: FenceLog, seqs: list[int]) -> None:
        original(self, seqs)
        self.storage.delete_document(self.job_id, record_name(self._claim_seq))

    return mock.patch.object(FenceLog, "_compact", compact)


def _zombie_ignores_its_claim_gone() -> contextlib.AbstractContextManager[Any]:
    # as before: only a job with delete-on-finish read its own claim, so a zombie whose
    # next number was compacted creates it and goes on
    original = FenceLog._claim_gone
    return mock.patch.object(FenceLog, "_claim_gone", lambda self: self.deletable and original(self))


def _restart_gives_back_its_checkpoints_splits() -> contextlib.AbstractContextManager[Any]:
    # a restarted subtask gives back every split dealt to it, those its restored state
    # holds too: each of those is then dealt twice (read again by the subtask, and by
    # whoever gets it from the pool)
    original = SplitEnumerator.restored

    def restored(self: SplitEnumerator, subtask: int, attempt: int, checkpoint_id: int | None) -> Any:
        return original(self, subtask, attempt, None)

    def completed(self: SplitEnumerator, checkpoint_id: int) -> None:
        for cid in [cid for cid in self._at_barrier if cid <= checkpoint_id]:
            del self._at_barrier[cid]  # the pool snapshots go; every assignment stays logged

    stack = contextlib.ExitStack()
    stack.enter_context(mock.patch.object(SplitEnumerator, "restored", restored))
    stack.enter_context(mock.patch.object(SplitEnumerator, "completed", completed))
    return stack


def _barrier_books_no_dealt_split() -> contextlib.AbstractContextManager[Any]:
    # a barrier's state names only the dealt splits the read loop took already, not all
    # those dealt before it: one the pool no longer holds is in no state
    return mock.patch.object(SubtaskRuntime, "_book_assigned", _book_only_when_read)


def _book_only_when_read(self: SubtaskRuntime, upto: int | None = None) -> None:
    if upto is None:
        SubtaskRuntime_book_assigned(self, None)


SubtaskRuntime_book_assigned = SubtaskRuntime._book_assigned


def _booked_past_a_waiting_barrier() -> contextlib.AbstractContextManager[Any]:
    # the read loop books every split dealt so far, those sent after a barrier it has not
    # taken yet too: that barrier's state names them while its pool still holds them
    return mock.patch.object(SubtaskRuntime, "_book_assigned", _book_ignoring_waiting_barriers)


def _book_ignoring_waiting_barriers(self: SubtaskRuntime, upto: int | None = None) -> None:
    waiting = list(self._barriers)  # the simulation's one thread: no race here
    self._barriers.clear()
    try:
        SubtaskRuntime_book_assigned(self, upto)
    finally:
        self._barriers.extendleft(reversed(waiting))


def _dealt_before_the_first_barrier_counts_as_checkpointed() -> contextlib.AbstractContextManager[Any]:
    # tags start at 0 whatever checkpoint the run restored: a restart from it keeps what
    # was dealt before this run's first barrier as if that checkpoint held it
    original = SplitEnumerator.__init__

    def init(self: SplitEnumerator, *args: Any, **kwargs: Any) -> None:
        kwargs["restored_id"] = None
        original(self, *args, **kwargs)

    return mock.patch.object(SplitEnumerator, "__init__", init)


@contextlib.contextmanager
def _in_flight_batch_written_before_its_cut() -> Iterator[None]:
    # the writer looked up when the batch is read, not when it is written: a barrier taken
    # in flight puts the cut before the batch, yet the batch goes to the epoch before it
    # (committed with a checkpoint whose positions read it again)
    real_open, real_write = SubtaskRuntime._open_window, SubtaskRuntime._write_batch

    def open_window(self: SubtaskRuntime) -> bool:
        self._writer_at_read = self._writer  # type: ignore[attr-defined]
        return real_open(self)

    def write_batch(self: SubtaskRuntime, routed: Any, state: Any, position: Any) -> None:
        current = self._writer
        self._writer = getattr(self, "_writer_at_read", current)
        try:
            real_write(self, routed, state, position)
        finally:
            self._writer = current

    with (
        mock.patch.object(SubtaskRuntime, "_open_window", open_window),
        mock.patch.object(SubtaskRuntime, "_write_batch", write_batch),
    ):
        yield


MUTATIONS = (
    Mutation("zombie-deletes-aborted-checkpoint", "1", _zombie_deletes),
    Mutation("state-file-names-without-run", "1", _state_names_without_run),
    Mutation("finished-zombie-cleans-up-sink", "1 (found by the simulation)", _finished_zombie_cleans_up),
    Mutation("no-failover-timeout", "2", _no_failover_timeout),
    Mutation("discard-newer-before-sink-refuses", "3", _discard_then_refuse),
    Mutation("sync-failure-declines", "4", _sync_failure_declines),
    Mutation("discard-deletes-committed-output", "5", _discard_deletes_committed_output),
    Mutation("discard-not-marked", "5 (crash halfway)", _discard_not_marked),
    Mutation("no-release-of-prepared-work-at-restart", "6", _no_release_at_restart),
    Mutation("aborted-savepoint-deleted-as-checkpoint", "7", _savepoint_kind_dropped),
    Mutation("stale-wakeup-spins", "8", _stale_wakeup),
    Mutation("sink-output-matched-by-place", "47.5 (sink identity)", _sinks_matched_by_place),
    Mutation("removed-sink-output-dropped-silently", "47.5 (sink identity)", _non_restored_output_dropped),
    Mutation("ack-after-failed-precommit", "found by the simulation", _ack_after_failed_precommit),
    Mutation("lost-metadata-answer-keeps-metadata", "found by the simulation", _lost_metadata_answer_keeps_metadata),
    Mutation("lost-answer-aborted-without-reading-back", "found by the simulation", _lost_answer_not_read_back),
    Mutation("rerun-without-checkpoint-makes-a-new-plan", "47.1", _rerun_makes_a_new_plan),
    Mutation("taken-over-driver-stores-its-plan", "47.6", _plan_stored_unfenced),
    Mutation("taken-over-driver-writes-history", "47.6", _history_written_unfenced),
    Mutation("delete-on-finish-keeps-the-job", "47.6", _finished_job_kept),
    Mutation("fence-log-never-compacted", "51.3", _fence_log_never_compacted),
    Mutation("compaction-deletes-the-claim", "51.3", _compaction_deletes_the_claim),
    Mutation("zombie-ignores-its-claim-gone", "51.3", _zombie_ignores_its_claim_gone),
    Mutation("restart-deals-its-checkpointed-splits-twice", "51.1", _restart_gives_back_its_checkpoints_splits),
    Mutation("barrier-state-misses-dealt-splits", "51.1 (found by the simulation)", _barrier_books_no_dealt_split),
    Mutation("assignments-after-a-waiting-barrier-booked", "51.1 (a CI run)", _booked_past_a_waiting_barrier),
    Mutation(
        "first-barrier-tag-ignores-the-restore",
        "51.1 (found by the simulation)",
        _dealt_before_the_first_barrier_counts_as_checkpointed,
    ),
    Mutation("in-flight-batch-written-before-its-cut", "51.4", _in_flight_batch_written_before_its_cut),
)


def first_failing_seed(mutation: Mutation, seeds: range) -> tuple[int | None, str]:
    """The first seed in ``seeds`` whose run breaks an invariant with ``mutation`` in place
    and keeps every one without it: a seed that fails on the code as it is (a profile too
    harsh to finish in its runs) finds nothing about the mutation."""
    for seed in seeds:
        with mutation.patch():
            found = _violation(seed)
        if found is not None and _violation(seed) is None:
            return seed, found
    return None, ""


def _violation(seed: int) -> str | None:
    """The first line of what breaks in ``seed``'s run, or None."""
    try:
        simulate(seed)
    except Violation as err:
        return str(err).splitlines()[0]
    except Exception as err:  # a crash is a finding too
        return f"{type(err).__name__}: {err}".splitlines()[0]
    return None


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    import logging

    logging.disable(logging.CRITICAL)
    try:
        yield
    finally:
        logging.disable(logging.NOTSET)


def main(budget: int = 5_000) -> int:
    print("| mutation | defect | first failing seed | seconds | what broke |")
    print("| --- | --- | --- | --- | --- |")
    missed = 0
    with _quiet():
        for mutation in MUTATIONS:
            started = time.perf_counter()
            seed, what = first_failing_seed(mutation, range(budget))
            took = time.perf_counter() - started
            missed += seed is None
            found = str(seed) if seed is not None else f"not found in {budget} seeds"
            print(f"| {mutation.name} | {mutation.defect} | {found} | {took:.1f} | {what[:160]} |", flush=True)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5_000))
