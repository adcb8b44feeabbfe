"""In-process file system: the reference implementation and the test double.

Files live in a class-level dict keyed by ``store_name``, so every instance with the
same name (including an unpickled copy in the same process) sees the same data, like
Flink's JobManagerCheckpointStorage or fsspec's memory file system. Nothing survives
the process, and executors in other processes see their own, empty stores.

Directories are implied by the files below them, as on an object store: a directory
exists while it contains a file and vanishes with its last file.
"""

from __future__ import annotations

import errno
import posixpath
import threading
import time
from typing import Any, ClassVar

from airflow_provider_seatunnel_ckpt.errors import CheckpointStorageError
from airflow_provider_seatunnel_ckpt.storage.filesystem import Bytes, FileInfo, FileSystem


def _norm(path: str) -> str:
    return path.rstrip("/") or "/"


def _dir_prefix(path: str) -> str:
    return "/" if path == "/" else path + "/"


class MemoryFileSystem(FileSystem):
    backend = "memory"

    #: store name -> {absolute path -> (content, mtime)}
    _stores: ClassVar[dict[str, dict[str, tuple[bytes, float]]]] = {}
    _lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, store_name: str = "default"):
        self.store_name = store_name

    @classmethod
    def from_plugin_config(cls, plugin_config: dict[str, Any]) -> MemoryFileSystem:
        return cls(str(plugin_config.get("memory.store", "default")))

    @classmethod
    def clear_all(cls) -> None:
        """Forget every store (tests)."""
        with cls._lock:
            cls._stores.clear()

    def __repr__(self) -> str:
        return f"MemoryFileSystem(store_name={self.store_name!r})"

    def describe(self, path: str) -> str:
        return f"memory://{self.store_name}{path}"

    @property
    def _files(self) -> dict[str, tuple[bytes, float]]:
        # callers hold the lock
        return self._stores.setdefault(self.store_name, {})

    # ---- primitives -------------------------------------------------------------
    def read(self, path: str, offset: int = 0, length: int | None = None) -> bytes:
        if offset < 0 or (length is not None and length < 0):
            raise ValueError(f"offset and length must be >= 0, got {offset} and {length}")
        with self._lock:
            entry = self._files.get(_norm(path))
        if entry is None:
            raise FileNotFoundError(errno.ENOENT, "memory: no such file", self.describe(path))
        end = None if length is None else offset + length
        return entry[0][offset:end]

    def write_atomic(self, path: str, data: Bytes) -> None:
        path = _norm(path)
        content = bytes(data)  # a private immutable copy: later changes to data don't leak in
        with self._lock:
            self._put_locked(path, content)

    def _create_new(self, path: str, data: Bytes) -> None:
        """Checked and written under the store lock: atomic against other creators."""
        path = _norm(path)
        content = bytes(data)
        with self._lock:
            if path in self._files:
                raise FileExistsError(errno.EEXIST, "memory: already exists", self.describe(path))
            self._put_locked(path, content)

    def _put_locked(self, path: str, content: bytes) -> None:
        files = self._files
        if self._is_dir_locked(files, path):
            raise CheckpointStorageError(f"memory: cannot write {self.describe(path)}: is a directory")
        parent = posixpath.dirname(path)
        while parent != "/":
            if parent in files:
                raise CheckpointStorageError(f"memory: cannot write {self.describe(path)}: {parent} is a file")
            parent = posixpath.dirname(parent)
        files[path] = (content, time.time())

    def list_dir(self, path: str) -> list[FileInfo]:
        prefix = _dir_prefix(_norm(path))
        children: dict[str, FileInfo] = {}
        with self._lock:
            for key, (content, mtime) in self._files.items():
                if not key.startswith(prefix):
                    continue
                name, sep, _ = key[len(prefix) :].partition("/")
                if sep:
                    children.setdefault(name, FileInfo(prefix + name, 0, True))
                else:
                    children[name] = FileInfo(key, len(content), False, mtime)
        return [children[name] for name in sorted(children)]

    def delete(self, path: str, recursive: bool = False) -> None:
        path = _norm(path)
        with self._lock:
            files = self._files
            if recursive:
                prefix = _dir_prefix(path)
                for key in [k for k in files if k.startswith(prefix)]:
                    del files[key]
            elif self._is_dir_locked(files, path):
                raise CheckpointStorageError(
                    f"memory: cannot delete {self.describe(path)}: non-empty directory (use recursive=True)"
                )
            files.pop(path, None)

    def info(self, path: str) -> FileInfo | None:
        path = _norm(path)
        with self._lock:
            files = self._files
            entry = files.get(path)
            if entry is not None:
                return FileInfo(path, len(entry[0]), False, entry[1])
            if path == "/" or self._is_dir_locked(files, path):
                return FileInfo(path, 0, True)
        return None

    @staticmethod
    def _is_dir_locked(files: dict[str, Any], path: str) -> bool:
        prefix = _dir_prefix(path)
        return any(key.startswith(prefix) for key in files)
