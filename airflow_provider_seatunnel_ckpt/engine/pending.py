"""One in-flight checkpoint, and the only table of checkpoint state transitions.

A checkpoint is triggered (PENDING), becomes PERSISTING once every subtask acked and
the adapter is writing ``_metadata``, and is COMPLETED only when that write is
durable. Anything else ends in ABORTED. Every transition is in ``TRANSITIONS``; a
missing entry is a bug in the caller and raises ProtocolError naming the event, the
state and the checkpoint id (h11 style), instead of silently corrupting bookkeeping.

Note what the table forbids: a PERSISTING checkpoint cannot be aborted for expiry,
decline, subsumption or a task failure. Its ``_metadata`` write is already in flight
and may land; deleting its state or telling sinks to drop it would leave a
"completed" checkpoint in storage whose data is gone. Only the write's own outcome
(PERSISTED or PERSIST_FAILED) ends it.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from ..errors import FailureReason, ProtocolError
from .completed import CompletedCheckpoint, SubtaskSnapshot
from .messages import Ack, CheckpointKind


class CheckpointState(enum.Enum):
    PENDING = "pending"  # barriers out, waiting for ACKs
    PERSISTING = "persisting"  # all ACKs in, adapter writing _metadata
    COMPLETED = "completed"  # _metadata durable; sinks may commit
    ABORTED = "aborted"


class CheckpointEvent(enum.Enum):
    ALL_ACKED = "all subtasks acknowledged"
    PERSISTED = "metadata persisted"
    PERSIST_FAILED = "persisting metadata failed"
    ABORT = "abort"


TRANSITIONS: Mapping[CheckpointState, Mapping[CheckpointEvent, CheckpointState]] = {
    CheckpointState.PENDING: {
        CheckpointEvent.ALL_ACKED: CheckpointState.PERSISTING,
        CheckpointEvent.ABORT: CheckpointState.ABORTED,
    },
    CheckpointState.PERSISTING: {
        CheckpointEvent.PERSISTED: CheckpointState.COMPLETED,
        CheckpointEvent.PERSIST_FAILED: CheckpointState.ABORTED,
    },
    CheckpointState.COMPLETED: {},
    CheckpointState.ABORTED: {},
}


class AckResult(enum.Enum):
    """What an ACK did. Returned, not raised: late and repeated ACKs are normal traffic."""

    SUCCESS = "success"  # recorded
    DUPLICATE = "duplicate"  # this subtask already acked this checkpoint; ignored
    UNKNOWN = "unknown"  # no such checkpoint (or subtask) was ever expected: invalid
    DISCARDED = "discarded"  # checkpoint recently aborted/finished, or a stale attempt: late


class PendingCheckpoint:
    """Bookkeeping for one checkpoint id: who still owes an ACK, and what the ACKs said."""

    __slots__ = (
        "pipeline_id",
        "checkpoint_id",
        "kind",
        "trigger_ms",
        "_state",
        "_waiting",
        "_acks",
        "_ack_ms",
        "_last_ack_ms",
        "_failure",
        "_completed",
    )

    def __init__(
        self,
        pipeline_id: int,
        checkpoint_id: int,
        kind: CheckpointKind,
        trigger_ms: int,
        num_subtasks: int,
    ):
        self.pipeline_id = pipeline_id
        self.checkpoint_id = checkpoint_id
        self.kind = kind
        self.trigger_ms = trigger_ms
        self._state = CheckpointState.PENDING
        self._waiting: set[int] = set(range(num_subtasks))
        self._acks: dict[int, Ack] = {}
        self._ack_ms: dict[int, int] = {}  # subtask -> when its ACK arrived (coordinator clock)
        self._last_ack_ms = trigger_ms
        self._failure: tuple[FailureReason, str] | None = None
        self._completed: CompletedCheckpoint | None = None

    def __repr__(self) -> str:
        return f"<{self.kind.value} {self.checkpoint_id} {self._state.value}>"

    @property
    def state(self) -> CheckpointState:
        return self._state

    @property
    def not_yet_acknowledged(self) -> frozenset[int]:
        return frozenset(self._waiting)

    @property
    def acks(self) -> Mapping[int, Ack]:
        return dict(self._acks)

    @property
    def ack_latencies_ms(self) -> Mapping[int, int]:
        """Per acknowledged subtask: trigger -> ACK received here, in ms (Flink's
        SubtaskStateStats end-to-end duration)."""
        return {i: max(0, at - self.trigger_ms) for i, at in sorted(self._ack_ms.items())}

    @property
    def is_fully_acknowledged(self) -> bool:
        return not self._waiting

    @property
    def is_discarded(self) -> bool:
        return self._state is CheckpointState.ABORTED

    @property
    def failure(self) -> tuple[FailureReason, str] | None:
        return self._failure

    @property
    def can_be_subsumed(self) -> bool:
        # A savepoint was asked for by someone and must not vanish because a periodic
        # checkpoint overtook it; a final checkpoint is the newest by construction.
        return self.kind is CheckpointKind.CHECKPOINT

    def acknowledge(self, ack: Ack, now_ms: int) -> AckResult:
        if ack.checkpoint_id != self.checkpoint_id:
            raise ProtocolError(f"ack for checkpoint {ack.checkpoint_id} routed to checkpoint {self.checkpoint_id}")
        if self._state is CheckpointState.ABORTED:
            return AckResult.DISCARDED
        if ack.subtask in self._acks:
            return AckResult.DUPLICATE
        if ack.subtask not in self._waiting or self._state is not CheckpointState.PENDING:
            return AckResult.UNKNOWN
        self._waiting.discard(ack.subtask)
        self._acks[ack.subtask] = ack
        self._ack_ms[ack.subtask] = now_ms
        self._last_ack_ms = max(self._last_ack_ms, now_ms)
        return AckResult.SUCCESS

    def start_persisting(self) -> CompletedCheckpoint:
        """All ACKs are in: freeze them into the record the adapter must write."""
        target = self._target(CheckpointEvent.ALL_ACKED)
        if self._waiting:
            raise ProtocolError(
                f"checkpoint {self.checkpoint_id}: cannot persist, subtasks "
                f"{sorted(self._waiting)} have not acknowledged"
            )
        self._state = target
        self._completed = CompletedCheckpoint(
            pipeline_id=self.pipeline_id,
            checkpoint_id=self.checkpoint_id,
            kind=self.kind,
            trigger_ms=self.trigger_ms,
            acked_ms=self._last_ack_ms,
            subtasks=tuple(
                SubtaskSnapshot(
                    subtask=i,
                    attempt=ack.attempt,
                    state_handles=ack.state_handles,
                    sink_commit_info=ack.sink_commit_info,
                    stats=ack.stats,
                    ack_latency_ms=max(0, self._ack_ms[i] - self.trigger_ms),
                )
                for i, ack in sorted(self._acks.items())
            ),
        )
        return self._completed

    def mark_persisted(self) -> CompletedCheckpoint:
        self._fire(CheckpointEvent.PERSISTED)
        assert self._completed is not None  # set on entering PERSISTING
        return self._completed

    def mark_persist_failed(self, detail: str) -> None:
        self._fire(CheckpointEvent.PERSIST_FAILED)
        self._failure = (FailureReason.IO_ERROR, detail)

    def abort(self, reason: FailureReason, detail: str = "") -> None:
        self._fire(CheckpointEvent.ABORT)
        self._failure = (reason, detail)

    def _fire(self, event: CheckpointEvent) -> None:
        self._state = self._target(event)

    def _target(self, event: CheckpointEvent) -> CheckpointState:
        target = TRANSITIONS[self._state].get(event)
        if target is None:
            raise ProtocolError(
                f"checkpoint {self.checkpoint_id}: event '{event.value}' is illegal in state {self._state.name}"
            )
        return target
