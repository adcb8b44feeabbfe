"""The checkpoint storage API (SeaTunnel's ``CheckpointStorage`` + factory).

A plugin implements a handful of primitives; everything users and the engine call is
derived from them here, once, so every backend gets the same guarantees:

* latest = the highest checkpoint id whose ``_metadata`` is present *and valid*;
  a corrupt one is reported (warning with its path) and the previous one is used;
* retention is computed from what is in storage on every completion, never from
  memory, and never removes the latest completed checkpoint or any savepoint;
* a checkpoint is completed only by writing ``_metadata`` last and atomically.

Most plugins do not implement this class directly: they provide a ``FileSystem``
(five primitives) and reuse ``FileSystemCheckpointStorage``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import CheckpointStorageError
from .filesystem import Bytes, join_pieces, warn_once
from .model import (
    INLINE_STATE_LIMIT,
    CheckpointKind,
    CheckpointManifest,
    CheckpointNotFoundError,
    CorruptCheckpointError,
    PipelineState,
    StateHandle,
)

log = logging.getLogger(__name__)

DEFAULT_MAX_RETAINED = 3

#: the file ``store_checkpoint`` writes ``PipelineState.states`` to when not inlined
COORDINATOR_STATE_FILE = "coordinator.state"


@dataclass(frozen=True, order=True)
class CheckpointEntry:
    """A checkpoint directory as listed: completed means a ``_metadata`` is present.

    ``fenced``: the id was taken from a driver that lost its claim on the job (an empty
    ``_metadata``, see :meth:`CheckpointStorage.fence_checkpoint_id`): never completed,
    never reused, kept so that driver can never complete it later."""

    checkpoint_id: int
    savepoint: bool
    completed: bool
    location: str = ""
    #: name -> size of every file in the directory, when the listing that found the
    #: checkpoint saw them (saves listing the directory again); None when unknown
    files: Mapping[str, int] | None = field(default=None, compare=False, repr=False)
    fenced: bool = field(default=False, compare=False)


class CheckpointStorage:
    """Base class. Instances are cheap, picklable and thread-safe (config only)."""

    #: the ``storage.type`` this instance was created for (informational)
    storage_type = "abstract"
    max_retained = DEFAULT_MAX_RETAINED

    # ---- primitives a plugin implements -------------------------------------------
    def list_jobs(self) -> list[str]:
        raise NotImplementedError

    def list_pipelines(self, job_id: str) -> list[int]:
        raise NotImplementedError

    def list_checkpoint_entries(self, job_id: str, pipeline_id: int) -> list[CheckpointEntry]:
        """Every checkpoint and savepoint directory of a pipeline, completed or not, by id."""
        raise NotImplementedError

    def read_manifest(
        self, job_id: str, pipeline_id: int, checkpoint_id: int, savepoint: bool = False
    ) -> CheckpointManifest:
        """The parsed, checksum-verified ``_metadata``; raises CheckpointNotFoundError / CorruptCheckpointError."""
        raise NotImplementedError

    def write_state(
        self, job_id: str, pipeline_id: int, checkpoint_id: int, name: str, data: Bytes, savepoint: bool = False
    ) -> StateHandle:
        """Raw-bytes service (Flink's CheckpointStreamFactory): write one state file
        into a checkpoint directory, atomically; subtasks call this on executors."""
        raise NotImplementedError

    def write_state_pieces(
        self,
        job_id: str,
        pipeline_id: int,
        checkpoint_id: int,
        name: str,
        size: int,
        pieces: Iterable[Bytes],
        savepoint: bool = False,
    ) -> StateHandle:
        """``write_state`` of data produced piece by piece, ``size`` bytes in all (an
        encoded subtask state: header, then its large values in slices). The default
        puts the pieces together and calls ``write_state``; a storage that can write
        them as they come overrides it, sparing a copy of the whole state."""
        return self.write_state(job_id, pipeline_id, checkpoint_id, name, join_pieces(size, pieces), savepoint)

    def read_state(
        self, job_id: str, pipeline_id: int, checkpoint_id: int, handle: StateHandle, savepoint: bool = False
    ) -> bytes:
        """The verified bytes of a state handle (inline or file)."""
        raise NotImplementedError

    def state_file_sizes(
        self, job_id: str, pipeline_id: int, checkpoint_id: int, savepoint: bool = False
    ) -> dict[str, int]:
        """Names and sizes of the files present in a checkpoint directory (one listing)."""
        raise NotImplementedError

    def write_manifest(self, manifest: CheckpointManifest) -> str:
        """Atomically write ``_metadata``: the act that completes a checkpoint."""
        raise NotImplementedError

    def delete_checkpoint_dir(self, job_id: str, pipeline_id: int, checkpoint_id: int, savepoint: bool = False) -> None:
        """Remove a checkpoint: ``_metadata`` first, so a crash midway never leaves a
        'completed' checkpoint with missing state."""
        raise NotImplementedError

    def delete_state_files(self, job_id: str, pipeline_id: int, checkpoint_id: int, savepoint: bool = False) -> None:
        """Remove a checkpoint's state files but keep its ``_metadata``: what a fenced id
        (an empty ``_metadata``, which must stay) no longer needs."""
        raise NotImplementedError

    def delete_aborted_state(
        self, job_id: str, pipeline_id: int, checkpoint_id: int, run: int, savepoint: bool = False
    ) -> None:
        """Remove what the subtasks of run attempt ``run`` uploaded for an aborted
        checkpoint, and its directory once nothing else is in it. A ``_metadata`` the run
        wrote itself (the write landed, its answer was lost) goes first; never another
        run's ``_metadata`` or files: a driver that was taken over may abort an id the
        claimant is completing in the same directory. The default leaves them to
        retention."""

    def delete_job(self, job_id: str) -> None:
        raise NotImplementedError

    def read_document(self, job_id: str, relative_path: str, max_bytes: int | None = None) -> dict[str, Any] | None:
        """A JSON document under the job directory (job.json, attempts/...): at most
        ``max_bytes`` (default 1 MiB; a larger one is reported as damaged)."""
        raise NotImplementedError

    def write_document(self, job_id: str, relative_path: str, document: Mapping[str, Any]) -> None:
        raise NotImplementedError

    def create_document(self, job_id: str, relative_path: str, document: Mapping[str, Any]) -> None:
        """Create a document that must not exist yet: ``FileExistsError`` when it does.
        Atomic against concurrent creators on the built-in backends (exactly one wins);
        this is what fences two drivers of one job. The default here is not atomic."""
        if self.read_document(job_id, relative_path) is not None:
            raise FileExistsError(f"{self.describe(job_id)}/{relative_path} already exists")
        warn_once(
            ("create_document", type(self)),
            "%s has no atomic create-only write: two drivers of one job are not fenced on it",
            type(self).__name__,
        )
        self.write_document(job_id, relative_path, document)

    def fence_checkpoint_id(self, job_id: str, pipeline_id: int, checkpoint_id: int, savepoint: bool = False) -> bool:
        """Make ``checkpoint_id`` impossible to complete: an empty ``_metadata``, created
        only if none exists. True when fenced; False when a ``_metadata`` was there first
        (the checkpoint completed, or was fenced before)."""
        raise NotImplementedError

    def list_documents(self, job_id: str, relative_dir: str) -> list[str]:
        raise NotImplementedError

    def delete_document(self, job_id: str, relative_path: str) -> None:
        raise NotImplementedError

    def describe(
        self,
        job_id: str = "",
        pipeline_id: int | None = None,
        checkpoint_id: int | None = None,
        savepoint: bool = False,
    ) -> str:
        """Human-readable location for messages (backend and path, never secrets)."""
        raise NotImplementedError

    # ---- SeaTunnel API, derived ---------------------------------------------------
    def store_checkpoint(self, state: PipelineState) -> str:
        """Store a complete pipeline state; returns its location. Atomic, checksummed,
        followed by retention."""
        savepoint = state.kind == CheckpointKind.SAVEPOINT
        data = bytes(state.states)
        now_ms = int(time.time() * 1000)
        manifest = state.manifest or CheckpointManifest(
            job_id=state.job_id,
            pipeline_id=state.pipeline_id,
            checkpoint_id=state.checkpoint_id,
            kind=state.kind,
            trigger_ms=now_ms,
            complete_ms=now_ms,
        )
        if len(data) <= INLINE_STATE_LIMIT:
            return self.complete_checkpoint(manifest.with_updates(coordinator_state=StateHandle.for_bytes(data)))
        self._require_state_files(manifest, skip={COORDINATOR_STATE_FILE})
        location = self.write_state_and_manifest(manifest, COORDINATOR_STATE_FILE, data)
        if not savepoint:
            self.apply_retention(manifest.job_id, manifest.pipeline_id)
        return location

    def write_state_and_manifest(self, manifest: CheckpointManifest, name: str, data: bytes) -> str:
        """Write the coordinator's state file ``name``, then ``_metadata`` referencing
        it (``manifest`` plus its handle): ``write_state`` then ``write_manifest``.
        A plugin may override it to overlap the two, as long as ``_metadata`` can never
        exist, even after a crash, before the state file is complete."""
        savepoint = manifest.kind == CheckpointKind.SAVEPOINT
        handle = self.write_state(manifest.job_id, manifest.pipeline_id, manifest.checkpoint_id, name, data, savepoint)
        return self.write_manifest(manifest.with_updates(coordinator_state=handle))

    def complete_checkpoint(
        self,
        manifest: CheckpointManifest,
        written: Iterable[str] = (),
        *,
        before_write: Callable[[], None] | None = None,
        retention: bool = True,
    ) -> str:
        """Verify the referenced state files are all there, write ``_metadata``, then
        apply retention. Raises before writing if any state file is missing or short.
        ``written`` names state files known to be there: written by this process, or
        by a writer whose earlier files were found (the driver's rule), so not listed.
        ``before_write`` runs between the check and the write, and may raise to stop it
        (the driver waits there for its fence reservation). ``retention=False`` leaves
        retention to the caller (the driver applies it after the checkpoint is reported
        complete, so it is not part of the checkpoint's latency)."""
        self._require_state_files(manifest, skip=set(written))
        if before_write is not None:
            before_write()
        location = self.write_manifest(manifest)
        if retention and manifest.kind != CheckpointKind.SAVEPOINT:
            self.apply_retention(manifest.job_id, manifest.pipeline_id)
        return location

    def landed_at(self, manifest: CheckpointManifest) -> str | None:
        """Where this exact ``_metadata`` is, if it is in storage (a write that raised may
        have landed, its answer lost). Without a way to read it back: None."""
        return None

    def _require_state_files(self, manifest: CheckpointManifest, skip: set[str]) -> None:
        savepoint = manifest.kind == CheckpointKind.SAVEPOINT
        expected = {name: h for name, h in manifest.state_files().items() if name not in skip}
        if not expected:
            return
        present = self.state_file_sizes(manifest.job_id, manifest.pipeline_id, manifest.checkpoint_id, savepoint)
        for name, handle in expected.items():
            if present.get(name) != handle.size:
                raise CheckpointStorageError(
                    f"{self.describe(manifest.job_id, manifest.pipeline_id, manifest.checkpoint_id)}: "
                    f"state file {name} is missing or incomplete; checkpoint not completed"
                )

    def get_checkpoint(
        self, job_id: str, pipeline_id: int, checkpoint_id: int, savepoint: bool = False
    ) -> PipelineState:
        manifest = self.read_manifest(job_id, pipeline_id, checkpoint_id, savepoint)
        return self._to_state(manifest, savepoint)

    def get_checkpoints_by_job_id_and_pipeline_id(self, job_id: str, pipeline_id: int) -> list[PipelineState]:
        """Every valid completed checkpoint of a pipeline, oldest first (corrupt ones skipped)."""
        states = []
        for entry in self.list_checkpoint_entries(job_id, pipeline_id):
            if entry.completed and not entry.savepoint:
                state = self._load_valid(job_id, pipeline_id, entry)
                if state is not None:
                    states.append(state)
        return states

    def get_latest_checkpoint_by_job_id_and_pipeline_id(self, job_id: str, pipeline_id: int) -> PipelineState | None:
        """The highest-id completed checkpoint that passes every check, or None."""
        entries = [e for e in self.list_checkpoint_entries(job_id, pipeline_id) if e.completed and not e.savepoint]
        for entry in sorted(entries, reverse=True):
            state = self._load_valid(job_id, pipeline_id, entry)
            if state is not None:
                return state
        return None

    def get_latest_checkpoint(self, job_id: str) -> list[PipelineState]:
        """One latest valid checkpoint per pipeline of the job."""
        latest = []
        for pipeline_id in self.list_pipelines(job_id):
            state = self.get_latest_checkpoint_by_job_id_and_pipeline_id(job_id, pipeline_id)
            if state is not None:
                latest.append(state)
        return latest

    def get_all_checkpoints(self, job_id: str) -> list[PipelineState]:
        states = []
        for pipeline_id in self.list_pipelines(job_id):
            states.extend(self.get_checkpoints_by_job_id_and_pipeline_id(job_id, pipeline_id))
        return states

    def get_latest_savepoint(self, job_id: str, pipeline_id: int) -> PipelineState | None:
        entries = [e for e in self.list_checkpoint_entries(job_id, pipeline_id) if e.completed and e.savepoint]
        for entry in sorted(entries, reverse=True):
            state = self._load_valid(job_id, pipeline_id, entry)
            if state is not None:
                return state
        return None

    def delete_checkpoint(
        self,
        job_id: str,
        pipeline_id: int | None = None,
        checkpoint_id: int | Iterable[int] | None = None,
    ) -> None:
        """Delete a whole job, a pipeline's checkpoints, or the given checkpoint id(s)."""
        if pipeline_id is None:
            if checkpoint_id is not None:
                raise ValueError("checkpoint_id given without pipeline_id")
            self.delete_job(job_id)
            return
        wanted = (
            None
            if checkpoint_id is None
            else ({checkpoint_id} if isinstance(checkpoint_id, int) else set(checkpoint_id))
        )
        for entry in self.list_checkpoint_entries(job_id, pipeline_id):
            if wanted is None or entry.checkpoint_id in wanted:
                self.delete_checkpoint_dir(job_id, pipeline_id, entry.checkpoint_id, entry.savepoint)

    # ---- engine helpers, derived --------------------------------------------------
    def highest_checkpoint_id(self, job_id: str, pipeline_id: int) -> int | None:
        """The highest id ever used by this pipeline (completed or not), so a restarted
        coordinator continues above it and never reuses a directory."""
        ids = [e.checkpoint_id for e in self.list_checkpoint_entries(job_id, pipeline_id)]
        return max(ids) if ids else None

    def apply_retention(self, job_id: str, pipeline_id: int) -> list[int]:
        """Keep the newest ``max_retained`` completed checkpoints; drop older ones and
        uncompleted leftovers older than the latest completed one. Savepoints stay.
        Computed from storage contents (one listing), so it also cleans up after a
        restart; done when this returns, so a listing right after sees the result."""
        entries = [e for e in self.list_checkpoint_entries(job_id, pipeline_id) if not e.savepoint]
        stale = self.retention_victims(entries, self.max_retained)
        if stale:
            self.delete_checkpoint_dirs(job_id, pipeline_id, stale)
        return [e.checkpoint_id for e in stale]

    @staticmethod
    def retention_victims(entries: Iterable[CheckpointEntry], max_retained: int) -> list[CheckpointEntry]:
        """Which of a pipeline's (non-savepoint) entries retention removes, oldest first."""
        entries = [e for e in entries if not e.savepoint]
        completed = sorted((e for e in entries if e.completed), reverse=True)
        if not completed:
            return []
        latest_id = completed[0].checkpoint_id
        keep = {e.checkpoint_id for e in completed[: max(1, max_retained)]}
        stale = []
        for entry in sorted(entries):
            if entry.fenced:  # kept: deleting it would let the fenced driver complete the id
                continue
            stale_completed = entry.completed and entry.checkpoint_id not in keep
            aborted_leftover = not entry.completed and entry.checkpoint_id < latest_id
            if stale_completed or aborted_leftover:
                stale.append(entry)
        return stale

    def delete_checkpoint_dirs(self, job_id: str, pipeline_id: int, entries: Iterable[CheckpointEntry]) -> None:
        """Remove several checkpoints (as listed); every ``_metadata`` goes before any
        state file. The default deletes them one by one; plugins may batch."""
        for entry in entries:
            self.delete_checkpoint_dir(job_id, pipeline_id, entry.checkpoint_id, entry.savepoint)

    def verify_checkpoint(
        self, job_id: str, pipeline_id: int, checkpoint_id: int, savepoint: bool = False
    ) -> list[str]:
        """Re-check the manifest and every state file's checksum; returns the problems
        (damage: a missing, malformed or mismatching file). A file that could not be
        read at all (network, permission, server error) is not damage: that raises
        ``CheckpointStorageError`` saying the checkpoint could not be verified."""
        where = self.describe(job_id, pipeline_id, checkpoint_id) + (" (savepoint)" if savepoint else "")
        try:
            manifest = self.read_manifest(job_id, pipeline_id, checkpoint_id, savepoint)
        except (CorruptCheckpointError, CheckpointNotFoundError) as err:
            return [str(err)]
        except CheckpointStorageError as err:
            raise _unverified(where, "its _metadata", err) from err
        problems = []
        handles: dict[int | str, StateHandle] = dict(manifest.subtask_states.items())
        if manifest.coordinator_state is not None:
            handles["coordinator"] = manifest.coordinator_state
        for owner, handle in handles.items():
            try:
                self.read_state(job_id, pipeline_id, checkpoint_id, handle, savepoint)
            except FileNotFoundError:
                problems.append(f"{where}: state of {owner} ({handle.file}) is missing")
            except CorruptCheckpointError as err:
                problems.append(str(err))
            except CheckpointStorageError as err:
                raise _unverified(where, f"the state of {owner} ({handle.file})", err) from err
        return problems

    def require_checkpoint(self, job_id: str, pipeline_id: int, checkpoint_id: int) -> PipelineState:
        """Like get_checkpoint, but a clear error when the id does not exist at all."""
        entries = {e.checkpoint_id: e for e in self.list_checkpoint_entries(job_id, pipeline_id) if not e.savepoint}
        entry = entries.get(checkpoint_id)
        if entry is None or not entry.completed:
            known = sorted(i for i, e in entries.items() if e.completed)
            raise CheckpointNotFoundError(
                f"{self.describe(job_id, pipeline_id)}: no completed checkpoint {checkpoint_id} "
                f"(completed: {', '.join(map(str, known)) or 'none'})"
            )
        return self.get_checkpoint(job_id, pipeline_id, checkpoint_id)

    # ---- internals ----------------------------------------------------------------
    def _load_valid(self, job_id: str, pipeline_id: int, entry: CheckpointEntry) -> PipelineState | None:
        try:
            manifest = self.read_manifest(job_id, pipeline_id, entry.checkpoint_id, entry.savepoint)
            expected = manifest.state_files()
            if expected:
                present = entry.files
                if present is None:
                    present = self.state_file_sizes(job_id, pipeline_id, entry.checkpoint_id, entry.savepoint)
                for name, handle in expected.items():
                    if present.get(name) != handle.size:
                        raise CorruptCheckpointError(
                            f"{self.describe(job_id, pipeline_id, entry.checkpoint_id)}: state file {name} "
                            f"is missing or has the wrong size"
                        )
            return self._to_state(manifest, entry.savepoint)
        except (CorruptCheckpointError, CheckpointNotFoundError, FileNotFoundError) as err:
            log.warning("skipping invalid checkpoint: %s", err)
            return None

    def _to_state(self, manifest: CheckpointManifest, savepoint: bool) -> PipelineState:
        states = b""
        if manifest.coordinator_state is not None:
            states = self.read_state(
                manifest.job_id, manifest.pipeline_id, manifest.checkpoint_id, manifest.coordinator_state, savepoint
            )
        return PipelineState(
            job_id=manifest.job_id,
            pipeline_id=manifest.pipeline_id,
            checkpoint_id=manifest.checkpoint_id,
            states=states,
            kind=manifest.kind,
            manifest=manifest,
            location=self.describe(manifest.job_id, manifest.pipeline_id, manifest.checkpoint_id),
        )


def _unverified(where: str, what: str, err: CheckpointStorageError) -> CheckpointStorageError:
    return CheckpointStorageError(f"{where}: could not read {what}, so it was not verified (not damage): {err}")


class CheckpointStorageFactory:
    """SeaTunnel's ``CheckpointStorageFactory``: one per ``storage.type``.

    Register a subclass under the entry-point group ``seatunnel_ckpt.storage``
    (``name = "package.module:FactoryClass"``); the entry name is the storage type.
    """

    identifier = "abstract"

    def validate(self, plugin_config: Mapping[str, Any], key_prefix: str) -> list[str]:
        """Check ``plugin_config`` without touching the network. Raise ``ConfigError``
        naming ``{key_prefix}.<key>`` for a fatal problem; return warnings (unknown
        keys, deprecations) as one-line strings."""
        return []

    def create(self, plugin_config: Mapping[str, Any], max_retained: int = DEFAULT_MAX_RETAINED) -> CheckpointStorage:
        raise NotImplementedError
