"""Local (POSIX) file system: SeaTunnel's ``fs.defaultFS: file:///``.

``write_atomic``: a hidden temp file, fsynced, ``os.replace`` onto the target, the
directory fsynced; ``create_new`` publishes the temp file with ``os.link`` instead, which
never replaces. ``open_new`` writes large files straight to their final path, starting
write-back as they grow and dropping their pages from the page cache at ``sync``.
Deleting a large file frees its blocks on a background thread. "No such file" is the
not-found result; every other ``OSError`` raises ``CheckpointStorageError``.

The details and why: docs/storage.md, "Local disk" and "Guarantees, and how each is kept".
"""

from __future__ import annotations

import errno
import hashlib
import os
import queue
import re
import secrets
import shutil
import stat
import sys
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import wait
from typing import Any, BinaryIO

from airflow_provider_seatunnel_ckpt.errors import CheckpointStorageError, ConfigError
from airflow_provider_seatunnel_ckpt.storage.filesystem import (
    _HASH_IN_PARALLEL_FROM,
    Bytes,
    FileInfo,
    FileSystem,
    NewFile,
    check_pieces_size,
    in_background,
    overridden,
)

_NOT_FOUND = (errno.ENOENT, errno.ENOTDIR)
_TEMP_NAME = re.compile(r"^\..+\.tmp-[0-9a-f]{16}$")
_LOCAL_DEFAULT_FS = ("file:///", "file:/", "file://")
#: files at least this large are unlinked while open and closed on the reclaimer thread
DEFER_RECLAIM_FROM = 1 << 20
#: a streamed file (``open_new``) asks for writeback of each this many new bytes
WRITEBACK_EVERY = 8 << 20
#: files written whole (``write_atomic``) from this size on leave the page cache once
#: durable, as ``open_new`` files do: large ones are checkpoint state, read again only
#: by a restore; small ones (documents, ``_metadata``) are read often and stay cached
DROP_CACHED_FROM = 1 << 20


