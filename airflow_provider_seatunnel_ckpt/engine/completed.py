"""The record of a checkpoint every subtask acknowledged.

One type serves both directions: the coordinator hands it to the adapter to write as
``_metadata`` (PersistCheckpoint), and the adapter hands it back, read from storage,
as the checkpoint to restore from. Keeping a single shape means what is restored is
exactly what was persisted.
"""

from __future__ import annotations

from dataclasses import dataclass

from .messages import AckStats, CheckpointKind, JsonValue, StateHandle


@dataclass(frozen=True, slots=True)
class SubtaskSnapshot:
    """One subtask's part: where its state is and what its sink must (re-)commit."""

    subtask: int
    attempt: int
    state_handles: tuple[StateHandle, ...] = ()
    sink_commit_info: JsonValue = None
    stats: AckStats = AckStats()
    #: trigger -> this subtask's ACK received by the coordinator (coordinator clock);
    #: 0 for a checkpoint read back from storage
    ack_latency_ms: int = 0


@dataclass(frozen=True, slots=True)
class CompletedCheckpoint:
    """``subtasks[i]`` is subtask i, so restoring subtask i is an index, not a search."""

    pipeline_id: int
    checkpoint_id: int
    kind: CheckpointKind
    trigger_ms: int
    acked_ms: int  # when the last ACK arrived; the durable write time is the adapter's to record
    subtasks: tuple[SubtaskSnapshot, ...]
    #: every subtask holds every state handle (restored with another parallelism)
    shared_states: bool = False

    def __post_init__(self) -> None:
        if not self.subtasks:
            raise ValueError(f"checkpoint {self.checkpoint_id}: no subtask snapshots")
        for index, snapshot in enumerate(self.subtasks):
            if snapshot.subtask != index:
                raise ValueError(
                    f"checkpoint {self.checkpoint_id}: snapshot at position {index} is for "
                    f"subtask {snapshot.subtask}; snapshots must be ordered by subtask index"
                )

    @property
    def num_subtasks(self) -> int:
        return len(self.subtasks)

    @property
    def state_bytes(self) -> int:
        return sum(h.size for s in self.subtasks for h in s.state_handles)
