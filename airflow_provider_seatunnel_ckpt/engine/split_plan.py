"""The split plan in checkpoint storage: once per run attempt, referenced by each checkpoint.

A restore needs the plan its checkpoint was taken with. Each attempt keeps one document,
``plans/{attempt}.json`` (rewritten when discovery appends splits), and each
``_metadata`` holds a reference to it (attempt, split count, sha256) that its checksum
covers; manifests of earlier releases carry the plan inline. An attempt with nothing to
restore reuses the newest earlier attempt's plan of the same source options (a digest,
``source``); the claimant prunes plans no checkpoint refers to any more, and its driver
prunes again once retention has removed the checkpoints that still did.

Why, and how the runner uses it (``JobRun.plan_splits``, engine/restore.py):
docs/architecture.md, "Design choices where the brief left room" (state scoped to splits).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import CheckpointError
from .heartbeat import job_fingerprint

log = logging.getLogger(__name__)

PLAN_DIR = "plans"
FORMAT = "seatunnel-ckpt/split-plan"
#: the manifest property holding the reference (earlier releases: ``INLINE_KEY``, the plan)
REF_KEY = "split_plan"
INLINE_KEY = "splits"
#: in a plan document and its reference: the digest of the source options it was made with
SOURCE_KEY = "source"
#: plans are large by nature (one entry per file, key range or partition)
MAX_PLAN_BYTES = 1 << 30

Plan = Sequence[Sequence[Any]]  # [[split_id, spec], ...]


def plan_path(attempt: int) -> str:
    return f"{PLAN_DIR}/{attempt:06d}.json"


def plan_digest(plan: Plan) -> str:
    canonical = json.dumps([list(entry) for entry in plan], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def plan_entries(splits: Sequence[Any]) -> list[list[Any]]:
    """A plan as stored: ``[[split_id, spec], ...]`` of ``Split`` objects."""
    return [[split.split_id, dict(split.spec)] for split in splits]


def source_fingerprint(sources: Sequence[Mapping[str, Any]]) -> str:
    """The digest of a job's source options (the heartbeat's digest of a job definition,
    over its sources alone): a plan is reused only for the options it was made with. A
    digest, so the document holds no option values (credentials may be among them)."""
    return job_fingerprint({"sources": [dict(source) for source in sources]})


def store_plan(storage: Any, job_id: str, attempt: int, plan: Plan, source: str | None = None) -> dict[str, Any]:
    """Write this attempt's plan document; returns the reference for manifest properties.
    ``source``: the fingerprint of the source options the plan was made with."""
    document: dict[str, Any] = {"format": FORMAT, "version": 1, "splits": list(plan)}
    ref: dict[str, Any] = {"attempt": attempt, "count": len(plan), "sha256": plan_digest(plan)}
    if source is not None:
        document[SOURCE_KEY] = ref[SOURCE_KEY] = source
    storage.write_document(job_id, plan_path(attempt), document)
    return ref


def load_plan(storage: Any, job_id: str, properties: Mapping[str, Any]) -> list[list[Any]] | None:
    """The plan a checkpoint was taken with (None: it has none, as a job with no source state)."""
    if INLINE_KEY in properties:
        return [list(entry) for entry in properties[INLINE_KEY]]
    ref = properties.get(REF_KEY)
    if ref is None:
        return None
    where = f"{storage.describe(job_id)}/{plan_path(int(ref['attempt']))}"
    document = storage.read_document(job_id, plan_path(int(ref["attempt"])), max_bytes=MAX_PLAN_BYTES)
    if document is None:
        raise CheckpointError(f"{where}: the split plan this checkpoint was taken with is missing")
    count = int(ref["count"])
    plan = document_splits(document, where, count)[:count]
    if plan_digest(plan) != ref["sha256"]:
        raise CheckpointError(f"{where}: the first {count} splits do not match the checkpoint's checksum")
    return plan


def document_splits(document: Mapping[str, Any], where: str, at_least: int = 0) -> list[list[Any]]:
    """The splits of a plan document (``where`` names it in the error)."""
    splits = document.get("splits")
    if document.get("format") != FORMAT or not isinstance(splits, list) or len(splits) < at_least:
        raise CheckpointError(f"{where}: not a split plan" + (f" of at least {at_least} splits" if at_least else ""))
    return [list(entry) for entry in splits]


def newest_earlier_plan(storage: Any, job_id: str, before_attempt: int) -> tuple[int, dict[str, Any]] | None:
    """The newest plan document of an attempt before ``before_attempt``, with its attempt
    (None: there is none). A document pruned between the listing and its read is passed
    over for the next older one."""
    for attempt in reversed(_earlier_attempts(storage, job_id, before_attempt)):
        document = storage.read_document(job_id, plan_path(attempt), max_bytes=MAX_PLAN_BYTES)
        if document is not None:
            return attempt, document
    return None


def discard_plans(storage: Any, job_id: str, before_attempt: int) -> None:
    """Delete the plans of every attempt before ``before_attempt`` (``--discard-existing``):
    the job starts over, so no later attempt may take a plan made before. A failure is
    raised, not logged: the interrupted discard is finished by the next run."""
    for attempt in _earlier_attempts(storage, job_id, before_attempt):
        storage.delete_document(job_id, plan_path(attempt))


def _earlier_attempts(storage: Any, job_id: str, before_attempt: int) -> list[int]:
    """Attempts before ``before_attempt`` that have a plan document, oldest first."""
    return sorted(
        a for a in map(_attempt_of, storage.list_documents(job_id, PLAN_DIR)) if a is not None and a < before_attempt
    )


def _attempt_of(name: str) -> int | None:
    stem = name.removesuffix(".json")
    return int(stem) if stem.isdigit() else None


def referenced_attempts(manifests: Sequence[Any]) -> set[int]:
    return {int(m.properties[REF_KEY]["attempt"]) for m in manifests if REF_KEY in m.properties}


def prune_plans(storage: Any, job_id: str, keep: set[int], current_attempt: int) -> None:
    """Delete the plan documents of earlier attempts that are not in ``keep`` (the
    attempts retained checkpoints and savepoints refer to). Best effort: a leftover
    costs storage, not correctness."""
    try:
        attempts = _earlier_attempts(storage, job_id, current_attempt)
    except Exception as err:
        log.info("could not list split plans of job %s: %s", job_id, err)
        return
    for attempt in attempts:
        if attempt not in keep:
            try:
                storage.delete_document(job_id, plan_path(attempt))
            except Exception as err:
                log.info("could not delete split plan %s of job %s: %s", plan_path(attempt), job_id, err)


def prune_unreferenced_plans(storage: Any, job_id: str, pipeline_id: int, current_attempt: int) -> bool:
    """Delete the earlier attempts' plans that no retained checkpoint or savepoint refers
    to (best effort). Returns whether a retained periodic checkpoint still refers to an
    earlier attempt's plan: retention removes that checkpoint later, and the plan can go
    then (one a savepoint refers to stays as long as the savepoint)."""
    try:
        retained = [e for e in storage.list_checkpoint_entries(job_id, pipeline_id) if e.completed]
        manifests = [storage.read_manifest(job_id, pipeline_id, e.checkpoint_id, e.savepoint) for e in retained]
    except Exception as err:  # a leftover plan costs storage, not correctness
        log.info("not pruning split plans of job %s: %s", job_id, err)
        return True
    prune_plans(storage, job_id, referenced_attempts(manifests), current_attempt)
    periodic = referenced_attempts([m for e, m in zip(retained, manifests, strict=True) if not e.savepoint])
    return any(attempt < current_attempt for attempt in periodic)
