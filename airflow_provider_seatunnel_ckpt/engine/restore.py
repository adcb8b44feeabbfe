"""Restore: choose the checkpoint to restore (or discard the job's checkpoints), make the
checkpoints and the sink output match it, and choose the attempt's split plan, which is
part of the checkpoint (engine/split_plan.py; docs/storage.md)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from ..connectors.api import Split
from ..errors import ConfigError
from ..storage import CheckpointStorageError
from .run_state import DISCARDING, JOB_DOCUMENT, PIPELINE_ID, RunState, parse_restore
from .split_discovery import split_names
from .split_plan import (
    SOURCE_KEY,
    discard_plans,
    document_splits,
    load_plan,
    newest_earlier_plan,
    plan_entries,
    plan_path,
    prune_unreferenced_plans,
    source_fingerprint,
    store_plan,
)

log = logging.getLogger(__name__)


class RestoreDuty(RunState):
    """JobRun's restore selection, sink output repair and split plan."""

    def choose_restore(self, existing: Mapping[str, Any] | None = None) -> Any:
        """The manifest to restore (None: from the start). ``existing`` is ``job.json``
        as read before the claim."""
        mode = parse_restore(self.request.restore)
        job_id = self.request.job_id
        existing = existing or {}
        if existing.get(DISCARDING):
            self.progress(
                f"job {job_id}: an earlier --discard-existing was interrupted; finishing it first "
                "(the checkpoints go, committed output stays), then starting from the beginning"
            )
            self._discard(existing)
            return None
        if mode == "latest":
            manifest = self.store.latest_restorable()
            if manifest is None:
                self.progress(
                    f"job {job_id}: no completed checkpoint in {self.storage.describe(job_id)}; starting from the beginning"
                )
            return manifest
        if mode == "none":
            if self.store.has_any():
                if not self.request.discard_existing:
                    raise ConfigError(
                        "--restore",
                        f"job {job_id} already has checkpoints in {self.storage.describe(job_id)}; "
                        "use --restore latest to resume, or add --discard-existing to start over",
                    )
                self.progress(f"job {job_id}: discarding existing checkpoints as requested")
                self._discard(existing)
            return None
        try:
            return self.store.restorable(int(mode))
        except CheckpointStorageError as err:
            raise ConfigError("--restore", str(err)) from None

    def _discard(self, existing: Mapping[str, Any]) -> None:
        """Delete the job's checkpoints (``--discard-existing``); the caller then lets the
        sink drop its bookkeeping (``discard_job``). Marked in ``job.json`` first: a run
        that dies in between (checkpoints gone, the sink still counting on them: a File
        sink's rollback would take the committed output too) is finished by the next run,
        whatever it asks to restore. The claim's ``job.json`` write clears the mark."""
        job_id = self.request.job_id
        self.storage.write_document(job_id, JOB_DOCUMENT, {**existing, DISCARDING: True})
        entries = self.storage.list_checkpoint_entries(job_id, PIPELINE_ID)
        self.storage.delete_checkpoint_dirs(job_id, PIPELINE_ID, [e for e in entries if not e.fenced])
        # Starting over: where the earlier lineage's splits started is not this one's
        # (a run killed before this one's first plan must not fall back on them).
        discard_plans(self.storage, job_id, self.attempt_number)
        self.discarded = True

    def _restore_output(self, committer: Any, restored_infos: list[Any]) -> None:
        """Make the checkpoints and the sink output match the restored cut, before
        anything runs.

        Every checkpoint and savepoint newer than the restored one is deleted. Resuming
        from an older cut (``--restore ID``, or a damaged latest checkpoint) rolls back
        the sink output committed after it, so the newer checkpoints no longer match the
        output: restoring one later (``--restore latest`` after this run dies) would lose
        or fail to publish the rows they cover. A sink that cannot roll back refuses
        first (``check_rollback``), while nothing has changed. The checkpoints are
        deleted *before* the output is rolled back, so a crash in between leaves the
        restored checkpoint as the latest, and the next run repeats the rollback.

        Savepoints an earlier run never completed go too: retention keeps every
        savepoint, and the only id an earlier driver could still complete was fenced
        by the claim (a fenced id stays, always).
        """
        job_id = self.request.job_id
        restored_id = self.restored_id or 0
        entries = [e for e in self.storage.list_checkpoint_entries(job_id, PIPELINE_ID) if not e.fenced]
        newer = [e for e in entries if e.checkpoint_id > restored_id]
        completed = [e.checkpoint_id for e in newer if e.completed]
        committer.check_rollback(restored_id, completed)
        if completed:
            self.progress(
                f"job {job_id}: discarding checkpoint(s) {', '.join(map(str, completed))}, newer than "
                f"{f'checkpoint {restored_id}' if restored_id else 'the start'}: their output is rolled back"
            )
        aborted_savepoints = [e for e in entries if e.savepoint and not e.completed and e.checkpoint_id <= restored_id]
        for entry in newer + aborted_savepoints:
            self.storage.delete_checkpoint_dir(job_id, PIPELINE_ID, entry.checkpoint_id, entry.savepoint)
        if restored_infos:
            committer.commit(restored_infos)
        committer.rollback(restored_id)
        committer.cleanup(restored_infos)

    def plan_splits(self, source: Any, manifest: Any) -> tuple[tuple[Split, ...], dict[str, Any]]:
        """The splits this attempt reads, stored as its plan document before earlier,
        unreferenced plans are pruned; returns them and the reference every manifest of
        the attempt carries (engine/split_plan.py). No Spark here: the deterministic
        simulation (tests/simulation) drives this same code.

        The plan is part of the checkpoint: a restore (with any parallelism) keeps its
        checkpoint's plan, so split ids and ranges always match the restored positions.
        With nothing restored, the newest earlier attempt's plan of the same source is
        kept too: those attempts stopped before their first checkpoint, and the start
        positions were resolved when the job first started (Kafka's ``latest`` must not
        move on, nor a bounded job's end offsets)."""
        fingerprint = source_fingerprint(self.request.job.sources)
        stored = self._stored_plan(manifest, fingerprint)
        if stored is None:
            splits = tuple(source.splits(self.request.job.parallelism))
        else:
            splits = tuple(Split(str(split_id), spec) for split_id, spec in stored)
            added = tuple(source.discover_splits(splits))
            if added:  # appended: the stored splits keep their place, so their subtask
                self.progress(
                    f"{len(added)} new splits since the stored plan: {split_names(s.split_id for s in added)}"
                )
                splits += added
        return splits, self._store_plan(splits, fingerprint)

    def _store_plan(self, splits: Sequence[Split], fingerprint: str) -> dict[str, Any]:
        # A driver taken over creates and deletes nothing (the check covers the pruning too)
        self.fence.require_claim()
        ref = store_plan(self.storage, self.request.job_id, self.attempt_number, plan_entries(splits), fingerprint)
        self._prune_plans()
        return ref

    def _stored_plan(self, manifest: Any, fingerprint: str) -> list[list[Any]] | None:
        """The plan to keep: the restored checkpoint's, else an earlier attempt's of the
        same source unless the job starts over; None: ask the source for a new one."""
        if manifest is not None:
            return load_plan(self.storage, self.request.job_id, manifest.properties)
        if self.request.discard_existing or self.discarded:
            return None  # starting over: where to start is resolved again
        return self._earlier_plan(fingerprint)

    def _earlier_plan(self, fingerprint: str) -> list[list[Any]] | None:
        job_id = self.request.job_id
        found = newest_earlier_plan(self.storage, job_id, self.attempt_number)
        if found is None:
            return None
        attempt, document = found
        if document.get(SOURCE_KEY) != fingerprint:
            self.progress(
                f"job {job_id}: the source options differ from those attempt {attempt} planned its splits "
                "with; making a new split plan (where each split starts is resolved again)"
            )
            return None
        splits = document_splits(document, f"{self.storage.describe(job_id)}/{plan_path(attempt)}")
        self.progress(
            f"job {job_id}: nothing to restore; reading the {len(splits)} splits attempt {attempt} planned, "
            "from where that attempt started"
        )
        return splits

    def _prune_plans(self) -> None:
        """Remove earlier attempts' split plans that no retained checkpoint or savepoint
        refers to (engine/split_plan.py); the claimant does this after its own plan is
        stored (it may be a copy of the newest earlier one), and its driver again after
        retention (``DriverLoop._apply_retention``)."""
        prune_unreferenced_plans(self.storage, self.request.job_id, PIPELINE_ID, self.attempt_number)
