"""Random interleavings of legitimate events never break the coordinator's guarantees.

The example tests pin each rule; this drives arbitrary orders of ticks, ACKs, declines,
restarts, end of input, savepoints and storage outcomes, and checks after every step
the properties exactly-once rests on.
"""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from airflow_provider_seatunnel_ckpt.engine.actions import SendToSubtask
from airflow_provider_seatunnel_ckpt.engine.coordinator import Lifecycle, SubtaskStatus
from airflow_provider_seatunnel_ckpt.engine.messages import CheckpointKind, RestoreState, TriggerBarrier
from airflow_provider_seatunnel_ckpt.engine.pending import AckResult, CheckpointState
from airflow_provider_seatunnel_ckpt.errors import CheckpointFailed

from .harness import CoordinatorBuilder, messages

N = 3
subtask_index = st.integers(min_value=0, max_value=N - 1)


class CoordinatorMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.h = CoordinatorBuilder(
            num_subtasks=N,
            interval_ms=100,
            timeout_ms=350,
            min_pause_ms=30,
            max_concurrent=2,
            tolerable_failure=3,
        ).started()
        self.persisted_ids: set[int] = set()
        self.seen = 0  # how much of the action log the restore invariant has checked

    @property
    def c(self):
        return self.h.coordinator

    def _ids_in(self, state: CheckpointState) -> list[int]:
        return [cid for cid, s in self.c.in_flight.items() if s is state]

    @rule(advance=st.integers(min_value=0, max_value=200))
    def tick(self, advance):
        actions = self.h.tick(advance)
        periodic = [b for b in messages(actions, TriggerBarrier) if b.kind is CheckpointKind.CHECKPOINT]
        if periodic:
            assert len(self.c.in_flight) <= self.c.settings.max_concurrent

    @rule(subtask=subtask_index, pick=st.integers(min_value=0, max_value=30))
    def ack(self, subtask, pick):
        pending = self._ids_in(CheckpointState.PENDING)
        cid = pending[pick % len(pending)] if pending and pick < 25 else pick
        result = self.h[subtask].ack(cid)
        if cid >= self.c.next_checkpoint_id:
            assert result is AckResult.UNKNOWN

    @precondition(lambda self: self._ids_in(CheckpointState.PENDING))
    @rule(pick=st.integers(min_value=0, max_value=10), order=st.permutations(range(N)))
    def every_subtask_acks(self, pick, order):
        pending = self._ids_in(CheckpointState.PENDING)
        cid = pending[pick % len(pending)]
        for subtask in order:
            self.h[subtask].ack(cid)

    @rule(subtask=subtask_index, pick=st.integers(min_value=0, max_value=10))
    def decline(self, subtask, pick):
        pending = self._ids_in(CheckpointState.PENDING)
        if pending:
            self.h[subtask].decline(pending[pick % len(pending)])

    @precondition(lambda self: self._ids_in(CheckpointState.PERSISTING))
    @rule(ok=st.booleans(), pick=st.integers(min_value=0, max_value=10))
    def storage_outcome(self, ok, pick):
        persisting = self._ids_in(CheckpointState.PERSISTING)
        cid = persisting[pick % len(persisting)]
        if ok:
            self.persisted_ids.add(cid)
            self.h.persisted(cid)
        else:
            self.h.persist_failed(cid)

    @rule(subtask=subtask_index)
    def restart(self, subtask):
        self.h[subtask].restart()

    @rule(subtask=subtask_index)
    def task_failed(self, subtask):
        self.h[subtask].fail()

    @rule(subtask=subtask_index)
    def end_of_input(self, subtask):
        if self.c.subtask_status(subtask)[0] is SubtaskStatus.RUNNING or self.c.lifecycle is not Lifecycle.ACTIVE:
            self.h[subtask].end_of_input()

    @rule(stop=st.booleans())
    def savepoint(self, stop):
        try:
            _, actions = self.c.stop_with_savepoint() if stop else self.c.trigger_savepoint()
        except CheckpointFailed:
            return
        self.h.run(actions)

    # --- invariants -----------------------------------------------------------------------

    @invariant()
    def ids_strictly_increase(self):
        triggered = self.h.triggered
        assert triggered == sorted(set(triggered))

    @invariant()
    def commit_only_after_durable(self):
        persist_requested = {c.checkpoint_id for c in self.h.persist_requests}
        for cid in self.h.notified:
            assert cid in persist_requested and cid in self.persisted_ids

    @invariant()
    def a_notified_checkpoint_is_never_deleted(self):
        deleted = {cid for cid, _ in self.h.aborted}
        assert not deleted & set(self.h.notified)

    @invariant()
    def the_job_ends_at_most_once(self):
        assert len(self.h.job_failures) + len(self.h.finished) <= 1

    @invariant()
    def restores_use_the_newest_durable_checkpoint_and_never_race_a_write(self):
        new, self.seen = self.h.log[self.seen :], len(self.h.log)
        restores = [a.message for a in new if isinstance(a, SendToSubtask) and isinstance(a.message, RestoreState)]
        if restores:
            assert CheckpointState.PERSISTING not in self.c.in_flight.values()
            latest = self.c.latest_completed
            expected = latest.checkpoint_id if latest else None
            assert all(r.checkpoint_id == expected for r in restores)

    @invariant()
    def failures_stay_within_tolerance_while_active(self):
        if self.c.lifecycle is Lifecycle.ACTIVE:
            assert self.c.consecutive_failures <= self.c.settings.tolerable_failure


CoordinatorMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)
TestCoordinatorMachine = CoordinatorMachine.TestCase
