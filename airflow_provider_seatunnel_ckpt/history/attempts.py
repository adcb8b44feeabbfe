"""A job's run attempt records: one small document per attempt, folded so that storage
holds a fixed number of them whatever the number of driver starts.

Each driver writes only its own record, ``attempts/{n:06d}.json`` (at its claim, and its
outcome at its end). A claimant folds the records of every earlier attempt into one
document it creates, ``attempts/earlier-{n:06d}.json``, then deletes what that one holds:
the loose records and the older folds. The job's run history stays whole (the recovery
operator counts a failure streak of any length from it), in two objects.

Why creating a new fold instead of rewriting one: two claimants may fold at once (a
driver taken over while it folds); each writes a document of its own, read after the
loose records it lists, so a record a concurrent fold deleted is found in that fold. A
taken-over driver may still write its own loose record after it was folded (its outcome):
readers merge field by field, loose over folded, newer fold over older.
"""

from __future__ import annotations

import logging
from typing import Any

from ..errors import CheckpointStorageError
from ..storage.layout import ATTEMPTS_DIR

log = logging.getLogger(__name__)

FOLD_PREFIX = "earlier-"
FORMAT = "seatunnel-ckpt/attempts"
#: a fold holds every earlier attempt's record (a few hundred bytes each)
MAX_FOLD_BYTES = 64 << 20


def record_path(attempt: int) -> str:
    return f"{ATTEMPTS_DIR}/{attempt:06d}.json"


def fold_path(below: int) -> str:
    return f"{ATTEMPTS_DIR}/{FOLD_PREFIX}{below:06d}.json"


def _number(name: str, prefix: str = "") -> int | None:
    stem = name[: -len(".json")] if name.endswith(".json") else ""
    if not stem.startswith(prefix):
        return None
    digits = stem[len(prefix) :]
    return int(digits) if digits.isdigit() else None


def _listing(storage: Any, job_id: str) -> tuple[list[int], list[int]]:
    """(loose record numbers, fold numbers), each ascending."""
    names = storage.list_documents(job_id, ATTEMPTS_DIR)
    loose = sorted(n for n in (_number(name) for name in names) if n is not None)
    folds = sorted(n for n in (_number(name, FOLD_PREFIX) for name in names) if n is not None)
    return loose, folds


def _read_folds(storage: Any, job_id: str, folds: list[int], into: dict[int, dict[str, Any]]) -> None:
    for below in folds:  # oldest first: a newer fold's copy of a record wins
        document = storage.read_document(job_id, fold_path(below), max_bytes=MAX_FOLD_BYTES)
        for record in (document or {}).get("attempts") or []:
            if isinstance(record, dict) and str(record.get("attempt", "")).isdigit():
                number = int(record["attempt"])
                into[number] = {**into.get(number, {}), **record}


def read_attempts(storage: Any, job_id: str) -> list[dict[str, Any]]:
    """Every run attempt's record, oldest first."""
    loose, folds = _listing(storage, job_id)
    records: dict[int, dict[str, Any]] = {}
    _read_folds(storage, job_id, folds, records)
    for number in loose:
        record = storage.read_document(job_id, record_path(number))
        if record is not None:
            records[number] = {**records.get(number, {}), **record}
    return [records[n] for n in sorted(records)]


def fold_earlier(storage: Any, job_id: str, below: int) -> None:
    """Fold the records of the attempts below ``below`` (the claimant's own number) into
    ``attempts/earlier-{below}.json`` and delete what it now holds. Only tidiness: a
    failure leaves the records as they were, for the next claimant."""
    try:
        loose, _ = _listing(storage, job_id)
        loose = [n for n in loose if n < below]
        records: dict[int, dict[str, Any]] = {}
        loose_records = {n: storage.read_document(job_id, record_path(n)) for n in loose}
        # Listed after the loose records were read: a record deleted meanwhile by a
        # concurrent fold is in that fold.
        _, folds = _listing(storage, job_id)
        folds = [n for n in folds if n < below]
        if not loose and len(folds) <= 1:
            return  # nothing to fold: a first start, or folded already
        _read_folds(storage, job_id, folds, records)
        for number, record in loose_records.items():
            if record is not None:
                records[number] = {**records.get(number, {}), **record}
        document = {"format": FORMAT, "below": below, "attempts": [records[n] for n in sorted(records)]}
        try:
            storage.create_document(job_id, fold_path(below), document)
        except FileExistsError:
            return  # folded already (this claim's fold, retried)
        for number in folds:
            storage.delete_document(job_id, fold_path(number))
        for number in loose:
            storage.delete_document(job_id, record_path(number))
    except CheckpointStorageError as err:
        log.info("could not fold the attempt records of job %s: %s", job_id, err)
