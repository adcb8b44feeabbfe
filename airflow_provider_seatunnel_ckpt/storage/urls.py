"""Data URLs for connectors: ``url -> (FileSystem, root path)``, and range reads for pyarrow.

:func:`filesystem_for_url` picks the backend from the URL's scheme (a local path or
``file://``, ``s3://``/``s3a://``, ``oss://``, ``hdfs://``/``webhdfs://``/``swebhdfs://``,
``memory://``) and hands the connector's storage options to that backend's
``from_plugin_config``; the bucket or name node the URL names becomes the matching
plugin-config key, so the two cannot disagree. :class:`RangeFile` lets pyarrow read a
remote file through ``FileSystem.read(offset, length)`` (a parquet footer, then only the
column chunks it decodes).

The URL table: docs/storage.md, "The same backends for data: ``path`` URLs".
"""

from __future__ import annotations

import io
import re
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from ..errors import ConfigError
from .filesystem import FileSystem

#: the URL forms :func:`filesystem_for_url` accepts, quoted in its errors
EXPECTED_FORMS = (
    "file:///abs/dir/, /abs/dir/, s3://bucket/prefix/, s3a://bucket/prefix/, oss://bucket/prefix/, "
    "hdfs://namenode:8020/path/, memory://store/path/"
)

#: option keys (or key prefixes) that configure storage rather than a connector
STORAGE_OPTION_PREFIXES = ("fs.", "s3.", "oss.", "hdfs.", "webhdfs.", "memory.", "seatunnel.hadoop.")
STORAGE_OPTION_KEYS = frozenset({"kerberosPrincipal", "kerberosKeytab", "kerberosKeytabFilePath"})

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")


def is_storage_option(key: str) -> bool:
    """Whether a connector option is a storage setting for :func:`filesystem_for_url`."""
    return key in STORAGE_OPTION_KEYS or key.startswith(STORAGE_OPTION_PREFIXES)


def filesystem_for_url(url: str, options: Mapping[str, Any] | None = None, key: str = "path") -> tuple[FileSystem, str]:
    """The file system serving ``url`` and the absolute POSIX root path inside it.

    ``options`` are plugin-config-style keys passed to the backend's
    ``from_plugin_config``. ``key`` names the option that holds ``url`` in errors; an
    error about one of ``options`` is reported under that key's parent, so with
    ``key="sink[0].path"`` a bad endpoint is ``sink[0].fs.s3a.endpoint``.
    """
    options = dict(options or {})
    if not isinstance(url, str) or not url.strip():
        raise ConfigError(key, f"expected a URL such as {EXPECTED_FORMS}; got {url!r}")
    text = url.strip()
    if text.startswith("/"):
        return _local(options, key), _root(text, text, key)
    match = _SCHEME.match(text)
    if match is None:
        raise ConfigError(key, f"{text!r} is not an absolute path or URL; expected one of {EXPECTED_FORMS}")
    scheme = match.group(1).lower()
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError as exc:
        raise ConfigError(key, f"{text!r} is not a valid URL ({exc}); expected one of {EXPECTED_FORMS}") from None
    if parts.query or parts.fragment or parts.username or parts.password:
        raise ConfigError(key, f"{text!r} must not contain a query, fragment or credentials (put them in options)")

    if scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise ConfigError(key, f"{text!r} names a remote host; a local URL is file:///abs/dir/")
        return _local(options, key), _root(parts.path or "/", text, key)

    if scheme in ("s3", "s3a", "oss"):
        bucket = parts.netloc
        if not bucket:
            raise ConfigError(key, f"{text!r} has no bucket; expected {scheme}://bucket/prefix/")
        if scheme == "oss":
            from .fs_oss import OssFileSystem as cls

            bucket_key = "oss.bucket"
        else:
            from .fs_s3 import S3FileSystem as cls  # type: ignore[assignment]

            bucket_key = "s3.bucket"
        config = _merged(options, bucket_key, bucket, key, compare=_bucket_name)
        return _build(cls, config, key, bucket_key), _root(parts.path or "/", text, key)

    if scheme in ("hdfs", "webhdfs", "swebhdfs"):
        if not parts.hostname:
            raise ConfigError(key, f"{text!r} has no name node; expected {scheme}://namenode:8020/path/")
        default_fs = f"{scheme}://{parts.netloc}"
        from .fs_webhdfs import WebHdfsFileSystem

        config = _merged(options, "fs.defaultFS", default_fs, key, compare=lambda v: v.lower().rstrip("/"))
        return _build(WebHdfsFileSystem, config, key, "fs.defaultFS"), _root(parts.path or "/", text, key)

    if scheme == "memory":
        if not parts.netloc:
            raise ConfigError(key, f"{text!r} has no store name; expected memory://store/path/")
        from .fs_memory import MemoryFileSystem

        config = _merged(options, "memory.store", parts.netloc, key, compare=str)
        return _build(MemoryFileSystem, config, key, "memory.store"), _root(parts.path or "/", text, key)

    raise ConfigError(key, f"unsupported scheme {scheme!r} in {text!r}; expected one of {EXPECTED_FORMS}")