class LocalFileSystem(FileSystem):
    backend = "local"

    @classmethod
    def from_plugin_config(cls, plugin_config: dict[str, Any]) -> LocalFileSystem:
        default_fs = plugin_config.get("fs.defaultFS")
        if default_fs is not None and str(default_fs).strip() not in _LOCAL_DEFAULT_FS:
            raise ConfigError(
                "plugin-config.fs.defaultFS",
                f"{default_fs!r} is not the local file system; expected 'file:///' (put the directory in 'namespace')",
            )
        return cls()

    def __repr__(self) -> str:
        return "LocalFileSystem()"

    def describe(self, path: str) -> str:
        return f"file://{path}"

    # ---- primitives -------------------------------------------------------------
    def read(self, path: str, offset: int = 0, length: int | None = None) -> bytes:
        path = _checked(path)
        if offset < 0 or (length is not None and length < 0):
            raise ValueError(f"offset and length must be >= 0, got {offset} and {length}")
        try:
            with open(path, "rb") as f:
                if offset:
                    f.seek(offset)
                return f.read(-1 if length is None else length)
        except OSError as exc:
            if exc.errno in _NOT_FOUND:
                raise FileNotFoundError(errno.ENOENT, "local: no such file", path) from None
            raise self._error("read", path, exc) from exc

    def write_atomic(self, path: str, data: Bytes) -> None:
        self._write_via_temp(path, lambda f: f.write(data), os.replace, "write")

    def write_atomic_hashed_pieces(self, path: str, size: int, pieces: Iterable[Bytes]) -> str:
        """Each piece written to the temp file as it comes, and hashed meanwhile on a
        pool thread (both release the GIL), so no buffer of ``size`` bytes is built."""
        if overridden(self, "write_atomic", LocalFileSystem) or overridden(self, "write_atomic_hashed", FileSystem):
            return super().write_atomic_hashed_pieces(path, size, pieces)
        hasher = hashlib.sha256()

        def write_body(f: BinaryIO) -> int:
            written = handed_to_writeback = 0
            for piece in pieces:
                hashing = in_background(hasher.update, piece) if len(piece) >= _HASH_IN_PARALLEL_FROM else None
                if hashing is None:
                    hasher.update(piece)
                try:
                    written += f.write(piece)
                finally:
                    if hashing is not None:
                        hashing.result()
                if written - handed_to_writeback >= WRITEBACK_EVERY:  # the disk works while we encode
                    f.flush()
                    _start_writeback(f.fileno(), handed_to_writeback, written)
                    handed_to_writeback = written
            check_pieces_size(written, size)
            return written

        self._write_via_temp(path, write_body, os.replace, "write")
        return hasher.hexdigest()

    def _create_new(self, path: str, data: Bytes) -> None:
        """``write_atomic`` with a hard link instead of the rename: ``link`` refuses an
        existing name (``EEXIST``) where ``rename`` would replace it, so of several
        creators exactly one wins, and the name appears only with every byte fsynced."""
        self._write_via_temp(path, lambda f: f.write(data), _link_new, "create")

    def _write_via_temp(
        self, path: str, write_body: Callable[[BinaryIO], int], publish: Callable[[str, str], None], op: str
    ) -> None:
        """``write_body(file)`` (returns the bytes written) into a hidden temp file,
        fsynced, then ``publish(tmp, path)``."""
        path = _checked(path)
        parent, name = os.path.split(path)
        tmp = os.path.join(parent, f".{name}.tmp-{secrets.token_hex(8)}")
        try:
            created = self._makedirs(parent)
            try:
                with open(tmp, "xb") as f:
                    size = write_body(f)
                    f.flush()
                    os.fsync(f.fileno())
                    if size >= DROP_CACHED_FROM:
                        _drop_cached_pages(f.fileno())
                # The new directories' entries: after the file's fsync, whose journal
                # commit (ext4, xfs) already carried them, so these cost next to nothing.
                _fsync_parents(created)
                publish(tmp, path)
            finally:
                try:
                    os.unlink(tmp)  # gone after a rename; still there after a link or a failure
                except OSError:
                    pass
            _fsync_dir(parent)
        except FileExistsError:
            raise
        except OSError as exc:
            raise self._error(op, path, exc) from exc

    def open_new(self, path: str) -> NewFile:
        return _LocalNewFile(self, _checked(path))

    def move(self, source: str, destination: str) -> None:
        """A rename, not the base class's copy: the File sink's commit publishes every
        output byte this way, and the staged file was already fsynced when written.
        Idempotent like the base (source gone and destination there = already moved)."""
        source, destination = _checked(source), _checked(destination)
        source_dir, parent = os.path.dirname(source), os.path.dirname(destination)
        try:
            created = self._makedirs(parent)
            _fsync_parents(created)
            try:
                os.replace(source, destination)
            except OSError as exc:
                if exc.errno == errno.EXDEV:  # another mount under the namespace
                    super().move(source, destination)
                    return
                if exc.errno not in _NOT_FOUND:
                    raise
                if os.path.isfile(destination):
                    return
                raise FileNotFoundError(errno.ENOENT, "local: no such file", source) from None
            _fsync_dir(parent)
            if source_dir != parent:
                _fsync_dir(source_dir)
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise self._error("move", destination, exc) from exc

    def write_atomic_hashed_then(
        self,
        path: str,
        data: Bytes,
        then_path: str,
        then_data: Callable[[str], Bytes],
        exclusive: bool = False,
    ) -> str:
        """Both files written to temp names and fsynced at the same time (the small
        second one's fsync shares the journal commit with the big one's, instead of
        costing two more), then renamed in order and the directory fsynced once.

        A crash before the renames leaves only hidden temp files; the second rename
        comes after the first, and both after both fsyncs, so ``then_path`` never
        exists without ``path`` complete. Durable when this returns. With
        ``exclusive`` the second file is hard-linked instead of renamed, as in
        ``create_new``: ``FileExistsError`` when ``then_path`` exists."""
        path, then_path = _checked(path), _checked(then_path)
        parent, name = os.path.split(path)
        then_parent, then_name = os.path.split(then_path)
        token = secrets.token_hex(8)
        tmp = os.path.join(parent, f".{name}.tmp-{token}")
        then_tmp = os.path.join(then_parent, f".{then_name}.tmp-{token}")
        digest: list[str] = []
        hasher = None
        if len(data) >= _HASH_IN_PARALLEL_FROM:  # hashlib releases the GIL: hash while writing
            hasher = in_background(lambda: digest.append(hashlib.sha256(data).hexdigest()))
        current = path
        second: Bytes = b""
        try:
            created = self._makedirs(parent)
            if then_parent != parent:
                created += self._makedirs(then_parent)
            try:
                with open(tmp, "xb") as f:
                    f.write(data)
                    f.flush()
                    syncer = in_background(os.fsync, f.fileno())
                    try:
                        if hasher is not None:
                            hasher.result()
                            hasher = None
                        if not digest:
                            digest.append(hashlib.sha256(data).hexdigest())
                        current = then_path
                        second = then_data(digest[0])
                        with open(then_tmp, "xb") as g:
                            g.write(second)
                            g.flush()
                            os.fsync(g.fileno())
                        _fsync_parents(created)
                    finally:
                        wait([syncer])
                    current = path
                    syncer.result()  # raises the fsync's error, if any
                current = path
                os.replace(tmp, path)
                current = then_path
                if exclusive:
                    _link_new(then_tmp, then_path)
                    os.unlink(then_tmp)
                else:
                    os.replace(then_tmp, then_path)
            except BaseException:
                for leftover in (tmp, then_tmp):
                    try:
                        os.unlink(leftover)
                    except OSError:
                        pass
                raise
            _fsync_dir(parent)
            if then_parent != parent:
                _fsync_dir(then_parent)
        except FileExistsError:  # only _link_new raises it: then_path was there
            self._check_created(then_path, second)  # raises, unless it holds these very bytes
            try:
                _fsync_dir(parent)
            except OSError as exc:
                raise self._error("write", path, exc) from exc
        except OSError as exc:
            raise self._error("write", current, exc) from exc
        finally:
            if hasher is not None:
                wait([hasher])
        return digest[0]

    def list_dir(self, path: str) -> list[FileInfo]:
        path = _checked(path)
        result = []
        try:
            with os.scandir(path) as entries:
                for entry in entries:
                    if _TEMP_NAME.match(entry.name):
                        continue
                    try:
                        st = entry.stat()
                        is_dir = entry.is_dir()
                    except FileNotFoundError:  # removed while we were listing
                        continue
                    result.append(FileInfo(entry.path, 0 if is_dir else st.st_size, is_dir, st.st_mtime))
        except OSError as exc:
            if exc.errno in _NOT_FOUND:
                return []
            raise self._error("list", path, exc) from exc
        result.sort(key=lambda i: i.path)
        return result

    def delete(self, path: str, recursive: bool = False) -> None:
        path = _checked(path)
        try:
            if recursive and os.path.isdir(path) and not os.path.islink(path):
                held = _unlink_large_files_in(path)
                try:
                    _rmtree(path)
                finally:  # freeing their blocks only now: it would hold up the rmdir
                    _RECLAIMER.close_later(held)
                return
            try:
                _RECLAIMER.close_later(_unlink(path))
            except OSError as exc:
                # EISDIR on Linux, EPERM on macOS: an empty directory may go, a full one not
                if exc.errno not in (errno.EISDIR, errno.EPERM) or not os.path.isdir(path):
                    raise
                try:
                    os.rmdir(path)
                except OSError as rm_exc:
                    if rm_exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                        raise CheckpointStorageError(
                            f"local: cannot delete {path}: non-empty directory (use recursive=True)"
                        ) from None
                    raise
        except OSError as exc:
            if exc.errno in _NOT_FOUND:
                return
            raise self._error("delete", path, exc) from exc

    def delete_files(self, paths: Iterable[str]) -> None:
        held: list[int] = []
        try:
            for path in paths:
                path = _checked(path)
                try:
                    held.extend(_unlink(path))
                except OSError as exc:
                    if exc.errno in _NOT_FOUND:
                        continue
                    if exc.errno in (errno.EISDIR, errno.EPERM) and os.path.isdir(path):
                        self.delete(path)  # as delete(): an empty directory goes, a full one is an error
                        continue
                    raise self._error("delete", path, exc) from exc
        finally:
            _RECLAIMER.close_later(held)

    def info(self, path: str) -> FileInfo | None:
        path = _checked(path)
        try:
            st = os.stat(path)
        except OSError as exc:
            if exc.errno in _NOT_FOUND:
                return None
            raise self._error("stat", path, exc) from exc
        is_dir = os.path.isdir(path)
        return FileInfo(path, 0 if is_dir else st.st_size, is_dir, st.st_mtime)

    # ---- helpers ----------------------------------------------------------------
    @staticmethod
    def _error(op: str, path: str, exc: OSError) -> CheckpointStorageError:
        reason = exc.strerror or type(exc).__name__
        return CheckpointStorageError(f"local: cannot {op} {path}: {reason}")

    @staticmethod
    def _makedirs(directory: str) -> list[str]:
        """``os.makedirs`` returning the directories it created, outermost first; the
        caller fsyncs their parents (after its own file fsync, when that is cheap)."""
        missing = []
        d = directory
        while not os.path.isdir(d):
            missing.append(d)
            parent = os.path.dirname(d)
            if parent == d:
                break
            d = parent
        created = []
        for d in reversed(missing):
            try:
                os.mkdir(d)
            except FileExistsError:
                if not os.path.isdir(d):  # a file is in the way
                    raise NotADirectoryError(errno.ENOTDIR, "Not a directory", d) from None
                continue  # a concurrent writer created it
            created.append(d)
        return created


