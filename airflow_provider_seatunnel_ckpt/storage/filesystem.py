"""The file-system primitives every storage backend implements.

Modelled on fsspec's AbstractFileSystem: a backend implements five primitives (``read``,
``write_atomic``, ``list_dir``, ``delete``, ``info``) and, to fence drivers, the store's
own create-or-fail (``_create_new``); everything else is derived here, and may be
overridden where a backend does better. Checkpoint logic (layout, manifests, retention)
lives above, in ``fs_storage.py``, shared by all backends.

The contract for implementers (paths, "not found", atomic and create-only writes,
retries, pickling): docs/storage.md, "Writing a storage plugin".
"""

from __future__ import annotations

import errno
import hashlib
import io
import logging
import os
import posixpath
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from ..extras import MissingExtra, require
from . import retry

if TYPE_CHECKING:  # pragma: no cover
    from ..errors import CheckpointStorageError

log = logging.getLogger(__name__)

T = TypeVar("T")

Bytes = bytes | bytearray | memoryview

#: below this size hashing inline is cheaper than starting a thread
_HASH_IN_PARALLEL_FROM = 1 << 20


def _sha256_hex(data: Bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def overridden(obj: object, name: str, owner: type) -> bool:
    """Whether a subclass replaced ``owner``'s method ``name`` on ``obj``: a fast path
    that bypasses it must then give way (a plugin may encrypt or compress there)."""
    return getattr(type(obj), name) is not getattr(owner, name)


def check_pieces_size(written: int, size: int) -> None:
    if written != size:  # a writer bug; the caller's temp file or buffer is dropped
        raise ValueError(f"the pieces came to {written} bytes, not the {size} announced")


def join_pieces(size: int, pieces: Iterable[Bytes]) -> Bytes:
    """``pieces`` as one buffer of ``size`` bytes (a lone piece as it is, not copied).
    Each piece is let go once copied, so a generator's slices never pile up."""
    iterator = iter(pieces)
    first = next(iterator, b"")
    if len(first) >= size:
        check_pieces_size(len(first) + sum(len(piece) for piece in iterator), size)
        return first
    out = bytearray(size)
    pos = len(first)
    out[:pos] = first
    del first
    for piece in iterator:
        end = pos + len(piece)
        if end > size:
            check_pieces_size(end, size)
        out[pos:end] = piece
        pos = end
    check_pieces_size(pos, size)
    return out


_POOL: tuple[int, ThreadPoolExecutor] | None = None
_POOL_LOCK = threading.Lock()

_WARNED: set[object] = set()
_WARNED_LOCK = threading.Lock()


def warn_once(key: object, message: str, *args: object) -> None:
    """Log ``message`` as a warning the first time this process sees ``key``."""
    with _WARNED_LOCK:
        if key in _WARNED:
            return
        _WARNED.add(key)
    log.warning(message, *args)


def in_background(fn: Callable[..., T], *args: object) -> Future[T]:
    """Run ``fn(*args)`` on this process's small pool of warm threads (hashing, fsync:
    work that releases the GIL); cheaper than starting a thread per call."""
    global _POOL
    pool = _POOL
    if pool is None or pool[0] != os.getpid():
        with _POOL_LOCK:  # first use, or a forked child (the parent's threads are not in it)
            if _POOL is None or _POOL[0] != os.getpid():
                _POOL = (os.getpid(), ThreadPoolExecutor(max_workers=8, thread_name_prefix="storage-io"))
            pool = _POOL
    return pool[1].submit(fn, *args)


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

    #: the pip extra that installs the client library this backend imports (extras.py),
    #: e.g. ``"s3"``; None when the core has all it needs
    extra: str | None = None
    #: how the message naming that extra names the backend, e.g. ``"S3"``
    title = ""

    #: True when ``walk_files`` is ONE listing request for a whole tree (object stores:
    #: a prefix listing without delimiter), so callers may prefer it to a listing per
    #: directory plus a probe per file.
    flat_listing = False

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

    @classmethod
    def require_client(cls, key: str = "", what: str = "checkpoint storage") -> None:
        """``MissingExtra`` (one line: the ``pip install`` to run) unless this backend's
        client library is installed. The core installs none of them and the backends
        import theirs only to build a client, so this runs where a configuration selects
        the backend (``key``: the option that did) and again where a client is built
        (a file system unpickled on a Spark node without the extra)."""
        if cls.extra is not None:
            require(cls.extra, f"{cls.title} {what}", key)

    # ---- for network backends --------------------------------------------------------
    #: the shared retry policy (``retry.py``); network backends take these as arguments
    retry_attempts = retry.DEFAULT_ATTEMPTS
    retry_initial_wait_s = retry.DEFAULT_INITIAL_WAIT_S
    retry_max_wait_s = retry.DEFAULT_MAX_WAIT_S

    def _with_retries(
        self,
        op: str,
        path: str,
        fn: Callable[[], T],
        *,
        is_transient: Callable[[BaseException], bool],
        what: str,
        to_error: Callable[[str, str, BaseException], CheckpointStorageError] | None = None,
    ) -> T:
        """Run one request under the shared retry policy with this instance's settings.
        With ``to_error``, whatever still fails (other than ``FileNotFoundError``,
        ``FileExistsError``, ``CheckpointStorageError`` and ``MissingExtra``) is raised as
        ``to_error(op, path, exc)``."""
        try:
            return retry.call_with_retries(
                fn,
                is_transient=is_transient,
                what=what,
                attempts=self.retry_attempts,
                initial_wait_s=self.retry_initial_wait_s,
                max_wait_s=self.retry_max_wait_s,
            )
        except (FileNotFoundError, FileExistsError, MissingExtra):  # MissingExtra: no client to retry with
            raise
        except Exception as exc:
            from ..errors import CheckpointStorageError

            if to_error is None or isinstance(exc, CheckpointStorageError):
                raise
            raise to_error(op, path, exc) from exc

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

    def delete_files(self, paths: Iterable[str]) -> None:
        """Remove several files (not directories); missing ones are fine. Object stores
        override it with one batch request per 1000 keys; the order within a batch is
        the store's, so a caller that needs "A gone before B" makes two calls."""
        for path in paths:
            self.delete(path)

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
        digest = in_background(_sha256_hex, data)
        try:
            self.write_atomic(path, data)
        finally:
            result = digest.result()
        return result

    def write_atomic_hashed_pieces(self, path: str, size: int, pieces: Iterable[Bytes]) -> str:
        """``write_atomic_hashed`` of ``pieces`` put together (``size`` bytes in all):
        for data produced piece by piece, such as an encoded checkpoint state. The
        default puts them together in one buffer; a backend that can write them as they
        come overrides it (local disk)."""
        return self.write_atomic_hashed(path, join_pieces(size, pieces))

    def write_atomic_hashed_then(
        self,
        path: str,
        data: Bytes,
        then_path: str,
        then_data: Callable[[str], Bytes],
        exclusive: bool = False,
    ) -> str:
        """Write ``data`` to ``path`` (as ``write_atomic_hashed``), then
        ``then_data(sha256 of data)`` to ``then_path``; returns the sha256.

        ``then_path`` never exists, not even after a crash, before ``path`` is complete:
        this is how a checkpoint's state file and the ``_metadata`` that completes it are
        written. With ``exclusive``, ``then_path`` is created as by ``create_new``:
        ``FileExistsError`` when it exists (``path`` may then stay written; no one trusts
        it without ``then_path``). The default does one write after the other; a backend
        may overlap them (local: both files are fsynced in one journal commit, then
        renamed)."""
        digest = self.write_atomic_hashed(path, data)
        if exclusive:
            self.create_new(then_path, then_data(digest))
        else:
            self.write_atomic(then_path, then_data(digest))
        return digest

    def create_new(self, path: str, data: Bytes) -> None:
        """Create ``path`` holding ``data`` only if nothing is there; all or nothing, and
        parents implied, like ``write_atomic``.

        Atomic against concurrent creators: of several calls for one path exactly one
        succeeds, every other raises ``FileExistsError``; two drivers of one job (an
        Airflow zombie and its retry) are fenced this way. When the path already holds
        exactly ``data`` the call returns normally: that is our own create whose answer
        was lost and which the retry policy sent again (so a caller must make what it
        creates distinguishable from what another driver would create)."""
        try:
            self._create_new(path, data)
        except FileExistsError:
            self._check_created(path, data)

    def _create_new(self, path: str, data: Bytes) -> None:
        """The backend's create-or-fail write: raise ``FileExistsError`` when ``path``
        exists. Backends override it with their store's atomic operation; this fallback
        (for third-party backends) checks, then writes, so two drivers that both check
        before either writes are not fenced: it warns once per backend."""
        warn_once(
            ("create_new", type(self)),
            "%s (%s): create_new is not atomic on this backend (a check, then a write); "
            "concurrent drivers of one job are not fenced",
            self.backend,
            type(self).__qualname__,
        )
        self._create_new_unfenced(path, data)

    def _create_new_unfenced(self, path: str, data: Bytes) -> None:
        """``exists`` then ``write_atomic``: ``create_new`` where the store has nothing better."""
        if self.exists(path):
            raise FileExistsError(errno.EEXIST, f"{self.backend}: already exists", self.describe(path))
        self.write_atomic(path, data)

    def _check_created(self, path: str, data: Bytes) -> None:
        """After a refused create: return when ``path`` holds exactly ``data`` (our own
        earlier attempt landed), else raise ``FileExistsError``."""
        refused = FileExistsError(errno.EEXIST, f"{self.backend}: already exists", self.describe(path))
        try:
            existing = self.read(path)
        except FileNotFoundError:  # created by someone else, and removed again since
            raise refused from None
        if existing != (data if isinstance(data, (bytes, bytearray)) else bytes(data)):
            raise refused from None

    def open_new(self, path: str) -> NewFile:
        """A new file at ``path`` (a name no one else uses), written piece by piece.

        For data that no reader trusts until something else names it (a table commit
        naming its data files): until ``sync()`` returns, ``path`` may be missing or
        hold part of what was written; once it returns, ``path`` holds everything
        written, durably. ``discard()`` removes what exists of it. The default keeps
        the bytes in memory and writes them with ``write_atomic`` at ``sync``; the
        local file system writes them to disk as they come."""
        return NewFile(self, path)

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


class NewFile:
    """A file being written (``FileSystem.open_new``): a binary, write-only file object
    (``write``, ``tell``, ``flush``, ``close``, ``closed``: what pyarrow and ``io`` writers
    expect), plus ``sync`` (everything written is durable under ``path``) and ``discard``.

    ``close`` only ends writing; the file is complete once ``sync`` returns, which a
    caller may do later and on another thread (one at a time). This default buffers in
    memory and writes at ``sync``."""

    def __init__(self, fs: FileSystem, path: str):
        self.fs = fs
        self.path = path
        self._buffer: io.BytesIO | None = io.BytesIO()
        self._size = 0
        self._synced = False
        self.closed = False

    def write(self, data: Bytes) -> int:
        if self.closed or self._buffer is None:
            raise ValueError(f"{self.fs.describe(self.path)}: write to a closed file")
        written = self._buffer.write(data)
        self._size += written
        return written

    def tell(self) -> int:
        return self._size

    def flush(self) -> None:
        """Nothing to do: bytes reach storage at ``sync``."""

    def close(self) -> None:
        self.closed = True

    def sync(self) -> None:
        """End writing and make everything written durable under ``path``; a second call
        does nothing."""
        self.close()
        if self._synced:
            return
        if self._discarded():
            raise ValueError(f"{self.fs.describe(self.path)}: sync after discard")
        self._make_durable()
        self._synced = True

    def _discarded(self) -> bool:
        return self._buffer is None

    def _make_durable(self) -> None:
        assert self._buffer is not None
        with self._buffer.getbuffer() as data:
            self.fs.write_atomic(self.path, data)
        self._buffer = None

    def discard(self) -> None:
        """End writing and remove whatever exists of the file (synced or not)."""
        self.closed = True
        self._buffer = None
        if self._synced:
            self.fs.delete(self.path)
            self._synced = False

    def __enter__(self) -> NewFile:
        return self

    def __exit__(self, exc_type: object, *_: object) -> None:
        """Sync on success; discard when the block raised."""
        if exc_type is None:
            self.sync()
        else:
            self.discard()
