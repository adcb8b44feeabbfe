"""``CheckpointStorage`` on top of any ``FileSystem``: the layout, done once.

Every built-in backend (local, memory, HDFS, S3, OSS) is this class plus a different
``FileSystem``; so atomicity, checksums, latest-valid selection and retention are the
same code on all of them, and one contract suite tests them all.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import CheckpointStorageError
from .api import DEFAULT_MAX_RETAINED, CheckpointEntry, CheckpointStorage
from .filesystem import Bytes, FileSystem, overridden
from .layout import METADATA, Layout, validate_job_id
from .model import (
    CheckpointIdTaken,
    CheckpointManifest,
    CheckpointNotFoundError,
    CorruptCheckpointError,
    StateHandle,
    is_plain_name,
)

#: JSON documents under the job directory (job.json, attempts/*.json) stay small
MAX_DOCUMENT_BYTES = 1 << 20
#: documents up to this size are indented, for people who read job.json with cat; larger
#: ones (history segments) stay compact, where indentation would triple their size
INDENT_BELOW_BYTES = 64 * 1024


def _document_bytes(document: Mapping[str, Any]) -> bytes:
    text = json.dumps(document, sort_keys=True, separators=(",", ":"))
    if len(text) < INDENT_BELOW_BYTES:
        text = json.dumps(document, sort_keys=True, indent=1)
    return text.encode("utf-8")


class FileSystemCheckpointStorage(CheckpointStorage):
    def __init__(
        self,
        filesystem: FileSystem,
        namespace: str,
        max_retained: int = DEFAULT_MAX_RETAINED,
        storage_type: str = "hdfs",
    ):
        self.fs = filesystem
        self.layout = Layout(namespace)
        self.max_retained = max_retained
        self.storage_type = storage_type

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.fs.describe(self.layout.namespace)}, max_retained={self.max_retained})"

    # ---- listing ------------------------------------------------------------------
    def list_jobs(self) -> list[str]:
        names = [e.name for e in self.fs.list_dir(self.layout.namespace.rstrip("/") or "/") if e.is_dir]
        jobs = []
        for name in names:
            try:
                jobs.append(validate_job_id(name))
            except Exception:  # a foreign directory in the namespace is not a job
                continue
        return sorted(jobs)

    def list_pipelines(self, job_id: str) -> list[int]:
        ids = []
        for entry in self.fs.list_dir(self.layout.job_dir(job_id)):
            pipeline_id = self.layout.parse_pipeline_dir(entry.name) if entry.is_dir else None
            if pipeline_id is not None:
                ids.append(pipeline_id)
        return sorted(ids)

    def list_checkpoint_entries(self, job_id: str, pipeline_id: int) -> list[CheckpointEntry]:
        """Every checkpoint directory with its files: ONE prefix listing on an object
        store; elsewhere a listing of the pipeline directory plus one per checkpoint
        directory (the same number of requests as probing each ``_metadata``, and the
        file sizes come with it, so reading the latest needs no further listing)."""
        pipeline_dir = self.layout.pipeline_dir(job_id, pipeline_id)
        if self.fs.flat_listing:
            return self._entries_from_tree(pipeline_dir)
        entries = []
        for item in self.fs.list_dir(pipeline_dir):
            parsed = self.layout.parse_checkpoint_dir(item.name) if item.is_dir else None
            if parsed is None:
                continue
            checkpoint_id, savepoint = parsed
            directory = item.path.rstrip("/")
            files = {e.name: e.size for e in self.fs.list_dir(directory) if not e.is_dir}
            entries.append(_entry(checkpoint_id, savepoint, files.get(METADATA), self.fs.describe(directory), files))
        return sorted(entries)

    def _entries_from_tree(self, pipeline_dir: str) -> list[CheckpointEntry]:
        prefix = pipeline_dir + "/"
        found: dict[str, dict[str, int] | None] = {}
        for info in self.fs.walk_files(pipeline_dir):
            if not info.path.startswith(prefix):
                continue
            top, sep, rest = info.path[len(prefix) :].partition("/")
            if not sep or self.layout.parse_checkpoint_dir(top) is None:
                continue  # a file directly in the pipeline directory, or a foreign directory
            files = found.setdefault(top, {})
            if "/" in rest:  # something nested: let the generic paths list and delete it
                found[top] = None
            elif files is not None:
                files[rest] = info.size
        entries = []
        for name, files in found.items():
            checkpoint_id, savepoint = self.layout.parse_checkpoint_dir(name)  # type: ignore[misc]
            directory = f"{prefix}{name}"
            if files is not None:
                metadata_size = files.get(METADATA)
            else:
                metadata = self.fs.info(f"{directory}/{METADATA}")
                metadata_size = metadata.size if metadata is not None else None
            entries.append(_entry(checkpoint_id, savepoint, metadata_size, self.fs.describe(directory), files))
        return sorted(entries)

    # ---- manifests and state --------------------------------------------------------
    def _dir(self, job_id: str, pipeline_id: int, checkpoint_id: int, savepoint: bool) -> str:
        return self.layout.checkpoint_dir(job_id, pipeline_id, checkpoint_id, savepoint)

    def read_manifest(
        self, job_id: str, pipeline_id: int, checkpoint_id: int, savepoint: bool = False
    ) -> CheckpointManifest:
        path = f"{self._dir(job_id, pipeline_id, checkpoint_id, savepoint)}/{METADATA}"
        where = self.fs.describe(path)
        try:
            raw = self.fs.read(path)
        except FileNotFoundError:
            raise CheckpointNotFoundError(f"{where}: no completed checkpoint {checkpoint_id}") from None
        if not raw:
            raise CheckpointNotFoundError(
                f"{where}: checkpoint {checkpoint_id} was fenced (its driver lost the job), never completed"
            )
        manifest = CheckpointManifest.from_bytes(raw, where)
        if (manifest.job_id, manifest.pipeline_id, manifest.checkpoint_id) != (job_id, pipeline_id, checkpoint_id):
            raise CorruptCheckpointError(
                f"{where}: manifest describes job {manifest.job_id!r} pipeline {manifest.pipeline_id} "
                f"checkpoint {manifest.checkpoint_id}, not the directory it is in"
            )
        return manifest

    def write_state(
        self, job_id: str, pipeline_id: int, checkpoint_id: int, name: str, data: Bytes, savepoint: bool = False
    ) -> StateHandle:
        digest = self.fs.write_atomic_hashed(
            self._state_path(job_id, pipeline_id, checkpoint_id, name, savepoint), data
        )
        return StateHandle(size=len(data), sha256=digest, file=name)

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
        if overridden(self, "write_state", FileSystemCheckpointStorage):
            return super().write_state_pieces(job_id, pipeline_id, checkpoint_id, name, size, pieces, savepoint)
        path = self._state_path(job_id, pipeline_id, checkpoint_id, name, savepoint)
        digest = self.fs.write_atomic_hashed_pieces(path, size, pieces)
        return StateHandle(size=size, sha256=digest, file=name)

    def _state_path(self, job_id: str, pipeline_id: int, checkpoint_id: int, name: str, savepoint: bool) -> str:
        if not is_plain_name(name) or name.startswith(("_", ".")):
            raise CheckpointStorageError(f"state file name {name!r} must be a plain name not starting with '_' or '.'")
        return f"{self._dir(job_id, pipeline_id, checkpoint_id, savepoint)}/{name}"

    def read_state(
        self, job_id: str, pipeline_id: int, checkpoint_id: int, handle: StateHandle, savepoint: bool = False
    ) -> bytes:
        if handle.inline is not None:
            return handle.verify(handle.inline, self.describe(job_id, pipeline_id, checkpoint_id) + " (inline state)")
        path = f"{self._dir(job_id, pipeline_id, checkpoint_id, savepoint)}/{handle.file}"
        return handle.verify(self.fs.read(path), self.fs.describe(path))

    def state_file_sizes(
        self, job_id: str, pipeline_id: int, checkpoint_id: int, savepoint: bool = False
    ) -> dict[str, int]:
        directory = self._dir(job_id, pipeline_id, checkpoint_id, savepoint)
        return {e.name: e.size for e in self.fs.list_dir(directory) if not e.is_dir}

    def write_state_and_manifest(self, manifest: CheckpointManifest, name: str, data: bytes) -> str:
        if not is_plain_name(name) or name.startswith(("_", ".")):
            raise CheckpointStorageError(f"state file name {name!r} must be a plain name not starting with '_' or '.'")
        savepoint = manifest.kind.value == "savepoint"
        directory = self._dir(manifest.job_id, manifest.pipeline_id, manifest.checkpoint_id, savepoint)

        def manifest_bytes(digest: str) -> bytes:
            handle = StateHandle(size=len(data), sha256=digest, file=name)
            return manifest.with_updates(coordinator_state=handle).to_bytes()

        try:
            self.fs.write_atomic_hashed_then(
                f"{directory}/{name}", data, f"{directory}/{METADATA}", manifest_bytes, exclusive=True
            )
        except FileExistsError:
            raise self._id_taken(manifest) from None
        return self.fs.describe(directory)

    def write_manifest(self, manifest: CheckpointManifest) -> str:
        """Created, never replaced: a checkpoint id is completed once per job, ever."""
        savepoint = manifest.kind.value == "savepoint"
        directory = self._dir(manifest.job_id, manifest.pipeline_id, manifest.checkpoint_id, savepoint)
        try:
            self.fs.create_new(f"{directory}/{METADATA}", manifest.to_bytes())
        except FileExistsError:
            raise self._id_taken(manifest) from None
        return self.fs.describe(directory)

    def landed_at(self, manifest: CheckpointManifest) -> str | None:
        """Where this exact ``_metadata`` is, if it is in storage (a write that raised may
        have landed with its answer lost); None when it is not. Raises when storage
        cannot tell."""
        savepoint = manifest.kind.value == "savepoint"
        directory = self._dir(manifest.job_id, manifest.pipeline_id, manifest.checkpoint_id, savepoint)
        try:
            found = self.fs.read(f"{directory}/{METADATA}")
        except FileNotFoundError:
            return None
        return self.fs.describe(directory) if found == manifest.to_bytes() else None

    def _id_taken(self, manifest: CheckpointManifest) -> CheckpointIdTaken:
        savepoint = manifest.kind.value == "savepoint"
        where = self.describe(manifest.job_id, manifest.pipeline_id, manifest.checkpoint_id, savepoint)
        return CheckpointIdTaken(f"{where}: checkpoint {manifest.checkpoint_id} was already completed or fenced")

    def fence_checkpoint_id(self, job_id: str, pipeline_id: int, checkpoint_id: int, savepoint: bool = False) -> bool:
        try:
            self.fs.create_new(f"{self._dir(job_id, pipeline_id, checkpoint_id, savepoint)}/{METADATA}", b"")
        except FileExistsError:
            return False
        return True

    def delete_checkpoint_dir(self, job_id: str, pipeline_id: int, checkpoint_id: int, savepoint: bool = False) -> None:
        directory = self._dir(job_id, pipeline_id, checkpoint_id, savepoint)
        self.fs.delete(f"{directory}/{METADATA}")
        self.fs.delete(directory, recursive=True)

    def delete_state_files(self, job_id: str, pipeline_id: int, checkpoint_id: int, savepoint: bool = False) -> None:
        directory = self._dir(job_id, pipeline_id, checkpoint_id, savepoint)
        names = [e.name for e in self.fs.list_dir(directory) if not e.is_dir and e.name != METADATA]
        if names:
            self.fs.delete_files(f"{directory}/{name}" for name in names)

    def delete_aborted_state(
        self, job_id: str, pipeline_id: int, checkpoint_id: int, run: int, savepoint: bool = False
    ) -> None:
        directory = self._dir(job_id, pipeline_id, checkpoint_id, savepoint)
        entries = {e.name: e for e in self.fs.list_dir(directory) if not e.is_dir}
        metadata = entries.get(METADATA)
        if (
            metadata is not None
            and metadata.size > 0
            and self._written_by(job_id, pipeline_id, checkpoint_id, savepoint, run)
        ):
            # The run's own _metadata write landed but its answer was lost: un-complete
            # the checkpoint first, so it never looks complete with its state gone.
            self.fs.delete(f"{directory}/{METADATA}")
        names = [name for name in entries if Layout.state_file_run(name) == run]
        if names:
            self.fs.delete_files(f"{directory}/{name}" for name in names)
        if not self.fs.flat_listing:
            try:  # not recursive: only an empty directory goes, never a file written since
                self.fs.delete(directory)
            except CheckpointStorageError:
                pass  # another run's files or a _metadata: not ours to delete

    def _written_by(self, job_id: str, pipeline_id: int, checkpoint_id: int, savepoint: bool, run: int) -> bool:
        """Whether the checkpoint's ``_metadata`` was written by run attempt ``run`` (the
        engine records its attempt in the manifest's properties); a damaged one is not
        claimed by anyone."""
        try:
            manifest = self.read_manifest(job_id, pipeline_id, checkpoint_id, savepoint)
        except (CheckpointNotFoundError, CorruptCheckpointError):
            return False
        return manifest.properties.get("attempt") == run

    def delete_checkpoint_dirs(self, job_id: str, pipeline_id: int, entries: Iterable[CheckpointEntry]) -> None:
        """Batched: every ``_metadata`` in one request, then every other file in one
        more (object stores, whose listing gave the file names), or a recursive delete
        per directory (file systems with real directories)."""
        listed = [(self._dir(job_id, pipeline_id, e.checkpoint_id, e.savepoint), e) for e in entries]
        if not listed:
            return
        # Every victim's _metadata, even one listed as in flight: its writer may have
        # completed it since, and it must not stay "completed" with its state gone.
        self.fs.delete_files(f"{directory}/{METADATA}" for directory, _ in listed)
        if self.fs.flat_listing and all(e.files is not None for _, e in listed):
            # Directories are key prefixes: they go with their last file.
            self.fs.delete_files(
                f"{directory}/{name}" for directory, e in listed for name in (e.files or {}) if name != METADATA
            )
        else:
            for directory, _ in listed:
                self.fs.delete(directory, recursive=True)

    def delete_job(self, job_id: str) -> None:
        job_dir = self.layout.job_dir(job_id)
        # Un-complete every checkpoint first so a crash midway leaves nothing that
        # looks restorable with half its state gone.
        for pipeline_id in self.list_pipelines(job_id):
            for entry in self.list_checkpoint_entries(job_id, pipeline_id):
                if entry.completed:
                    self.fs.delete(f"{self._dir(job_id, pipeline_id, entry.checkpoint_id, entry.savepoint)}/{METADATA}")
        self.fs.delete(job_dir, recursive=True)

    # ---- job documents --------------------------------------------------------------
    def _document_path(self, job_id: str, relative_path: str) -> str:
        parts = relative_path.split("/")
        if not relative_path or any(p in ("", ".", "..") or "\x00" in p for p in parts):
            raise CheckpointStorageError(f"document path {relative_path!r} is not a plain relative path")
        return f"{self.layout.job_dir(job_id)}/{relative_path}"

    def read_document(self, job_id: str, relative_path: str, max_bytes: int | None = None) -> dict[str, Any] | None:
        path = self._document_path(job_id, relative_path)
        try:
            raw = self.fs.read(path)
        except FileNotFoundError:
            return None
        limit = max_bytes or MAX_DOCUMENT_BYTES
        if len(raw) > limit:
            raise CorruptCheckpointError(f"{self.fs.describe(path)}: larger than {limit} bytes")
        try:
            document = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise CorruptCheckpointError(f"{self.fs.describe(path)}: not valid JSON") from None
        if not isinstance(document, dict):
            raise CorruptCheckpointError(f"{self.fs.describe(path)}: expected a JSON object")
        return document

    def write_document(self, job_id: str, relative_path: str, document: Mapping[str, Any]) -> None:
        data = _document_bytes(document)
        self.fs.write_atomic(self._document_path(job_id, relative_path), data)

    def create_document(self, job_id: str, relative_path: str, document: Mapping[str, Any]) -> None:
        data = _document_bytes(document)
        self.fs.create_new(self._document_path(job_id, relative_path), data)

    def list_documents(self, job_id: str, relative_dir: str) -> list[str]:
        entries = self.fs.list_dir(self._document_path(job_id, relative_dir))
        return sorted(e.name for e in entries if not e.is_dir and e.name.endswith(".json"))

    def delete_document(self, job_id: str, relative_path: str) -> None:
        self.fs.delete(self._document_path(job_id, relative_path))

    def describe(
        self,
        job_id: str = "",
        pipeline_id: int | None = None,
        checkpoint_id: int | None = None,
        savepoint: bool = False,
    ) -> str:
        if not job_id:
            return self.fs.describe(self.layout.namespace)
        if pipeline_id is None:
            return self.fs.describe(self.layout.job_dir(job_id))
        if checkpoint_id is None:
            return self.fs.describe(self.layout.pipeline_dir(job_id, pipeline_id))
        return self.fs.describe(self.layout.checkpoint_dir(job_id, pipeline_id, checkpoint_id, savepoint))


def _entry(
    checkpoint_id: int, savepoint: bool, metadata_size: int | None, location: str, files: dict[str, int] | None
) -> CheckpointEntry:
    """A manifest is never empty; an empty ``_metadata`` fences the id."""
    completed = metadata_size is not None and metadata_size > 0
    return CheckpointEntry(checkpoint_id, savepoint, completed, location, files, fenced=metadata_size == 0)