def _local(options: dict[str, Any], key: str) -> FileSystem:
    from .fs_local import LocalFileSystem

    return _build(LocalFileSystem, options, key)


def _merged(options: dict[str, Any], name: str, value: str, key: str, compare: Any) -> dict[str, Any]:
    given = options.get(name)
    if given is not None and compare(str(given).strip()) != compare(value):
        raise ConfigError(
            _option_key(key, name),
            f"{given!r} disagrees with {value!r} from the URL in {key!r}; drop the option (the URL decides)",
        )
    return {**options, name: value}


def _bucket_name(value: str) -> str:
    return re.sub(r"^[a-z0-9]+://", "", value.lower()).rstrip("/")


def _build(cls: Any, config: dict[str, Any], key: str, from_url: str | None = None) -> FileSystem:
    cls.require_client(key, "storage")  # the URL's scheme chose the backend
    try:
        return cls.from_plugin_config(config)
    except ConfigError as err:
        name = err.key[len("plugin-config.") :] if err.key.startswith("plugin-config.") else err.key
        # a complaint about the value the URL supplied is a complaint about the URL
        raise ConfigError(key if name == from_url else _option_key(key, name), err.problem) from None


def _option_key(key: str, name: str) -> str:
    parent = key.rpartition(".")[0]
    return f"{parent}.{name}" if parent else name


def _root(path: str, url: str, key: str) -> str:
    segments = [s for s in path.split("/") if s]
    if any(s in (".", "..") for s in segments):
        raise ConfigError(key, f"{url!r} contains '.' or '..'; use a normalised absolute path")
    return "/" + "/".join(segments)


class ReadStream(io.RawIOBase):
    """A raw stream whose subclass writes only ``read(n)``: ``readall`` and ``readinto``
    (what ``io`` and pyarrow call) go through it."""

    def readall(self) -> bytes:
        return self.read(-1)

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        data = self.read(len(view))
        view[: len(data)] = data
        return len(data)


class RangeFile(ReadStream):
    """A read-only, seekable file over ``FileSystem.read(path, offset, length)``.

    Every ``read`` is one ranged request, so wrap it in nothing that reads ahead: pyarrow
    (``pq.ParquetFile(RangeFile(...))``, ``pa.PythonFile``, ``pyarrow.csv.open_csv``)
    already asks for the byte ranges it needs. ``size`` comes from ``info()`` unless
    given. ``bytes_read`` and ``requests`` count what was fetched (tests, metrics).
    """

    def __init__(self, fs: FileSystem, path: str, size: int | None = None):
        super().__init__()
        if size is None:
            info = fs.info(path)
            if info is None or info.is_dir:
                raise FileNotFoundError(2, "no such file", fs.describe(path))
            size = info.size
        self.fs = fs
        self.path = path
        self.size = size
        self.bytes_read = 0
        self.requests = 0
        self._pos = 0
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"RangeFile({self.fs.describe(self.path)!r}, size={self.size})"

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        self._check_open()
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self._check_open()
        if whence == io.SEEK_SET:
            pos = offset
        elif whence == io.SEEK_CUR:
            pos = self._pos + offset
        elif whence == io.SEEK_END:
            pos = self.size + offset
        else:
            raise ValueError(f"invalid whence {whence!r}")
        if pos < 0:
            raise OSError(22, f"negative seek position {pos}")
        self._pos = pos
        return pos

    def read(self, size: int | None = -1) -> bytes:
        self._check_open()
        with self._lock:
            start = self._pos
            end = self.size if size is None or size < 0 else min(self.size, start + size)
            if end <= start:
                return b""
            data = self.fs.read(self.path, start, end - start)
            self.requests += 1
            self.bytes_read += len(data)
            self._pos = start + len(data)
            return data

    def _check_open(self) -> None:
        if self.closed:
            raise ValueError("I/O operation on closed file")
