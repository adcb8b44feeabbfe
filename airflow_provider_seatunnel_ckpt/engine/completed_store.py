"""Completed checkpoints of one pipeline, in storage: persist, find, restore.

Translates between the coordinator's ``CompletedCheckpoint`` and the storage layer's
``CheckpointManifest`` (``_metadata``), and chooses what to restore from: the newest
checkpoint or savepoint (ids are shared, so the highest id is the newest consistent
cut) whose manifest *and every state file* verify. A damaged one is reported and the
previous one is used.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

from ..storage import (
    CheckpointKind as StoredKind,
)
from ..storage import (
    CheckpointManifest,
    CheckpointNotFoundError,
    CheckpointStorage,
    CorruptCheckpointError,
)
from ..storage import (
    StateHandle as StoredHandle,
)
from .completed import CompletedCheckpoint, SubtaskSnapshot
from .messages import AckStats, CheckpointKind, StateHandle

log = logging.getLogger(__name__)


def wall_ms() -> int:
    return int(time.time() * 1000)


def _to_stored(handle: StateHandle) -> StoredHandle:
    if handle.inline is not None:
        return StoredHandle(size=handle.size, sha256=handle.sha256, inline=handle.inline)
    return StoredHandle(size=handle.size, sha256=handle.sha256, file=handle.path)


def _to_engine(handle: StoredHandle) -> StateHandle:
    if handle.inline is not None:
        return StateHandle(size=handle.size, sha256=handle.sha256, inline=handle.inline)
    return StateHandle(size=handle.size, sha256=handle.sha256, path=handle.file)


class CompletedCheckpointStore:
    def __init__(self, storage: CheckpointStorage, job_id: str, pipeline_id: int):
        self.storage = storage
        self.job_id = job_id
        self.pipeline_id = pipeline_id

    # ---- write ------------------------------------------------------------------------
    def to_manifest(
        self,
        checkpoint: CompletedCheckpoint,
        trigger_wall_ms: int,
        properties: dict[str, Any],
        sinks: tuple[Any, ...] = (),
    ) -> CheckpointManifest:
        """``sinks``: the job's sink identities (engine/sink_identity.py), recorded so that a
        restore hands each sink its own commit infos whatever the order of the job's sinks."""
        subtask_states = {}
        for snapshot in checkpoint.subtasks:
            if len(snapshot.state_handles) > 1:
                raise ValueError(
                    f"subtask {snapshot.subtask} reported {len(snapshot.state_handles)} state handles; expected one"
                )
            if snapshot.state_handles:
                subtask_states[snapshot.subtask] = _to_stored(snapshot.state_handles[0])
        complete = wall_ms()
        statistics = checkpoint_statistics(checkpoint, trigger_wall_ms, complete)
        return CheckpointManifest(
            job_id=self.job_id,
            pipeline_id=self.pipeline_id,
            checkpoint_id=checkpoint.checkpoint_id,
            kind=StoredKind(checkpoint.kind.value),
            trigger_ms=trigger_wall_ms,
            complete_ms=complete,
            subtask_states=subtask_states,
            commit_infos=tuple(s.sink_commit_info for s in checkpoint.subtasks),
            sinks=tuple(sinks),
            statistics=statistics,
            properties={"parallelism": checkpoint.num_subtasks, **properties},
        )

    def persist(
        self, manifest: CheckpointManifest, before_write: Callable[[], None] | None = None, trusted: Iterable[str] = ()
    ) -> str:
        """Check the state files (but the ``trusted`` ones), run ``before_write``, write
        ``_metadata``. Retention is left to :meth:`apply_retention`, after the checkpoint
        is reported complete."""
        return self.storage.complete_checkpoint(manifest, trusted, before_write=before_write, retention=False)

    def apply_retention(self) -> list[int]:
        return self.storage.apply_retention(self.job_id, self.pipeline_id)

    # ---- read ---------------------------------------------------------------------------
    def from_manifest(self, manifest: CheckpointManifest) -> CompletedCheckpoint:
        parallelism = int(manifest.properties.get("parallelism") or len(manifest.commit_infos) or 1)
        stats = manifest.statistics.get("subtasks", {}) if isinstance(manifest.statistics, dict) else {}
        snapshots = []
        for index in range(parallelism):
            handle = manifest.subtask_states.get(index)
            sub_stats = stats.get(str(index), {})
            info = manifest.commit_infos[index] if index < len(manifest.commit_infos) else None
            snapshots.append(
                SubtaskSnapshot(
                    subtask=index,
                    attempt=int(sub_stats.get("attempt", 0)),
                    state_handles=(_to_engine(handle),) if handle else (),
                    sink_commit_info=info,
                    stats=AckStats(),
                )
            )
        return CompletedCheckpoint(
            pipeline_id=self.pipeline_id,
            checkpoint_id=manifest.checkpoint_id,
            kind=CheckpointKind(manifest.kind.value),
            trigger_ms=0,
            acked_ms=0,
            subtasks=tuple(snapshots),
        )

    def highest_id(self) -> int:
        """The highest id any checkpoint or savepoint of this pipeline ever used (0 if none)."""
        return self.storage.highest_checkpoint_id(self.job_id, self.pipeline_id) or 0

    def has_any(self) -> bool:
        return bool(self.storage.list_checkpoint_entries(self.job_id, self.pipeline_id))

    def latest_restorable(self, verify: bool = True) -> CheckpointManifest | None:
        """Newest completed checkpoint or savepoint that passes every check."""
        entries = [e for e in self.storage.list_checkpoint_entries(self.job_id, self.pipeline_id) if e.completed]
        for entry in sorted(entries, key=lambda e: e.checkpoint_id, reverse=True):
            manifest = self._valid_manifest(entry.checkpoint_id, entry.savepoint, verify)
            if manifest is not None:
                return manifest
        return None

    def restorable(self, checkpoint_id: int, verify: bool = True) -> CheckpointManifest:
        """A specific checkpoint (or savepoint) id; raises when absent or damaged."""
        # A taken-over driver's savepoint may share an id with the claimant's checkpoint:
        # the completed one of the two is the one asked for.
        matching = [
            e
            for e in self.storage.list_checkpoint_entries(self.job_id, self.pipeline_id)
            if e.checkpoint_id == checkpoint_id
        ]
        entry = next((e for e in matching if e.completed), matching[0] if matching else None)
        if entry is None or not entry.completed:
            self.storage.require_checkpoint(self.job_id, self.pipeline_id, checkpoint_id)  # raises the clear error
        assert entry is not None  # no entry: no completed checkpoint, and require_checkpoint raised
        manifest = self._valid_manifest(checkpoint_id, entry.savepoint, verify)
        if manifest is None:
            raise CorruptCheckpointError(
                f"{self.storage.describe(self.job_id, self.pipeline_id, checkpoint_id)}: checkpoint is damaged "
                "(see the warning above); run `seatunnel-ckpt verify` for details"
            )
        return manifest

    def _valid_manifest(self, checkpoint_id: int, savepoint: bool, verify: bool) -> CheckpointManifest | None:
        """The manifest, or None when the checkpoint is damaged (reported as a warning).

        Only *damage* (a failed checksum, size or format check, a missing file) makes a
        checkpoint invalid. A storage error that outlasted the retries propagates: the
        run fails and is retried later. Treating it as damage would make the run fall
        back to an older checkpoint, or start from scratch, and roll back committed
        output because storage was briefly unreachable.
        """
        try:
            manifest = self.storage.read_manifest(self.job_id, self.pipeline_id, checkpoint_id, savepoint)
            if verify:
                handles = {f"subtask {i}": h for i, h in manifest.subtask_states.items()}
                if manifest.coordinator_state is not None:
                    handles["the coordinator"] = manifest.coordinator_state
                for owner, handle in handles.items():
                    try:
                        self.storage.read_state(self.job_id, self.pipeline_id, checkpoint_id, handle, savepoint)
                    except FileNotFoundError:
                        raise CorruptCheckpointError(
                            f"{self.storage.describe(self.job_id, self.pipeline_id, checkpoint_id)}: "
                            f"state of {owner} ({handle.file}) is missing"
                        ) from None
        except (CorruptCheckpointError, CheckpointNotFoundError) as err:
            log.warning("checkpoint %d is damaged, not restoring from it: %s", checkpoint_id, err)
            return None
        return manifest


