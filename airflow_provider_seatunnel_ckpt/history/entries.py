"""What one history entry holds, as written (plain dicts, cheap to build on the driver)
and as read back (validated models: history comes from storage, so it is checked like
any other input, and never unpickled).

A segment document ``history/{attempt:06d}-{segment:06d}.json`` holds a list of
entries. Two types:

* ``checkpoint``: one checkpoint, savepoint or final checkpoint that completed, failed
  (a reason that counts against ``tolerable-failure``) or was aborted (one that does
  not: subsumed, a subtask failed, the job stopped). Per-subtask figures are rows of
  ``SUBTASK_COLUMNS``, compact because a job may keep thousands of entries.
* ``restore``: an attempt started from a checkpoint (``id``), or from the beginning
  (``id`` null).

Keys are only ever added; a reader ignores keys it does not know.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter

HISTORY_DIR = "history"
FORMAT = "seatunnel-ckpt-history/1"
#: the figures of one subtask in a checkpoint entry, in this order
SUBTASK_COLUMNS = ("subtask", "attempt", "ack_ms", "sync_ms", "async_ms", "state_bytes", "rows")

Count = Annotated[int, Field(ge=0)]


def segment_name(attempt: int, segment: int) -> str:
    return f"{attempt:06d}-{segment:06d}.json"


def segment_order(name: str) -> tuple[int, int] | None:
    """(attempt, segment) of a segment document's name; None for anything else."""
    stem, _, suffix = name.partition(".")
    attempt, _, segment = stem.partition("-")
    if suffix != "json" or not attempt.isdigit() or not segment.isdigit():
        return None
    return int(attempt), int(segment)


# ---- written by the driver -------------------------------------------------------------------


def completed_entry(
    attempt: int, checkpoint_id: int, kind: str, statistics: Mapping[str, Any], duration_ms: int, persist_ms: int | None
) -> dict[str, Any]:
    """A completed checkpoint, from its ``_metadata`` statistics (see
    ``engine.completed_store.checkpoint_statistics``) and the driver's own timings."""
    subtasks = statistics.get("subtasks") if isinstance(statistics.get("subtasks"), Mapping) else {}
    rows = []
    for key in sorted(subtasks, key=lambda k: int(k) if str(k).isdigit() else -1):
        sub = subtasks[key]
        if str(key).isdigit() and isinstance(sub, Mapping):
            rows.append(
                [
                    int(key),
                    int(sub.get("attempt", 0)),
                    int(sub.get("ack_latency_ms", 0)),
                    int(sub.get("sync_ms", 0)),
                    int(sub.get("async_ms", 0)),
                    int(sub.get("state_bytes", 0)),
                    int(sub.get("rows_since_last", 0)),
                ]
            )
    trigger_ms = int(statistics.get("trigger_ms", 0))
    return {
        "type": "checkpoint",
        "id": checkpoint_id,
        "kind": kind,
        "status": "completed",
        "attempt": attempt,
        "trigger_ms": trigger_ms,
        "end_ms": trigger_ms + duration_ms,
        "duration_ms": duration_ms,
        "state_bytes": int(statistics.get("state_bytes", 0)),
        "rows": int(statistics.get("rows", 0)),
        "ack_duration_ms": int(statistics.get("ack_duration_ms", 0)),
        "persist_ms": persist_ms,
        "subtasks": rows,
    }


def failed_entry(
    attempt: int, checkpoint_id: int, kind: str, trigger_ms: int, end_ms: int, reason: str, counts_as_failure: bool
) -> dict[str, Any]:
    """A checkpoint that ended without completing; ``reason`` says why, in one line."""
    return {
        "type": "checkpoint",
        "id": checkpoint_id,
        "kind": kind,
        "status": "failed" if counts_as_failure else "aborted",
        "attempt": attempt,
        "trigger_ms": trigger_ms,
        "end_ms": end_ms,
        "duration_ms": max(0, end_ms - trigger_ms),
        "reason": reason,
    }


def restore_entry(attempt: int, at_ms: int, checkpoint_id: int | None) -> dict[str, Any]:
    return {"type": "restore", "attempt": attempt, "at_ms": at_ms, "id": checkpoint_id}


# ---- read back ------------------------------------------------------------------------------


class SubtaskDetail(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    subtask: Count
    attempt: Count = 0
    ack_ms: Count = 0
    sync_ms: Count = 0
    async_ms: Count = 0
    state_bytes: Count = 0
    rows: Count = 0


def _full_rows(rows: tuple[tuple[int, ...], ...]) -> tuple[tuple[int, ...], ...]:
    for row in rows:
        if len(row) < len(SUBTASK_COLUMNS):
            raise ValueError(f"a subtask row has {len(row)} figures, expected {len(SUBTASK_COLUMNS)}")
    return rows


class CheckpointEntry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    type: Literal["checkpoint"]
    id: Count
    kind: Literal["checkpoint", "savepoint", "final"]
    status: Literal["completed", "failed", "aborted"]
    attempt: Count
    trigger_ms: Count
    end_ms: Count
    duration_ms: Count | None = None
    state_bytes: Count = 0
    rows: Count = 0
    ack_duration_ms: Count | None = None
    persist_ms: Count | None = None
    reason: str | None = None
    #: rows of ``SUBTASK_COLUMNS``, kept as validated ints: a long history holds tens of
    #: thousands, and only the detail of one checkpoint needs them as objects
    subtasks: Annotated[tuple[tuple[Count, ...], ...], AfterValidator(_full_rows)] = ()

    @property
    def subtask_details(self) -> tuple[SubtaskDetail, ...]:
        return tuple(SubtaskDetail(**dict(zip(SUBTASK_COLUMNS, row))) for row in self.subtasks)

    @property
    def slowest_subtask(self) -> int | None:
        """The subtask whose ACK came last (None without per-subtask figures)."""
        if not self.subtasks:
            return None
        ack = SUBTASK_COLUMNS.index("ack_ms")
        return max(self.subtasks, key=lambda row: (row[ack], -row[0]))[0]


class RestoreEntry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    type: Literal["restore"]
    attempt: Count
    at_ms: Count
    #: the checkpoint the attempt restored; None when it started from the beginning
    id: Count | None = None


Entry = Annotated[CheckpointEntry | RestoreEntry, Field(discriminator="type")]
ENTRY = TypeAdapter(Entry)
ENTRIES = TypeAdapter(list[Entry])
