"""Local (POSIX) file system: SeaTunnel's ``fs.defaultFS: file:///``.

Paths are plain absolute local paths. ``write_atomic`` writes a hidden temp file next to
the target (``.<name>.tmp-<random>``), fsyncs it, renames it over the target with
``os.replace`` and fsyncs the directory, so after a crash the path holds either the old
or the new content, and once the call returns the new content is durable. ``list_dir``
hides temp files of writes still in flight.

Errors: "no such file" (``ENOENT``, or a path component that is a file: ``ENOTDIR``)
becomes the not-found result of each primitive; every other ``OSError`` (permission
denied, disk full, read-only file system, ...) raises ``CheckpointStorageError`` naming
the backend and the path.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import shutil
import sys
from typing import Any

from airflow_provider_seatunnel_ckpt.errors import CheckpointStorageError, ConfigError
from airflow_provider_seatunnel_ckpt.storage.filesystem import Bytes, FileInfo, FileSystem

_NOT_FOUND = (errno.ENOENT, errno.ENOTDIR)
_TEMP_NAME = re.compile(r"^\..+\.tmp-[0-9a-f]{16}$")
_LOCAL_DEFAULT_FS = ("file:///", "file:/", "file://")


class LocalFileSystem(FileSystem):
    backend = "local"

    @classmethod
    def from_plugin_config(cls, plugin_config: dict[str, Any]) -> LocalFileSystem:
        default_fs = plugin_config.get("fs.defaultFS")
        if default_fs is not None and str(default_fs).strip() not in _LOCAL_DEFAULT_FS:
            raise ConfigError(
                "plugin-config.fs.defaultFS",
                f"{default_fs!r} is not the local file system; expected 'file:///' "
                "(put the directory in 'namespace')",
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
        path = _checked(path)
        parent, name = os.path.split(path)
        tmp = os.path.join(parent, f".{name}.tmp-{secrets.token_hex(8)}")
        try:
            self._makedirs(parent)
            try:
                with open(tmp, "xb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, path)
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
            _fsync_dir(parent)
        except OSError as exc:
            raise self._error("write", path, exc) from exc

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
                    result.append(
                        FileInfo(entry.path, 0 if is_dir else st.st_size, is_dir, st.st_mtime)
                    )
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
                _rmtree(path)
                return
            try:
                os.unlink(path)
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
    def _makedirs(directory: str) -> None:
        """``os.makedirs`` that also fsyncs the parent of each directory it creates."""
        missing = []
        d = directory
        while not os.path.isdir(d):
            missing.append(d)
            parent = os.path.dirname(d)
            if parent == d:
                break
            d = parent
        for d in reversed(missing):
            try:
                os.mkdir(d)
            except FileExistsError:
                if not os.path.isdir(d):  # a file is in the way
                    raise NotADirectoryError(errno.ENOTDIR, "Not a directory", d) from None
                continue  # a concurrent writer created it
            _fsync_dir(os.path.dirname(d))


def _checked(path: str) -> str:
    if not path.startswith("/"):
        raise ValueError(f"local: path must be absolute, got {path!r}")
    return path.rstrip("/") or "/"


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
