"""What the coordinator asks its driver adapter to do.

The coordinator decides; the adapter performs (sockets, storage, Spark). Execute the
actions of one call in list order: the order is part of the contract (for example an
AbortCheckpoint broadcast precedes the state deletion, and FailJob comes last).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeAlias

from ..errors import FailureReason
from .completed import CompletedCheckpoint
from .messages import CoordinatorMessage


@dataclass(frozen=True, slots=True)
class SendToSubtask:
    """Send to this attempt only; if it is not the connected attempt, drop the message."""

    subtask: int
    attempt: int
    message: CoordinatorMessage


@dataclass(frozen=True, slots=True)
class Broadcast:
    """Send to each (subtask, attempt) in ``targets``.

    The coordinator names the attempts so the adapter keeps no registry of its own
    and can never deliver to a superseded (zombie) attempt.
    """

    message: CoordinatorMessage
    targets: tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class PersistCheckpoint:
    """Write ``_metadata`` for this checkpoint atomically, then call ``on_persisted``
    (or ``on_persist_failed``). The checkpoint is not complete before that call."""

    checkpoint: CompletedCheckpoint


@dataclass(frozen=True, slots=True)
class DeleteCheckpointState:
    """The checkpoint (or savepoint) was aborted: delete whatever subtasks uploaded for it."""

    checkpoint_id: int
    reason: FailureReason
    savepoint: bool = False
    #: the abort's detail, for the checkpoint history (not part of the decision)
    detail: str = field(default="", compare=False)


@dataclass(frozen=True, slots=True)
class FailJob:
    """Too many consecutive checkpoint failures: fail the run (TolerableFailureExceeded)."""

    message: str


@dataclass(frozen=True, slots=True)
class JobFinished:
    """The final checkpoint (or the stop-with-savepoint) is durable; stop the subtasks.

    ``stopped_with_savepoint`` tells the two apart: a stopped job has input left and is
    resumed from the savepoint by the next run.
    """

    checkpoint_id: int
    stopped_with_savepoint: bool = False


@dataclass(frozen=True, slots=True)
class ScheduleWakeup:
    """Call ``on_tick`` at ``at_ms`` (coordinator clock). Replaces any earlier wakeup;
    ticking early or extra is always harmless. None: no time is due (only events matter,
    e.g. while a subtask is restarting); a wakeup in the past would make the adapter
    spin."""

    at_ms: int | None


Action: TypeAlias = (
    SendToSubtask | Broadcast | PersistCheckpoint | DeleteCheckpointState | FailJob | JobFinished | ScheduleWakeup
)