def _start_writeback(fd: int, start: int, end: int) -> None:
    # POSIX_FADV_DONTNEED starts writeback of the range's dirty pages without waiting
    # for it (Linux); the pages stay cached until written. Python has no sync_file_range.
    _advise_dontneed(fd, start, end - start)


def _drop_cached_pages(fd: int) -> None:
    _advise_dontneed(fd, 0, 0)  # after an fsync every page is clean, so all of them go


def _advise_dontneed(fd: int, offset: int, length: int) -> None:
    """Only a hint: where it is missing (not Linux) or refused, the pages stay cached."""
    if hasattr(os, "posix_fadvise"):
        try:
            os.posix_fadvise(fd, offset, length, os.POSIX_FADV_DONTNEED)
        except OSError:
            pass


class _LocalNewFile(NewFile):
    """``NewFile`` on disk: see the module doc (``open_new``)."""

    fs: LocalFileSystem

    def __init__(self, fs: LocalFileSystem, path: str):
        self.fs = fs
        self.path = path
        self.closed = False
        self._synced = False
        self._size = 0
        self._handed_to_writeback = 0
        try:
            self._created = fs._makedirs(os.path.dirname(path))
            self._file: Any = open(path, "xb", buffering=1 << 20)
        except OSError as exc:
            raise fs._error("create", path, exc) from exc

    def write(self, data: Bytes) -> int:
        if self.closed or self._file is None:
            raise ValueError(f"{self.fs.describe(self.path)}: write to a closed file")
        try:
            written = self._file.write(data)
            self._size += written
            if self._size - self._handed_to_writeback >= WRITEBACK_EVERY:
                self._start_writeback()
        except OSError as exc:
            raise self.fs._error("write", self.path, exc) from exc
        return written

    def _start_writeback(self) -> None:
        self._file.flush()
        _start_writeback(self._file.fileno(), self._handed_to_writeback, self._size)
        self._handed_to_writeback = self._size

    def flush(self) -> None:
        if self._file is not None and not self.closed:
            self._file.flush()

    def close(self) -> None:
        """End writing; the descriptor stays open for ``sync``'s fsync."""
        if self.closed or self._file is None:
            self.closed = True
            return
        try:
            self._start_writeback()
        except OSError as exc:
            raise self.fs._error("write", self.path, exc) from exc
        finally:
            self.closed = True

    def _discarded(self) -> bool:
        return self._file is None

    def _make_durable(self) -> None:
        try:
            os.fsync(self._file.fileno())
            _drop_cached_pages(self._file.fileno())
            self._file.close()
            self._file = None
            _fsync_parents(self._created)
            _fsync_dir(os.path.dirname(self.path))
        except OSError as exc:
            raise self.fs._error("write", self.path, exc) from exc

    def discard(self) -> None:
        self.closed = True
        if self._file is not None:
            try:
                self._file.close()
            except OSError:
                pass  # the unlink below is what matters
            self._file = None
        self._synced = False
        self.fs.delete(self.path)


