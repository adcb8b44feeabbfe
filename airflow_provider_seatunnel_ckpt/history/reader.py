"""Read a job's history back: the job's status, its attempts, every checkpoint entry
newest first, and the figures Flink's checkpoint page shows (counts, latest, min /
median / p99 / max of duration, state size and rows).

Shared by ``seatunnel-ckpt history`` and the Airflow view, so both show the same thing.
Entries that do not validate are skipped and counted, never fatal: one damaged segment
must not hide the rest of the history.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from ..storage.layout import JOB_FILE
from .attempts import read_attempts
from .entries import ENTRIES, ENTRY, HISTORY_DIR, CheckpointEntry, RestoreEntry, segment_order

log = logging.getLogger(__name__)

#: job.json fields that are the drivers' business only (a fencing token is a credential
#: of sorts: whoever holds it can pass for the driver)
PRIVATE_JOB_FIELDS = ("fencing_token",)
READ_THREADS = 8


def job_status(storage: Any, job_id: str) -> dict[str, Any] | None:
    """``job.json`` without its private fields, or None for a job never run."""
    document = storage.read_document(job_id, JOB_FILE)
    if document is None:
        return None
    return {k: v for k, v in document.items() if k not in PRIVATE_JOB_FIELDS}


def attempts(storage: Any, job_id: str) -> list[dict[str, Any]]:
    """Every run attempt's record (``attempts/``, loose and folded), oldest first."""
    return read_attempts(storage, job_id)


def shown_outcome(record: dict[str, Any], newest_attempt: int) -> str:
    """An attempt's outcome for people: one still "running" while a newer attempt exists
    ended without recording why (its driver was killed, or its host lost)."""
    outcome = str(record.get("outcome") or "unknown")
    if outcome == "running" and int(record.get("attempt") or 0) < newest_attempt:
        return "lost"
    return outcome


@dataclass(frozen=True)
class Figures:
    """min, median, p99 and max of one quantity over the completed checkpoints."""

    min: int
    median: int
    p99: int
    max: int

    @classmethod
    def of(cls, values: Iterable[int]) -> Figures | None:
        ordered = sorted(values)
        if not ordered:
            return None

        def rank(q: float) -> int:  # nearest rank: always a value that was measured
            return ordered[min(len(ordered), max(1, math.ceil(q * len(ordered)))) - 1]

        return cls(min=ordered[0], median=rank(0.5), p99=rank(0.99), max=ordered[-1])


@dataclass(frozen=True)
class Summary:
    completed: int
    failed: int
    aborted: int
    latest_completed: CheckpointEntry | None
    latest_failed: CheckpointEntry | None
    latest_restore: RestoreEntry | None
    duration_ms: Figures | None
    state_bytes: Figures | None
    rows: Figures | None


def summarize(checkpoints: list[CheckpointEntry], restores: list[RestoreEntry]) -> Summary:
    """``checkpoints`` and ``restores`` newest first, as ``History`` holds them."""
    completed = [c for c in checkpoints if c.status == "completed"]
    return Summary(
        completed=len(completed),
        failed=sum(1 for c in checkpoints if c.status == "failed"),
        aborted=sum(1 for c in checkpoints if c.status == "aborted"),
        latest_completed=completed[0] if completed else None,
        latest_failed=next((c for c in checkpoints if c.status != "completed"), None),
        latest_restore=restores[0] if restores else None,
        duration_ms=Figures.of(c.duration_ms for c in completed if c.duration_ms is not None),
        state_bytes=Figures.of(c.state_bytes for c in completed),
        rows=Figures.of(c.rows for c in completed),
    )


@dataclass(frozen=True)
class History:
    job_id: str
    job: dict[str, Any] | None
    attempts: list[dict[str, Any]]
    #: newest first
    checkpoints: list[CheckpointEntry]
    #: newest first
    restores: list[RestoreEntry]
    #: entries (or whole segments) that did not validate
    skipped: int = 0
    summary: Summary = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "summary", summarize(self.checkpoints, self.restores))

    def page(self, number: int, size: int) -> list[CheckpointEntry]:
        """Checkpoint entries of page ``number`` (1-based), newest first."""
        start = (max(1, number) - 1) * size
        return self.checkpoints[start : start + size]

    def checkpoint(self, checkpoint_id: int) -> CheckpointEntry | None:
        """The newest entry of ``checkpoint_id`` (a completed one over a failed try of the
        same id by a taken-over driver)."""
        found = [c for c in self.checkpoints if c.id == checkpoint_id]
        return next((c for c in found if c.status == "completed"), found[0] if found else None)


def read_history(storage: Any, job_id: str) -> History:
    names = sorted(
        (order, name)
        for name in storage.list_documents(job_id, HISTORY_DIR)
        if (order := segment_order(name)) is not None
    )
    paths = [f"{HISTORY_DIR}/{name}" for _, name in names]
    with ThreadPoolExecutor(max_workers=max(1, min(READ_THREADS, len(paths)))) as pool:
        documents = list(pool.map(lambda path: _read_segment(storage, job_id, path), paths))
    checkpoints: list[CheckpointEntry] = []
    restores: list[RestoreEntry] = []
    skipped = 0
    seen: set[Any] = set()
    for raw_entries in documents:
        entries, bad = _validated(raw_entries)
        skipped += bad
        for entry in entries:
            if entry in seen:  # a fold's copy, read before the segments it took in were deleted
                continue
            seen.add(entry)
            (checkpoints if isinstance(entry, CheckpointEntry) else restores).append(entry)
    checkpoints.sort(key=lambda c: (c.trigger_ms, c.id), reverse=True)
    restores.sort(key=lambda r: (r.at_ms, r.attempt), reverse=True)
    if skipped:
        log.warning("job %s: %d history entries could not be read and are left out", job_id, skipped)
    return History(job_id, job_status(storage, job_id), attempts(storage, job_id), checkpoints, restores, skipped)


def _read_segment(storage: Any, job_id: str, path: str) -> list[Any] | None:
    try:
        document = storage.read_document(job_id, path)
    except FileNotFoundError:  # pruned by the running driver between the listing and the read
        return []
    except Exception as err:  # a damaged segment hides only its own entries
        log.warning("job %s: skipping history segment %s: %s", job_id, path, err)
        return None
    if document is None:
        return []
    entries = document.get("entries")
    return entries if isinstance(entries, list) else None


def _validated(raw_entries: list[Any] | None) -> tuple[list[Any], int]:
    if raw_entries is None:
        return [], 1
    try:
        return ENTRIES.validate_python(raw_entries), 0
    except ValidationError:
        pass
    good = []
    for raw in raw_entries:  # slow path: keep what is valid
        try:
            good.append(ENTRY.validate_python(raw))
        except ValidationError:
            continue
    return good, len(raw_entries) - len(good)
