"""Drive a CheckpointCoordinator with a fake clock and fake subtasks (no I/O, no sleeps).

Plays the role Flink's CheckpointCoordinatorTestingUtils plays: a builder with sane
defaults, a clock the test moves by hand, and subtasks that are plain code sending the
messages a real subtask would. The Harness routes actions the way the driver adapter
will: SendToSubtask / Broadcast land in the inboxes of the named attempts only, and
everything returned is kept in ``log`` for assertions.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from airflow_provider_seatunnel_ckpt.engine.actions import (
    Action,
    Broadcast,
    DeleteCheckpointState,
    FailJob,
    JobFinished,
    PersistCheckpoint,
    ScheduleWakeup,
    SendToSubtask,
)
from airflow_provider_seatunnel_ckpt.engine.completed import CompletedCheckpoint, SubtaskSnapshot
from airflow_provider_seatunnel_ckpt.engine.coordinator import (
    DEFAULT_FAILOVER_TIMEOUT_MS,
    RECENT_IDS_KEPT,
    CheckpointCoordinator,
    CoordinatorSettings,
)
from airflow_provider_seatunnel_ckpt.engine.messages import (
    Ack,
    AckStats,
    CheckpointKind,
    CoordinatorMessage,
    Decline,
    NotifyComplete,
    RestoreState,
    StateHandle,
    TaskFailed,
    TriggerBarrier,
)
from airflow_provider_seatunnel_ckpt.engine.pending import AckResult
from airflow_provider_seatunnel_ckpt.errors import FailureReason


class FakeClock:
    """A mutable millisecond counter; the coordinator reads it, the test moves it."""

    def __init__(self, now: int = 0):
        self.now = now

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        assert ms >= 0
        self.now += ms


def state_of(subtask: int, checkpoint_id: int) -> bytes:
    return f"state of subtask {subtask} at checkpoint {checkpoint_id}".encode()


def commit_info_of(subtask: int, checkpoint_id: int) -> dict:
    return {"staged": [f"_staging/{checkpoint_id}/part-{subtask}.parquet"]}


class FakeSubtask:
    """One subtask attempt: sends messages, and receives what the coordinator addresses to it."""

    def __init__(self, harness: Harness, index: int, attempt: int = 0):
        self.harness = harness
        self.index = index
        self.attempt = attempt
        self.inbox: list[CoordinatorMessage] = []

    def __repr__(self) -> str:
        return f"<FakeSubtask {self.index}@{self.attempt}>"

    @property
    def coordinator(self) -> CheckpointCoordinator:
        return self.harness.coordinator

    def register(self) -> list[Action]:
        return self.harness.run(self.coordinator.on_register(self.index, self.attempt))

    def ack(self, checkpoint_id: int, data: bytes | None = None) -> AckResult:
        data = state_of(self.index, checkpoint_id) if data is None else data
        ack = Ack(
            checkpoint_id=checkpoint_id,
            subtask=self.index,
            attempt=self.attempt,
            state_handles=(StateHandle.of_bytes(data),),
            sink_commit_info=commit_info_of(self.index, checkpoint_id),
            stats=AckStats(sync_ms=1, async_ms=2, state_bytes=len(data), rows_since_last=10),
        )
        result, actions = self.coordinator.on_ack(ack)
        self.harness.run(actions)
        return result

    def decline(self, checkpoint_id: int, reason: str = "snapshot failed") -> list[Action]:
        decline = Decline(checkpoint_id, self.index, self.attempt, reason)
        return self.harness.run(self.coordinator.on_decline(decline))

    def end_of_input(self) -> list[Action]:
        return self.harness.run(self.coordinator.on_end_of_input(self.index, self.attempt))

    def fail(self, error: str = "executor lost", fatal: bool = False) -> list[Action]:
        return self.harness.run(self.coordinator.on_task_failed(TaskFailed(self.index, self.attempt, error, fatal)))

    def restart(self, register: bool = True) -> FakeSubtask:
        """Spark retries the task: a new attempt replaces this one (which becomes a zombie)."""
        new = FakeSubtask(self.harness, self.index, self.attempt + 1)
        self.harness.subtasks[self.index] = new
        if register:
            new.register()
        return new

    def received(self, message_type: type) -> list:
        return [m for m in self.inbox if isinstance(m, message_type)]

    @property
    def restore(self) -> RestoreState | None:
        restores = self.received(RestoreState)
        return restores[-1] if restores else None


class Harness:
    def __init__(self, coordinator: CheckpointCoordinator, clock: FakeClock):
        self.coordinator = coordinator
        self.clock = clock
        self.subtasks = [FakeSubtask(self, i) for i in range(coordinator.num_subtasks)]
        self.log: list[Action] = []

    def __getitem__(self, index: int) -> FakeSubtask:
        return self.subtasks[index]

    # --- routing --------------------------------------------------------------------------

    def run(self, actions: list[Action]) -> list[Action]:
        self.log.extend(actions)
        for action in actions:
            if isinstance(action, SendToSubtask):
                self._deliver(action.subtask, action.attempt, action.message)
            elif isinstance(action, Broadcast):
                for subtask, attempt in action.targets:
                    self._deliver(subtask, attempt, action.message)
        return actions

    def _deliver(self, subtask: int, attempt: int, message: CoordinatorMessage) -> None:
        target = self.subtasks[subtask]
        if target.attempt == attempt:  # a message for a superseded attempt is dropped
            target.inbox.append(message)

    # --- driving ----------------------------------------------------------------------------

    def start(self) -> Harness:
        for subtask in self.subtasks:
            subtask.register()
        return self

    def tick(self, advance: int = 0) -> list[Action]:
        self.clock.advance(advance)
        return self.run(self.coordinator.on_tick())

    def trigger(self) -> int:
        """Move the clock to the next trigger time and tick; return the new checkpoint id."""
        wakeup = self.coordinator.next_wakeup_ms()
        assert wakeup is not None, f"nothing scheduled: {self.coordinator.describe()}"
        self.clock.now = max(self.clock.now, wakeup)
        barriers = messages(self.tick(), TriggerBarrier)
        assert len(barriers) == 1, f"expected one trigger, got {barriers}"
        return barriers[0].checkpoint_id

    def ack_all(self, checkpoint_id: int, *, skip: tuple[int, ...] = ()) -> list[AckResult]:
        return [s.ack(checkpoint_id) for s in self.subtasks if s.index not in skip]

    def persisted(self, checkpoint_id: int) -> list[Action]:
        return self.run(self.coordinator.on_persisted(checkpoint_id))

    def persist_failed(self, checkpoint_id: int, error: str = "storage unavailable") -> list[Action]:
        return self.run(self.coordinator.on_persist_failed(checkpoint_id, error))

    def complete(self, checkpoint_id: int) -> list[Action]:
        self.ack_all(checkpoint_id)
        return self.persisted(checkpoint_id)

    def expire(self, checkpoint_id: int) -> list[Action]:
        """Let a pending checkpoint time out (nobody acks)."""
        trigger_ms = next(
            b.timestamp_ms for b in messages(self.log, TriggerBarrier) if b.checkpoint_id == checkpoint_id
        )
        self.clock.now = max(self.clock.now, trigger_ms + self.coordinator.settings.timeout_ms)
        return self.tick()

    # --- what happened --------------------------------------------------------------------

    @property
    def triggered(self) -> list[int]:
        return [b.checkpoint_id for b in messages(self.log, TriggerBarrier)]

    @property
    def persist_requests(self) -> list[CompletedCheckpoint]:
        return [a.checkpoint for a in of_type(self.log, PersistCheckpoint)]

    @property
    def notified(self) -> list[int]:
        return [m.checkpoint_id for m in messages(self.log, NotifyComplete)]

    @property
    def aborted(self) -> list[tuple[int, FailureReason]]:
        return [(a.checkpoint_id, a.reason) for a in of_type(self.log, DeleteCheckpointState)]

    @property
    def job_failures(self) -> list[str]:
        return [a.message for a in of_type(self.log, FailJob)]

    @property
    def finished(self) -> list[int]:
        return [a.checkpoint_id for a in of_type(self.log, JobFinished)]

    @property
    def wakeups(self) -> list[int]:
        return [a.at_ms for a in of_type(self.log, ScheduleWakeup)]


def of_type(actions: list[Action], action_type: type) -> list:
    return [a for a in actions if isinstance(a, action_type)]


def messages(actions: list[Action], message_type: type) -> list:
    """Messages of one type sent in ``actions``, by Broadcast or SendToSubtask."""
    return [
        a.message for a in actions if isinstance(a, (Broadcast, SendToSubtask)) and isinstance(a.message, message_type)
    ]


def make_completed(
    checkpoint_id: int, num_subtasks: int = 2, pipeline_id: int = 1, kind=CheckpointKind.CHECKPOINT
) -> CompletedCheckpoint:
    """A checkpoint as the adapter would read it back from storage, distinct per subtask."""
    return CompletedCheckpoint(
        pipeline_id=pipeline_id,
        checkpoint_id=checkpoint_id,
        kind=kind,
        trigger_ms=0,
        acked_ms=0,
        subtasks=tuple(
            SubtaskSnapshot(
                subtask=i,
                attempt=0,
                state_handles=(StateHandle.of_bytes(state_of(i, checkpoint_id)),),
                sink_commit_info=commit_info_of(i, checkpoint_id),
            )
            for i in range(num_subtasks)
        ),
    )


@dataclass(frozen=True)
class CoordinatorBuilder:
    """Defaults: 2 subtasks, 1 s interval, 10 s timeout, no min-pause, 1 concurrent, 0 tolerable."""

    num_subtasks: int = 2
    interval_ms: int = 1_000
    timeout_ms: int = 10_000
    min_pause_ms: int = 0
    max_concurrent: int = 1
    tolerable_failure: int = 0
    pipeline_id: int = 1
    restored: CompletedCheckpoint | None = None
    next_checkpoint_id: int | None = None
    recent_ids_kept: int = RECENT_IDS_KEPT
    start_ms: int = 0
    failover_timeout_ms: int = DEFAULT_FAILOVER_TIMEOUT_MS

    def with_(self, **changes) -> CoordinatorBuilder:
        return dataclasses.replace(self, **changes)

    def build(self) -> Harness:
        clock = FakeClock(self.start_ms)
        settings = CoordinatorSettings(
            interval_ms=self.interval_ms,
            timeout_ms=self.timeout_ms,
            min_pause_ms=self.min_pause_ms,
            max_concurrent=self.max_concurrent,
            tolerable_failure=self.tolerable_failure,
            failover_timeout_ms=self.failover_timeout_ms,
        )
        coordinator = CheckpointCoordinator(
            self.pipeline_id,
            self.num_subtasks,
            settings,
            clock,
            restored=self.restored,
            next_checkpoint_id=self.next_checkpoint_id,
            recent_ids_kept=self.recent_ids_kept,
        )
        return Harness(coordinator, clock)

    def started(self) -> Harness:
        return self.build().start()


class Unfenced:
    """A fence log nobody else writes to: every reservation and check passes."""

    attempt = 1

    def reserve(self, checkpoint_id: int, savepoint: bool = False) -> int:
        return 0

    def is_newest(self, seq: int) -> bool:
        return True

    def check(self, before: str = "") -> None:
        pass

    def require_claim(self) -> None:
        pass

    def taken_over(self) -> bool:
        return False

    def watch(self) -> bool:
        return self.taken_over()


class Documents:
    """The storage calls the driver's request polling makes, over a dict."""

    def __init__(self):
        self.docs: dict[str, dict] = {}

    def read_document(self, job_id, path):
        return self.docs.get(path)

    def delete_document(self, job_id, path):
        self.docs.pop(path, None)


class Store:
    """The completed-checkpoint store as the request polling sees it."""

    def __init__(self):
        self.storage = Documents()
        self.job_id = "job"


def driver_loop(harness, lines):
    """A DriverLoop over ``harness``'s coordinator, no sink, its progress lines in ``lines``."""
    from airflow_provider_seatunnel_ckpt.engine.driver import DriverLoop

    return DriverLoop(harness.coordinator, Store(), committer=None, fence=Unfenced(), progress=lines.append)