def _checked(path: str) -> str:
    if not path.startswith("/"):
        raise ValueError(f"local: path must be absolute, got {path!r}")
    return path.rstrip("/") or "/"


def _link_new(source: str, destination: str) -> None:
    """Give the file ``source`` the new name ``destination``; ``FileExistsError`` naming
    ``destination`` when that name is taken (``link`` never replaces)."""
    try:
        os.link(source, destination)
    except FileExistsError:
        if os.path.isdir(destination):  # as write_atomic: a directory is in the way, an error
            raise IsADirectoryError(errno.EISDIR, "Is a directory", destination) from None
        raise FileExistsError(errno.EEXIST, "local: already exists", destination) from None


def _fsync_parents(created: list[str]) -> None:
    """fsync the parent of each directory ``_makedirs`` created, innermost first."""
    for directory in reversed(created):
        _fsync_dir(os.path.dirname(directory))


def _fsync_dir(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    except OSError as exc:  # some file systems cannot fsync a directory
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)


def _rmtree(path: str) -> None:
    def on_error(_func: Any, _path: str, exc: BaseException) -> None:
        if not isinstance(exc, FileNotFoundError):  # concurrent deletes are fine
            raise exc

    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=on_error)
    else:
        shutil.rmtree(path, onerror=lambda func, p, info: on_error(func, p, info[1]))


