"""The checkpoint coordinator's decisions for one pipeline, with no I/O (h11 style).

Every decision (trigger, ACK, decline, expire, subsume, complete, count a failure)
depends only on the coordinator's state, the incoming event and the time the injected
clock reports. So it takes events as method calls and returns actions
(``engine.actions``) for the driver adapter to carry out: no sockets, threads,
``time.time()``, sleeps or storage calls here. Tests replay any interleaving exactly.

Two-phase commit ordering, the property everything else protects: sinks are told to
commit (NotifyComplete) only after the adapter reports the checkpoint's ``_metadata``
as durable (``on_persisted``), never when the last ACK arrives.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import CheckpointFailed, FailureReason, ProtocolError
from .actions import (
    Action,
    Broadcast,
    DeleteCheckpointState,
    FailJob,
    JobFinished,
    PersistCheckpoint,
    ScheduleWakeup,
    SendToSubtask,
)
from .completed import CompletedCheckpoint
from .failure_manager import CheckpointFailureManager
from .id_counter import FIRST_CHECKPOINT_ID, CheckpointIdCounter
from .messages import (
    AbortCheckpoint,
    Ack,
    CheckpointKind,
    Decline,
    EndOfInput,
    Message,
    NotifyComplete,
    Register,
    RestoreState,
    TaskFailed,
    TriggerBarrier,
)
from .pending import AckResult, CheckpointState, PendingCheckpoint

# How many finished ids to remember to tell a late message (DISCARDED) from an invalid
# one (UNKNOWN); Flink keeps the same number of such "ghost" ids.
RECENT_IDS_KEPT = 16
#: How long a failed subtask may go without a new attempt registering before the job
#: fails. Spark retries a failed task at once; it takes long only when the executor is
#: lost (Spark notices after spark.network.timeout, 120 s by default) or when the task
#: neither runs nor ends (a worker frozen with its channel gone). Without a bound nothing
#: would ever time out: no checkpoint is triggered while a subtask is not running.
DEFAULT_FAILOVER_TIMEOUT_MS = 300_000


@dataclass(frozen=True, slots=True)
class CoordinatorSettings:
    """The checkpoint settings the coordinator enforces, in milliseconds.

    Validated again here (the config layer gives users the friendly error) because a
    zero interval or timeout would make the coordinator spin or expire everything.
    """

    interval_ms: int
    timeout_ms: int
    min_pause_ms: int = 0
    max_concurrent: int = 1
    tolerable_failure: int = 0
    failover_timeout_ms: int = DEFAULT_FAILOVER_TIMEOUT_MS

    def __post_init__(self) -> None:
        for name, low in (
            ("interval_ms", 1),
            ("timeout_ms", 1),
            ("min_pause_ms", 0),
            ("max_concurrent", 1),
            ("tolerable_failure", 0),
            ("failover_timeout_ms", 1),
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ValueError(f"checkpoint setting {name} must be an integer >= {low}, got {value!r}")


class SubtaskStatus(enum.Enum):
    ABSENT = "absent"  # no attempt registered yet
    RESTORING = "restoring"  # registered; RestoreState waits until no checkpoint is persisting
    RUNNING = "running"
    END_OF_INPUT = "end of input"  # source exhausted; still answers barriers
    FAILED = "failed"  # reported TaskFailed; waits for its next attempt


class Lifecycle(enum.Enum):
    ACTIVE = "active"
    FINISHED = "finished"
    FAILED = "failed"
    SHUT_DOWN = "shut down"


_LIVE = (SubtaskStatus.RUNNING, SubtaskStatus.END_OF_INPUT)


class CheckpointCoordinator:
    """Triggers checkpoints of one pipeline and decides when each is complete or aborted.

    ``clock`` returns milliseconds; only differences matter. ``restored`` is the latest
    completed checkpoint the adapter found in storage (None for a fresh run), and
    ``next_checkpoint_id`` is the highest id found in storage + 1, so ids are never
    reused across runs (aborted leftovers may be newer than ``restored``).
    """

    def __init__(
        self,
        pipeline_id: int,
        num_subtasks: int,
        settings: CoordinatorSettings,
        clock: Callable[[], int],
        *,
        restored: CompletedCheckpoint | None = None,
        next_checkpoint_id: int | None = None,
        recent_ids_kept: int = RECENT_IDS_KEPT,
    ):
        if not isinstance(num_subtasks, int) or isinstance(num_subtasks, bool) or num_subtasks < 1:
            raise ValueError(f"num_subtasks must be an integer >= 1, got {num_subtasks!r}")
        floor = FIRST_CHECKPOINT_ID
        if restored is not None:
            if restored.pipeline_id != pipeline_id:
                raise ValueError(
                    f"restored checkpoint {restored.checkpoint_id} belongs to pipeline "
                    f"{restored.pipeline_id}, not {pipeline_id}"
                )
            if restored.num_subtasks != num_subtasks:
                raise ValueError(
                    f"restored checkpoint {restored.checkpoint_id} has {restored.num_subtasks} "
                    f"subtasks but the pipeline runs {num_subtasks}; changing parallelism on "
                    "restore is not supported"
                )
            floor = restored.checkpoint_id + 1
        if next_checkpoint_id is None:
            next_checkpoint_id = floor
        elif next_checkpoint_id < floor:
            raise ValueError(
                f"next_checkpoint_id {next_checkpoint_id} would reuse ids: the restored checkpoint is {floor - 1}"
            )
        self.pipeline_id = pipeline_id
        self.num_subtasks = num_subtasks
        self.settings = settings
        self._clock = clock
        self._ids = CheckpointIdCounter()
        self._ids.start(next_checkpoint_id)
        self._failures = CheckpointFailureManager(settings.tolerable_failure, self._failures_exceeded)
        self._exceeded_message: str | None = None
        self._attempts: list[int | None] = [None] * num_subtasks
        self._status = [SubtaskStatus.ABSENT] * num_subtasks
        #: subtask -> (when it failed, why), until its next attempt registers
        self._failed_at: dict[int, tuple[int, str]] = {}
        self._pending: dict[int, PendingCheckpoint] = {}
        self._recent: deque[int] = deque(maxlen=recent_ids_kept)
        self._latest = restored
        self._lifecycle = Lifecycle.ACTIVE
        self._last_trigger_ms = clock()  # the first periodic checkpoint comes one interval in
        self._last_completion_ms: int | None = None
        self._final_id: int | None = None
        self._stop_id: int | None = None
        self._last_wakeup: int | None = None

    # --- queries ------------------------------------------------------------------------

    @property
    def next_checkpoint_id(self) -> int:
        """The id the next checkpoint or savepoint will get."""
        return self._ids.get()

    @property
    def lifecycle(self) -> Lifecycle:
        return self._lifecycle

    @property
    def latest_completed(self) -> CompletedCheckpoint | None:
        return self._latest

    @property
    def in_flight(self) -> dict[int, CheckpointState]:
        return {cid: p.state for cid, p in sorted(self._pending.items())}

    @property
    def consecutive_failures(self) -> int:
        return self._failures.consecutive_failures

    @property
    def tolerable_failures(self) -> int:
        return self._failures.tolerable_failures

    def progress(self) -> list[tuple[int, CheckpointKind, CheckpointState, int, int]]:
        """Each checkpoint in flight, oldest first: (id, kind, state, subtasks that
        acknowledged, subtasks), for the person on call (heartbeat.py carries it)."""
        return [
            (cid, p.kind, p.state, self.num_subtasks - len(p.not_yet_acknowledged), self.num_subtasks)
            for cid, p in sorted(self._pending.items())
        ]

    def subtask_status(self, subtask: int) -> tuple[SubtaskStatus, int | None]:
        return self._status[subtask], self._attempts[subtask]

    def next_wakeup_ms(self) -> int | None:
        """The next time ``on_tick`` has something to do, or None if only events matter."""
        if self._lifecycle is not Lifecycle.ACTIVE:
            return None
        times = [
            p.trigger_ms + self.settings.timeout_ms
            for p in self._pending.values()
            if p.state is CheckpointState.PENDING
        ]
        times.extend(at + self.settings.failover_timeout_ms for at, _ in self._failed_at.values())
        trigger_at = self._next_trigger_ms()
        if trigger_at is not None:
            times.append(trigger_at)
        return min(times, default=None)

    def describe(self) -> str:
        subtasks = ", ".join(
            f"{i}:{s.value}" + (f"@{a}" if a is not None else "")
            for i, (s, a) in enumerate(zip(self._status, self._attempts))
        )
        in_flight = ", ".join(f"{p!r}" for _, p in sorted(self._pending.items())) or "none"
        latest = self._latest.checkpoint_id if self._latest else None
        return (
            f"pipeline {self.pipeline_id} {self._lifecycle.value}; subtasks [{subtasks}]; "
            f"in flight [{in_flight}]; latest completed {latest}"
        )

    # --- events from subtasks -----------------------------------------------------------

    def on_message(self, message: Message) -> list[Action]:
        """Dispatch a decoded subtask message (the ACK outcome is dropped; see on_ack)."""
        match message:
            case Register():
                return self.on_register(message.subtask, message.attempt)
            case Ack():
                return self.on_ack(message)[1]
            case Decline():
                return self.on_decline(message)
            case EndOfInput():
                return self.on_end_of_input(message.subtask, message.attempt)
            case TaskFailed():
                return self.on_task_failed(message)
        raise ProtocolError(f"{type(message).__name__} is not a message a subtask may send")

    def on_register(self, subtask: int, attempt: int) -> list[Action]:
        Register(subtask, attempt)  # validates the types
        self._check_index("register", subtask, None)
        current = self._attempts[subtask]
        if current is not None and attempt < current:
            return []  # a superseded attempt
        self._attempts[subtask] = attempt
        self._status[subtask] = SubtaskStatus.RESTORING
        self._failed_at.pop(subtask, None)
        if self._lifecycle is not Lifecycle.ACTIVE:
            return []  # recorded, so its later messages are recognised, but the job is over
        actions: list[Action] = []
        # The new attempt restarts from the latest completed checkpoint, so it will
        # never see the barriers of checkpoints pending now: its position before them
        # is lost, and they could only complete by mixing state from before and after
        # the restart. Abort them; a task failure says nothing about checkpoint health,
        # so TASK_FAILURE does not count. Persisting ones are left alone: all their
        # ACKs are in and their write may land (see pending.py).
        self._abort_all_pending(FailureReason.TASK_FAILURE, f"subtask {subtask} started attempt {attempt}", actions)
        self._release_restores(actions)
        return self._with_wakeup(actions)

    def on_ack(self, ack: Ack) -> tuple[AckResult, list[Action]]:
        if not self._is_current("ack", ack.subtask, ack.attempt, ack.checkpoint_id):
            return AckResult.DISCARDED, []
        pending = self._pending.get(ack.checkpoint_id)
        if pending is None:
            late = ack.checkpoint_id in self._recent
            return (AckResult.DISCARDED if late else AckResult.UNKNOWN), []
        result = pending.acknowledge(ack, self._clock())
        actions: list[Action] = []
        if result is AckResult.SUCCESS and pending.is_fully_acknowledged:
            # Not complete yet: complete means durable, which only the adapter can see.
            actions.append(PersistCheckpoint(pending.start_persisting()))
        return result, self._with_wakeup(actions)

    def on_decline(self, decline: Decline) -> list[Action]:
        if not self._is_current("decline", decline.subtask, decline.attempt, decline.checkpoint_id):
            return []
        pending = self._pending.get(decline.checkpoint_id)
        if pending is None or pending.state is not CheckpointState.PENDING:
            return []  # late, or already fully acked and being persisted
        actions: list[Action] = []
        detail = f"subtask {decline.subtask} attempt {decline.attempt}: {decline.reason}"
        self._abort(pending, FailureReason.DECLINED, detail, actions)
        return self._with_wakeup(actions)

    def on_end_of_input(self, subtask: int, attempt: int) -> list[Action]:
        EndOfInput(subtask, attempt)  # validates the types
        if not self._is_current("end_of_input", subtask, attempt, None):
            return []
        status = self._status[subtask]
        if self._lifecycle is not Lifecycle.ACTIVE or status is SubtaskStatus.END_OF_INPUT:
            return []
        if status is not SubtaskStatus.RUNNING:
            raise self._protocol_error("end_of_input", None, f"subtask {subtask} is {status.value}")
        self._status[subtask] = SubtaskStatus.END_OF_INPUT
        actions: list[Action] = []
        if self._all_end_of_input() and self._final_id is None:
            # Without it the output after the last periodic checkpoint would never be
            # committed, so it does not wait for min-pause or a free concurrency slot.
            self._trigger(CheckpointKind.FINAL, self._clock(), actions)
        return self._with_wakeup(actions)

    def on_task_failed(self, failed: TaskFailed) -> list[Action]:
        if not self._is_current("task_failed", failed.subtask, failed.attempt, None):
            return []  # an old attempt dying must not mark the new one failed
        if self._lifecycle is not Lifecycle.ACTIVE:
            return []
        self._status[failed.subtask] = SubtaskStatus.FAILED
        actions: list[Action] = []
        if failed.fatal:  # retrying cannot help (the data broke a rule of the job)
            self._lifecycle = Lifecycle.FAILED
            self._abort_all_pending(FailureReason.TASK_FAILURE, f"subtask {failed.subtask} failed", actions)
            actions.append(FailJob(failed.error))
            return actions
        detail = f"subtask {failed.subtask} attempt {failed.attempt} failed: {failed.error}"
        self._failed_at.setdefault(failed.subtask, (self._clock(), detail))
        self._abort_all_pending(FailureReason.TASK_FAILURE, detail, actions)
        return self._with_wakeup(actions)

    # --- events from the adapter --------------------------------------------------------

    def on_tick(self) -> list[Action]:
        if self._lifecycle is not Lifecycle.ACTIVE:
            return []
        now = self._clock()
        actions: list[Action] = []
        limit = self.settings.failover_timeout_ms
        overdue = sorted(i for i, (at, _) in self._failed_at.items() if now >= at + limit)
        if overdue:
            _, why = self._failed_at[overdue[0]]
            self._lifecycle = Lifecycle.FAILED
            self._abort_all_pending(FailureReason.TASK_FAILURE, "a subtask did not come back", actions)
            actions.append(
                FailJob(
                    f"subtask {overdue[0]} did not restart within {limit // 1000} s after it failed ({why}); "
                    "rerun the job to resume from the latest completed checkpoint"
                )
            )
            return actions
        timeout = self.settings.timeout_ms
        for _, pending in sorted(self._pending.items()):
            if pending.state is CheckpointState.PENDING and now >= pending.trigger_ms + timeout:
                waiting = sorted(pending.not_yet_acknowledged)
                detail = f"subtasks {waiting} did not acknowledge within {timeout} ms"
                self._abort(pending, FailureReason.EXPIRED, detail, actions)
        trigger_at = self._next_trigger_ms()
        if trigger_at is not None and now >= trigger_at:
            kind = CheckpointKind.FINAL if self._all_end_of_input() else CheckpointKind.CHECKPOINT
            self._trigger(kind, now, actions)
        return self._with_wakeup(actions)

    def on_persisted(self, checkpoint_id: int) -> list[Action]:
        pending = self._in_flight("persisted", checkpoint_id)
        completed = pending.mark_persisted()
        self._forget(pending)
        actions: list[Action] = []
        if self._latest is None or checkpoint_id > self._latest.checkpoint_id:
            self._latest = completed
            self._last_completion_ms = self._clock()
            self._failures.handle_success(checkpoint_id)
            actions.append(Broadcast(NotifyComplete(checkpoint_id), self._targets()))
            for cid, older in sorted(self._pending.items()):
                if cid < checkpoint_id and older.state is CheckpointState.PENDING and older.can_be_subsumed:
                    detail = f"checkpoint {checkpoint_id} completed"
                    self._abort(older, FailureReason.SUBSUMED, detail, actions)
        # Otherwise an older checkpoint became durable after a newer one completed: the
        # sinks were already told to commit up to the newer id, so there is nothing to say.
        self._release_restores(actions)
        if checkpoint_id in (self._final_id, self._stop_id) and self._lifecycle is Lifecycle.ACTIVE:
            self._lifecycle = Lifecycle.FINISHED
            self._abort_all_pending(
                FailureReason.COORDINATOR_SHUTDOWN, f"job finished with checkpoint {checkpoint_id}", actions
            )
            actions.append(JobFinished(checkpoint_id, stopped_with_savepoint=checkpoint_id == self._stop_id))
        return self._with_wakeup(actions)

    def on_persist_failed(self, checkpoint_id: int, error: str) -> list[Action]:
        pending = self._in_flight("persist_failed", checkpoint_id)
        pending.mark_persist_failed(error)
        actions: list[Action] = []
        self._discarded(pending, actions)
        self._release_restores(actions)
        return self._with_wakeup(actions)

    # --- requests -------------------------------------------------------------------------

    def trigger_savepoint(self) -> tuple[int, list[Action]]:
        """Take a savepoint now; min-pause and max-concurrent do not apply to a request."""
        return self._savepoint(stop=False)

    def stop_with_savepoint(self) -> tuple[int, list[Action]]:
        """Savepoint, then JobFinished once it is durable. Periodic checkpoints pause
        meanwhile; if the savepoint fails they resume and the job keeps running."""
        if self._stop_id is not None:
            return self._stop_id, []
        return self._savepoint(stop=True)

    def shutdown(self) -> list[Action]:
        """Abort what is pending; persisting checkpoints still report through on_persisted."""
        if self._lifecycle is Lifecycle.SHUT_DOWN:
            return []
        self._lifecycle = Lifecycle.SHUT_DOWN
        actions: list[Action] = []
        self._abort_all_pending(FailureReason.COORDINATOR_SHUTDOWN, "coordinator shut down", actions)
        return actions

    # --- internals ------------------------------------------------------------------------

    def _savepoint(self, stop: bool) -> tuple[int, list[Action]]:
        what = "stop-with-savepoint" if stop else "savepoint"
        if self._lifecycle is not Lifecycle.ACTIVE:
            detail = f"no {what}: job is {self._lifecycle.value}"
            raise CheckpointFailed(FailureReason.COORDINATOR_SHUTDOWN, detail=detail)
        not_live = [i for i, s in enumerate(self._status) if s not in _LIVE]
        if not_live:
            raise CheckpointFailed(
                FailureReason.NOT_ALL_SUBTASKS_RUNNING, detail=f"no {what}: subtasks {not_live} are not running"
            )
        actions: list[Action] = []
        checkpoint_id = self._trigger(CheckpointKind.SAVEPOINT, self._clock(), actions)
        if stop:
            self._stop_id = checkpoint_id
        return checkpoint_id, self._with_wakeup(actions)

    def _next_trigger_ms(self) -> int | None:
        """When on_tick should trigger next, or None while something other than time blocks it."""
        if self._lifecycle is not Lifecycle.ACTIVE or any(s not in _LIVE for s in self._status):
            return None
        if self._all_end_of_input():
            # Only a retry of a failed final checkpoint gets here (the first is triggered
            # by the last EndOfInput); pace retries like periodic checkpoints.
            if self._final_id is not None:
                return None
            return self._last_trigger_ms + self.settings.interval_ms
        # In-flight savepoints and persisting checkpoints take slots too: they load the
        # same subtasks and storage.
        if self._stop_id is not None or len(self._pending) >= self.settings.max_concurrent:
            return None
        at = self._last_trigger_ms + self.settings.interval_ms
        if self._last_completion_ms is not None:
            at = max(at, self._last_completion_ms + self.settings.min_pause_ms)
        return at

    def _trigger(self, kind: CheckpointKind, now: int, actions: list[Action]) -> int:
        checkpoint_id = self._ids.get_and_increment()
        self._pending[checkpoint_id] = PendingCheckpoint(self.pipeline_id, checkpoint_id, kind, now, self.num_subtasks)
        if kind is not CheckpointKind.SAVEPOINT:  # a requested savepoint does not shift the period
            self._last_trigger_ms = now
        if kind is CheckpointKind.FINAL:
            self._final_id = checkpoint_id
        actions.append(Broadcast(TriggerBarrier(checkpoint_id, kind, now), self._targets()))
        return checkpoint_id

    def _abort(self, pending: PendingCheckpoint, reason: FailureReason, detail: str, actions: list[Action]) -> None:
        pending.abort(reason, detail)
        self._discarded(pending, actions)

    def _abort_all_pending(self, reason: FailureReason, detail: str, actions: list[Action]) -> None:
        for _, pending in sorted(self._pending.items()):
            if pending.state is CheckpointState.PENDING:  # an earlier abort may have ended it
                self._abort(pending, reason, detail, actions)

    def _discarded(self, pending: PendingCheckpoint, actions: list[Action]) -> None:
        """Bookkeeping shared by every way a checkpoint ends ABORTED."""
        assert pending.failure is not None
        reason, detail = pending.failure
        checkpoint_id = pending.checkpoint_id
        self._forget(pending)
        actions.append(Broadcast(AbortCheckpoint(checkpoint_id, reason.name), self._targets()))
        actions.append(DeleteCheckpointState(checkpoint_id, reason, pending.kind is CheckpointKind.SAVEPOINT, detail))
        if checkpoint_id == self._final_id:
            self._final_id = None  # retried on a later tick
        if checkpoint_id == self._stop_id:
            self._stop_id = None  # the job keeps running; the requester sees the abort
        # A savepoint is a manual request: its requester sees the failure, and failing
        # the job over it would turn a refused request into an outage (Flink agrees).
        if pending.kind is not CheckpointKind.SAVEPOINT:
            self._failures.handle_failure(reason, checkpoint_id, detail)
        if self._exceeded_message is not None and self._lifecycle is Lifecycle.ACTIVE:
            self._lifecycle = Lifecycle.FAILED
            self._abort_all_pending(FailureReason.COORDINATOR_SHUTDOWN, "job failed", actions)
            actions.append(FailJob(self._exceeded_message))

    def _failures_exceeded(self, message: str) -> None:
        self._exceeded_message = message  # acted on in _discarded, so FailJob comes last

    def _forget(self, pending: PendingCheckpoint) -> None:
        del self._pending[pending.checkpoint_id]
        self._recent.append(pending.checkpoint_id)

    def _release_restores(self, actions: list[Action]) -> None:
        """Answer registrations once no checkpoint is persisting.

        A restarted subtask must restore from the newest checkpoint that will ever be
        completed: if it restored from an older one while a newer one was still being
        written, and that write then landed, its sink would commit output for rows the
        subtask is about to process again.
        """
        if self._lifecycle is not Lifecycle.ACTIVE:
            return
        if any(p.state is CheckpointState.PERSISTING for p in self._pending.values()):
            return
        for subtask, status in enumerate(self._status):
            if status is SubtaskStatus.RESTORING:
                self._status[subtask] = SubtaskStatus.RUNNING
                attempt = self._attempts[subtask]
                assert attempt is not None
                actions.append(SendToSubtask(subtask, attempt, self._restore_message(subtask)))

    def _restore_message(self, subtask: int) -> RestoreState:
        if self._latest is None:
            return RestoreState(None)
        snapshot = self._latest.subtasks[subtask]
        return RestoreState(
            self._latest.checkpoint_id,
            snapshot.state_handles,
            snapshot.sink_commit_info,
            self._latest.kind,
            shared=self._latest.shared_states,
        )

    def _targets(self) -> tuple[tuple[int, int], ...]:
        return tuple(
            (i, a) for i, (s, a) in enumerate(zip(self._status, self._attempts)) if s in _LIVE and a is not None
        )

    def _all_end_of_input(self) -> bool:
        return all(s is SubtaskStatus.END_OF_INPUT for s in self._status)

    def _with_wakeup(self, actions: list[Action]) -> list[Action]:
        at = self.next_wakeup_ms()  # None once the job is over: the adapter may still wait for a commit
        if at != self._last_wakeup:
            self._last_wakeup = at
            wakeup = ScheduleWakeup(at)
            if actions and isinstance(actions[-1], (FailJob, JobFinished)):
                actions.insert(len(actions) - 1, wakeup)  # the job's end stays the last action
            else:
                actions.append(wakeup)
        return actions

    def _in_flight(self, event: str, checkpoint_id: int) -> PendingCheckpoint:
        pending = self._pending.get(checkpoint_id)
        if pending is None:
            raise self._protocol_error(event, checkpoint_id, "no such checkpoint in flight")
        return pending

    def _check_index(self, what: str, subtask: int, checkpoint_id: int | None) -> None:
        if not 0 <= subtask < self.num_subtasks:
            raise self._protocol_error(
                what, checkpoint_id, f"subtask {subtask} out of range 0..{self.num_subtasks - 1}"
            )

    def _is_current(self, what: str, subtask: int, attempt: int, checkpoint_id: int | None) -> bool:
        """True for the registered attempt, False for a superseded one; raise otherwise."""
        self._check_index(what, subtask, checkpoint_id)
        current = self._attempts[subtask]
        if current is None or attempt > current:
            raise self._protocol_error(what, checkpoint_id, f"subtask {subtask} attempt {attempt} never registered")
        return attempt == current

    def _protocol_error(self, what: str, checkpoint_id: int | None, problem: str) -> ProtocolError:
        about = f" for checkpoint {checkpoint_id}" if checkpoint_id is not None else ""
        return ProtocolError(f"{what}{about}: {problem} (coordinator: {self.describe()})")