def checkpoint_statistics(
    checkpoint: CompletedCheckpoint, trigger_wall_ms: int, complete_wall_ms: int
) -> dict[str, Any]:
    """The ``statistics`` object of ``_metadata`` (modelled on Flink's checkpoint stats).

    Times ending in ``_ms`` that are durations come from the coordinator's monotonic
    clock (ACK latencies) or from wall-clock differences (``duration_ms``, ``persist_ms``);
    ``trigger_ms``, ``complete_ms`` and per-subtask ``ack_ms`` are wall-clock epoch ms
    (``ack_ms`` = ``trigger_ms`` + the subtask's ACK latency). Keys are only ever
    added: benchmarks and sensors read them.
    """
    ack_duration = max(0, checkpoint.acked_ms - checkpoint.trigger_ms)
    per_subtask = {
        str(s.subtask): {
            "attempt": s.attempt,
            **s.stats.to_json(),
            "ack_latency_ms": s.ack_latency_ms,
            "ack_ms": trigger_wall_ms + s.ack_latency_ms,
        }
        for s in checkpoint.subtasks
    }
    return {
        "trigger_ms": trigger_wall_ms,
        "complete_ms": complete_wall_ms,
        "duration_ms": max(0, complete_wall_ms - trigger_wall_ms),
        "ack_duration_ms": ack_duration,
        "persist_ms": max(0, complete_wall_ms - trigger_wall_ms - ack_duration),
        "state_bytes": checkpoint.state_bytes,
        "rows": sum(s.stats.rows_since_last for s in checkpoint.subtasks),
        "num_subtasks": checkpoint.num_subtasks,
        "subtasks": per_subtask,
    }


def rescaled(checkpoint: CompletedCheckpoint, parallelism: int) -> CompletedCheckpoint:
    """The same cut for another parallelism: every new subtask gets every old state
    handle and keeps the splits now dealt to it (state is per split)."""
    if checkpoint.num_subtasks == parallelism:
        return checkpoint
    handles = tuple(h for s in checkpoint.subtasks for h in s.state_handles)
    snapshots = tuple(SubtaskSnapshot(subtask=i, attempt=0, state_handles=handles) for i in range(parallelism))
    return CompletedCheckpoint(
        pipeline_id=checkpoint.pipeline_id,
        checkpoint_id=checkpoint.checkpoint_id,
        kind=checkpoint.kind,
        trigger_ms=checkpoint.trigger_ms,
        acked_ms=checkpoint.acked_ms,
        subtasks=snapshots,
        shared_states=True,
    )


def commit_infos_of(manifest_infos: Any) -> list[Any]:
    """Flatten per-subtask ``[[epoch_id, info], ...]`` lists into the sink's infos."""
    infos = []
    for per_subtask in manifest_infos or ():
        for entry in per_subtask or ():
            if isinstance(entry, (list, tuple)) and len(entry) == 2:
                infos.append(entry[1])
    return infos
