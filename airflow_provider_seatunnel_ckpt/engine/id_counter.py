"""Checkpoint ids: unique and strictly increasing for the whole life of a job.

Ids name directories in storage (``chk-{id}``) and sinks commit "every prepared id <=
the completed id", so reusing an id after a restart could overwrite a checkpoint or
commit output twice. The counter itself lives in memory; it is durable because the
driver adapter starts it from the highest id found in storage + 1, never from 1.
"""

from __future__ import annotations

FIRST_CHECKPOINT_ID = 1


class CheckpointIdCounter:
    """Hands out ids; refuses to go backwards, because a lower id is a reused id."""

    __slots__ = ("_next",)

    def __init__(self) -> None:
        self._next: int | None = None

    def start(self, initial_next_id: int = FIRST_CHECKPOINT_ID) -> None:
        _check_id(initial_next_id, "initial_next_id")
        if self._next is not None and initial_next_id < self._next:
            raise ValueError(
                f"checkpoint id counter already at {self._next}; restarting it at {initial_next_id} would reuse ids"
            )
        self._next = initial_next_id

    def get_and_increment(self) -> int:
        current = self._require_started()
        self._next = current + 1
        return current

    def get(self) -> int:
        """The id the next checkpoint will get (not yet handed out)."""
        return self._require_started()

    def set_count(self, next_id: int) -> None:
        current = self._require_started()
        _check_id(next_id, "next_id")
        if next_id < current:
            raise ValueError(
                f"cannot move the checkpoint id counter back from {current} to {next_id}: "
                "ids already handed out would be reused"
            )
        self._next = next_id

    def _require_started(self) -> int:
        if self._next is None:
            raise RuntimeError("checkpoint id counter used before start()")
        return self._next


def _check_id(value: object, name: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < FIRST_CHECKPOINT_ID:
        raise ValueError(f"{name} must be an integer >= {FIRST_CHECKPOINT_ID}, got {value!r}")
