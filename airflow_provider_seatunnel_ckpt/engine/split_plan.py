"""The split plan in checkpoint storage: once per run attempt, referenced by each checkpoint.

A restore needs the plan the checkpoint was taken with (split ids and ranges must match
the restored positions). It used to be inline in every ``_metadata``: at 100,000 files
that is 17 MB encoded twice and written at every checkpoint, 76 % of the driver's time
(bench/scale_bench.py). The plan only ever grows by appending within a run attempt
(split discovery), so each attempt keeps one document, ``plans/{attempt}.json``,
rewritten when splits are added, and each ``_metadata`` holds a reference: the attempt,
how many splits of that document it saw, and their sha256. A manifest's own checksum
covers the reference, so a restore reads exactly the plan that checkpoint was taken with,
or fails with one line.

Manifests written by earlier releases carry the plan inline (``splits``); they restore
as they always did. Documents of earlier attempts that no checkpoint or savepoint refers
to any more are removed when a new attempt starts (by the claimant, never a taken-over
driver: each attempt writes only its own document).
"""

from __future__ import annotations

import hashlib
import json
import logging
from typing import Any, Mapping, Sequence

from ..errors import CheckpointError

log = logging.getLogger(__name__)

PLAN_DIR = "plans"
FORMAT = "seatunnel-ckpt/split-plan"
#: the manifest property holding the reference (earlier releases: ``INLINE_KEY``, the plan)
REF_KEY = "split_plan"
INLINE_KEY = "splits"
#: plans are large by nature (one entry per file, key range or partition)
MAX_PLAN_BYTES = 1 << 30

Plan = Sequence[Sequence[Any]]  # [[split_id, spec], ...]


def plan_path(attempt: int) -> str:
    return f"{PLAN_DIR}/{attempt:06d}.json"


def plan_digest(plan: Plan) -> str:
    canonical = json.dumps([list(entry) for entry in plan], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def store_plan(storage: Any, job_id: str, attempt: int, plan: Plan) -> dict[str, Any]:
    """Write this attempt's plan document; returns the reference for manifest properties."""
    storage.write_document(job_id, plan_path(attempt), {"format": FORMAT, "version": 1, "splits": list(plan)})
    return {"attempt": attempt, "count": len(plan), "sha256": plan_digest(plan)}


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
    splits = document.get("splits")
    count = int(ref["count"])
    if document.get("format") != FORMAT or not isinstance(splits, list) or len(splits) < count:
        raise CheckpointError(f"{where}: not a split plan of at least {count} splits")
    plan = [list(entry) for entry in splits[:count]]
    if plan_digest(plan) != ref["sha256"]:
        raise CheckpointError(f"{where}: the first {count} splits do not match the checkpoint's checksum")
    return plan


def referenced_attempts(manifests: Sequence[Any]) -> set[int]:
    return {int(m.properties[REF_KEY]["attempt"]) for m in manifests if REF_KEY in m.properties}


def prune_plans(storage: Any, job_id: str, keep: set[int], current_attempt: int) -> None:
    """Delete the plan documents of earlier attempts that are not in ``keep`` (the
    attempts retained checkpoints and savepoints refer to). Best effort: a leftover
    costs storage, not correctness."""
    try:
        names = storage.list_documents(job_id, PLAN_DIR)
    except Exception as err:  # noqa: BLE001
        log.info("could not list split plans of job %s: %s", job_id, err)
        return
    for name in names:
        try:
            attempt = int(name.removesuffix(".json"))
        except ValueError:
            continue
        if attempt < current_attempt and attempt not in keep:
            try:
                storage.delete_document(job_id, f"{PLAN_DIR}/{name}")
            except Exception as err:  # noqa: BLE001
                log.info("could not delete split plan %s of job %s: %s", name, job_id, err)
