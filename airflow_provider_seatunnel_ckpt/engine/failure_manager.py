"""Decides when failed checkpoints are bad enough to fail the job (tolerable-failure).

The question it answers is "is checkpointing healthy?", not "did anything go wrong?".
So only reasons that say something about checkpointing count (FailureReason's
``counts_as_failure``: expired, declined, IO and async errors), a checkpoint id is
counted once however many subtasks report it, and only *consecutive* failures count:
a completed checkpoint proves checkpointing works again. Counting over the job's
lifetime (a weakness of an anchor) would fail a healthy week-long job for failures
spread over days.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import CheckpointFailed, FailureReason


class CheckpointFailureManager:
    """Counts consecutive counted failures; calls ``on_exceeded(message)`` once past the limit.

    "Consecutive" is in checkpoint-id order, not arrival order, because with
    ``max-concurrent > 1`` results arrive out of order. Flink's rule: a failure of a
    checkpoint older than the newest completed one is ignored (a newer checkpoint
    already proved the pipeline healthy), and a completion only resets if it is newer
    than the newest completed one. We go one step further on resets: a completion
    clears only failures *older* than itself. If checkpoint 5 expired and then the
    slower checkpoint 4 completes, 5 still counts; Flink would forget it, which lets a
    job whose newest checkpoints keep failing look healthy thanks to stragglers.

    It never fails the job itself: the callback (the coordinator) owns that decision's
    consequences, which keeps this class trivial to test.
    """

    def __init__(self, tolerable_failures: int, on_exceeded: Callable[[str], None]):
        if not isinstance(tolerable_failures, int) or isinstance(tolerable_failures, bool) or tolerable_failures < 0:
            raise ValueError(
                "tolerable-failure must be an integer >= 0 (0 fails the job on the first "
                f"counted checkpoint failure), got {tolerable_failures!r}"
            )
        self._tolerable = tolerable_failures
        self._on_exceeded = on_exceeded
        self._failed_ids: set[int] = set()  # counted failures newer than the newest success
        self._failures_without_id = 0  # failures before an id was assigned
        self._newest_success: int | None = None
        self._last_failure: CheckpointFailed | None = None
        self._exceeded = False

    @property
    def tolerable_failures(self) -> int:
        return self._tolerable

    @property
    def consecutive_failures(self) -> int:
        return len(self._failed_ids) + self._failures_without_id

    @property
    def exceeded(self) -> bool:
        return self._exceeded

    def handle_failure(self, reason: FailureReason, checkpoint_id: int | None = None, detail: str = "") -> bool:
        """Record a failed checkpoint; return whether it was counted."""
        if not reason.counts_as_failure:
            return False
        if checkpoint_id is None:
            self._failures_without_id += 1
        elif self._newest_success is not None and checkpoint_id <= self._newest_success:
            return False
        elif checkpoint_id in self._failed_ids:
            return False
        else:
            self._failed_ids.add(checkpoint_id)
        self._last_failure = CheckpointFailed(reason, checkpoint_id, detail)
        if self.consecutive_failures > self._tolerable and not self._exceeded:
            self._exceeded = True
            self._on_exceeded(self._exceeded_message())
        return True

    def handle_success(self, checkpoint_id: int) -> None:
        if self._newest_success is not None and checkpoint_id <= self._newest_success:
            return
        self._newest_success = checkpoint_id
        self._failed_ids = {i for i in self._failed_ids if i > checkpoint_id}
        # A failure without an id happened before any id now being completed was triggered.
        self._failures_without_id = 0

    def _exceeded_message(self) -> str:
        return (
            f"{self.consecutive_failures} consecutive checkpoints failed, more than "
            f"tolerable-failure={self._tolerable} allows; last failure: {self._last_failure}"
        )