# ---- deleting large files without waiting for the file system to free them -------------------
class _Reclaimer:
    """One daemon thread closing descriptors of unlinked files (per process, lazily)."""

    def __init__(self) -> None:
        self._queue: queue.Queue[int] = queue.Queue(maxsize=64)  # bounded: back-pressure, few fds
        self._pid = -1
        self._lock = threading.Lock()

    def close_later(self, fds: list[int]) -> None:
        if not fds:
            return
        if self._pid != os.getpid():
            with self._lock:
                if self._pid != os.getpid():  # first use, or a forked child: a thread of its own
                    self._queue = queue.Queue(maxsize=64)
                    threading.Thread(
                        target=self._run, args=(self._queue,), name="local-fs-reclaim", daemon=True
                    ).start()
                    self._pid = os.getpid()
        for fd in fds:
            self._queue.put(fd)

    @staticmethod
    def _run(fds: queue.Queue[int]) -> None:
        while True:
            fd = fds.get()
            try:
                os.close(fd)
            except OSError:
                pass


_RECLAIMER = _Reclaimer()


def _unlink(path: str, st: os.stat_result | None = None) -> list[int]:
    """``os.unlink``; a large regular file is unlinked while held open, and its
    descriptor returned for ``_RECLAIMER.close_later`` (after any rmdir in the way)."""
    if st is None:
        try:
            st = os.lstat(path)
        except OSError:
            st = None
    if st is None or not stat.S_ISREG(st.st_mode) or st.st_size < DEFER_RECLAIM_FROM or st.st_nlink != 1:
        os.unlink(path)
        return []
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:  # unreadable, or replaced meanwhile: plain unlink
        os.unlink(path)
        return []
    try:
        os.unlink(path)
    except BaseException:
        os.close(fd)
        raise
    return [fd]


def _unlink_large_files_in(directory: str) -> list[int]:
    """Unlink the large regular files directly in ``directory`` (checkpoint directories
    are flat) the deferred way; ``_rmtree`` removes everything else."""
    held: list[int] = []
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                try:
                    st = entry.stat(follow_symlinks=False)
                    if stat.S_ISREG(st.st_mode) and st.st_size >= DEFER_RECLAIM_FROM:
                        held.extend(_unlink(entry.path, st))
                except FileNotFoundError:
                    continue
    except (FileNotFoundError, NotADirectoryError):
        pass
    except BaseException:
        _RECLAIMER.close_later(held)
        raise
    return held
