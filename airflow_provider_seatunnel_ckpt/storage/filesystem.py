"""The file-system primitives every storage backend implements.

Modelled on fsspec's AbstractFileSystem: a backend implements five primitives
(``read``, ``write_atomic``, ``list_dir``, ``delete``, ``info``); everything else is
derived here. Checkpoint logic (layout, manifests, retention) lives above this layer
in ``fs_storage.py`` and is shared by all backends.

Contract for implementers:

* Paths are absolute POSIX paths (``/seatunnel/checkpoint/job/...``), already
  validated by the caller. Object stores map them to keys by dropping the leading ``/``.
* "Not found" is the only condition that becomes a falsy result (``info`` -> None,
  ``list_dir`` -> [], ``delete`` -> no-op). ``read`` of a missing file raises
  ``FileNotFoundError``. Auth, permission, network and server errors always raise
  ``CheckpointStorageError`` naming the backend, bucket or host, and path: never the
  credentials, so a denied read can never look like "no checkpoint".
* ``write_atomic`` is all-or-nothing: a concurrent or later reader sees the old
  content, nothing, or the complete new content; never a prefix.
* Transient errors are retried inside the backend (``retry.call_with_retries``).
* Instances are picklable (configuration only; clients are created lazily per
  process) and thread-safe.
"""

from __future__ import annotations

import hashlib
import posixpath
import threading
from dataclasses import dataclass
from typing import Iterator

Bytes = bytes | bytearray | memoryview

#: below this size hashing inline is cheaper than starting a thread
_HASH_IN_PARALLEL_FROM = 1 << 20


@dataclass(frozen=True)
class FileInfo:
    path: str  #: absolute POSIX path
    size: int
    is_dir: bool
    mtime: float | None = None  #: seconds since the epoch; informational only

    @property
    def name(self) -> str:
        return posixpath.basename(self.path.rstrip("/"))


class FileSystem:
    """Base class: five primitives to implement, the rest derived."""

    #: backend name used in messages and logs, e.g. ``"s3"``
    backend = "abstract"

    # ---- primitives -------------------------------------------------------------
    def read(self, path: str, offset: int = 0, length: int | None = None) -> bytes:
        """Return the bytes of ``path`` (a slice when offset/length given)."""
        raise NotImplementedError

    def write_atomic(self, path: str, data: Bytes) -> None:
        """Create or replace ``path`` with ``data``, all or nothing; parents are implied."""
        raise NotImplementedError

    def list_dir(self, path: str) -> list[FileInfo]:
        """Direct children of directory ``path``; [] when it does not exist."""
        raise NotImplementedError

    def delete(self, path: str, recursive: bool = False) -> None:
        """Remove a file, or a directory tree when ``recursive``; missing is fine."""
        raise NotImplementedError

    def info(self, path: str) -> FileInfo | None:
        """Metadata of ``path``; None only when it does not exist."""
        raise NotImplementedError

    def describe(self, path: str) -> str:
        """Human-readable location for messages, e.g. ``s3://bucket/key`` (no secrets)."""
        return f"{self.backend}://{path.lstrip('/')}"

    # ---- derived ----------------------------------------------------------------
    def exists(self, path: str) -> bool:
        return self.info(path) is not None

    def walk_files(self, path: str) -> Iterator[FileInfo]:
        """Every file below directory ``path``, depth first."""
        for entry in self.list_dir(path):
            if entry.is_dir:
                yield from self.walk_files(entry.path)
            else:
                yield entry

    def read_text(self, path: str) -> str:
        return self.read(path).decode("utf-8")

    def write_atomic_hashed(self, path: str, data: Bytes) -> str:
        """``write_atomic`` and return the sha256 hex digest of ``data``.

        For large data the digest is computed on another thread while the bytes are
        written: hashlib and file/socket I/O both release the GIL, so a checkpoint
        pays max(write, hash) instead of their sum.
        """
        if len(data) < _HASH_IN_PARALLEL_FROM:
            self.write_atomic(path, data)
            return hashlib.sha256(data).hexdigest()
        digest: list[str] = []
        hasher = threading.Thread(target=lambda: digest.append(hashlib.sha256(data).hexdigest()), daemon=True)
        hasher.start()
        try:
            self.write_atomic(path, data)
        finally:
            hasher.join()
        return digest[0] if digest else hashlib.sha256(data).hexdigest()

    def move(self, source: str, destination: str) -> None:
        """Publish ``source`` under ``destination`` and remove ``source``.

        Idempotent, so a commit can be replayed after a crash: when ``source`` is gone
        and ``destination`` exists, the move already happened. The default copies then
        deletes (what object stores do anyway); backends with a native rename override it.
        """
        try:
            data = self.read(source)
        except FileNotFoundError:
            if self.exists(destination):
                return
            raise
        self.write_atomic(destination, data)
        self.delete(source)
