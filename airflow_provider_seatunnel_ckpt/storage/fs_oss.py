"""Aliyun OSS backend, built on the ``oss2`` SDK (SeaTunnel's ``storage.type: oss``).

``OssFileSystem.from_plugin_config`` maps SeaTunnel's ``fs.oss.*`` keys (also spelled
with the ``seatunnel.hadoop.`` prefix; the unprefixed key wins) and ``oss.bucket``. Path
``/a/b`` is key ``a/b``; writes are one PutObject (a multipart upload above
``multipart_threshold``) checked with OSS's CRC-64; ``create_new`` sends
``x-oss-forbid-overwrite``. Transient errors are retried, every other one fails at once
naming bucket, endpoint and path, never the credentials. Each thread gets its own
``oss2.Bucket``; an instance holds configuration only and pickles without clients.

The keys and the backend's behaviour: docs/storage.md, "Aliyun OSS".
"""

from __future__ import annotations

import errno
import logging
import os
import re
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from airflow_provider_seatunnel_ckpt.errors import CheckpointStorageError, ConfigError
from airflow_provider_seatunnel_ckpt.storage import retry
from airflow_provider_seatunnel_ckpt.storage.filesystem import Bytes, FileInfo, FileSystem

if TYPE_CHECKING:  # pragma: no cover
    import oss2

log = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_MULTIPART_THRESHOLD = 128 * 1024 * 1024
DEFAULT_PART_SIZE = 8 * 1024 * 1024
MIN_PART_SIZE = 100 * 1024  # OSS rejects smaller parts except the last one
MAX_PARTS = 10000
DELETE_BATCH = 1000  # DeleteMultipleObjects limit
LIST_PAGE = 1000  # ListObjects max-keys limit
CONNECTION_POOL_SIZE = 4  # per thread

#: error codes OSS documents as temporary, whatever the status
_TRANSIENT_CODES = frozenset({"RequestTimeout", "InternalError", "ServiceUnavailable", "Throttling", "SlowDown"})

_BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$")
_HOST_RE = re.compile(r"^[\w.-]+(:\d+)?$")
_PLUGIN_PREFIX = "plugin-config."
_HADOOP_PREFIX = "seatunnel.hadoop."


def _import_oss2() -> Any:
    try:
        import oss2
    except ImportError:
        OssFileSystem.require_client()  # not installed: the extra to install, in one line
        raise  # installed but broken: the ImportError says how
    return oss2


def _parse_bucket(value: Any, key: str = "plugin-config.oss.bucket") -> str:
    expected = "expected 'bucket-name', 'oss://bucket-name' or 'oss://bucket-name/'"
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(key, f"{expected}, got {value!r}")
    name = value.strip()
    if name.startswith("oss://"):
        name = name[len("oss://") :]
        if name.endswith("/"):
            name = name[:-1]
    if not _BUCKET_RE.match(name):
        raise ConfigError(
            key,
            f"{expected}, got {value!r} (a bucket name is 3-63 lower-case letters, digits and hyphens, "
            "with no path after it)",
        )
    return name


def _parse_endpoint(value: Any, key: str = "plugin-config.fs.oss.endpoint") -> str:
    expected = "expected 'oss-cn-hangzhou.aliyuncs.com' or 'https://host[:port]'"
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(key, f"{expected}, got {value!r}")
    text = value.strip()
    if "://" not in text:
        text = "https://" + text
    parts = urlsplit(text)
    bad_shape = parts.path not in ("", "/") or parts.query or parts.fragment
    if parts.scheme not in ("http", "https") or not parts.netloc or bad_shape:
        raise ConfigError(key, f"{expected}, got {value!r}")
    # The host itself is checked when the client is built (first use): config validation
    # must accept SeaTunnel's documented example, whose endpoint is a placeholder.
    return f"{parts.scheme}://{parts.netloc}"


class OssFileSystem(FileSystem):
    """The five file-system primitives on one OSS bucket."""

    backend = "oss"
    flat_listing = True
    extra = "oss"
    title = "OSS"

    def __init__(
        self,
        bucket: str,
        endpoint: str,
        access_key_id: str,
        access_key_secret: str,
        security_token: str | None = None,
        region: str | None = None,
        connect_timeout: float | None = None,
        *,
        multipart_threshold: int = DEFAULT_MULTIPART_THRESHOLD,
        part_size: int = DEFAULT_PART_SIZE,
        retry_attempts: int = retry.DEFAULT_ATTEMPTS,
        retry_initial_wait_s: float = retry.DEFAULT_INITIAL_WAIT_S,
        retry_max_wait_s: float = retry.DEFAULT_MAX_WAIT_S,
    ):
        self.bucket = _parse_bucket(bucket, "bucket")
        self.endpoint = _parse_endpoint(endpoint, "endpoint")
        if not access_key_id or not access_key_secret:
            raise ConfigError("access_key_id" if not access_key_id else "access_key_secret", "is required")
        if part_size < MIN_PART_SIZE:
            raise ConfigError("part_size", f"must be at least {MIN_PART_SIZE} bytes (the OSS minimum), got {part_size}")
        if multipart_threshold < 1:
            raise ConfigError("multipart_threshold", f"must be positive, got {multipart_threshold}")
        if retry_attempts < 1:
            raise ConfigError("retry_attempts", f"must be at least 1, got {retry_attempts}")
        self.access_key_id = access_key_id
        self._access_key_secret = access_key_secret
        self._security_token = security_token or None
        self.region = region or None
        self.connect_timeout = connect_timeout
        self.multipart_threshold = multipart_threshold
        self.part_size = part_size
        self.retry_attempts = retry_attempts
        self.retry_initial_wait_s = retry_initial_wait_s
        self.retry_max_wait_s = retry_max_wait_s
        self._local = threading.local()

    @classmethod
    def from_plugin_config(cls, plugin_config: dict[str, Any]) -> OssFileSystem:
        """Build from SeaTunnel ``plugin-config`` keys (docs/storage.md, "Aliyun OSS")."""

        def get(name: str) -> Any:
            value = plugin_config.get(name)
            if value is None and name.startswith("fs."):
                value = plugin_config.get(_HADOOP_PREFIX + name)
            return value

        def required(name: str) -> str:
            value = get(name)
            if value is None or (isinstance(value, str) and not value.strip()):
                raise ConfigError(_PLUGIN_PREFIX + name, "is required for OSS checkpoint storage")
            if not isinstance(value, str):
                raise ConfigError(_PLUGIN_PREFIX + name, f"must be a string, got {type(value).__name__}")
            return value.strip()

        bucket = _parse_bucket(get("oss.bucket"))
        endpoint = _parse_endpoint(get("fs.oss.endpoint"))
        access_key_id = required("fs.oss.accessKeyId")
        access_key_secret = required("fs.oss.accessKeySecret")
        token = get("fs.oss.securityToken")
        timeout_ms = get("fs.oss.connection.timeout")
        timeout = None
        if timeout_ms is not None:
            try:
                timeout = float(timeout_ms) / 1000.0
            except (TypeError, ValueError):
                timeout = -1.0
            if not timeout > 0:
                raise ConfigError(
                    _PLUGIN_PREFIX + "fs.oss.connection.timeout",
                    f"expected a positive number of milliseconds, got {timeout_ms!r}",
                )
        provider = get("fs.oss.credentials.provider")
        if provider:
            log.debug("oss: fs.oss.credentials.provider=%s noted; using the configured access key pair", provider)
        region = get("fs.oss.region")
        return cls(
            bucket=bucket,
            endpoint=endpoint,
            access_key_id=access_key_id,
            access_key_secret=access_key_secret,
            security_token=str(token).strip() if token else None,
            region=str(region).strip() if region else None,
            connect_timeout=timeout,
        )

    # ---- pickling and clients -------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_local"]  # clients never travel
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._local = threading.local()

    def __repr__(self) -> str:
        return f"OssFileSystem(bucket={self.bucket!r}, endpoint={self.endpoint!r})"

    @property
    def endpoint_host(self) -> str:
        return urlsplit(self.endpoint).netloc

    def _client(self) -> oss2.Bucket:
        """This thread's oss2.Bucket, created on first use (again after a fork)."""
        local = self._local
        pid = os.getpid()
        client = getattr(local, "client", None)
        if client is None or local.pid != pid:
            if not _HOST_RE.match(self.endpoint_host):
                raise CheckpointStorageError(
                    f"oss: endpoint {self.endpoint!r} (plugin-config fs.oss.endpoint) is not a valid host[:port]; "
                    f"cannot reach bucket {self.bucket!r}"
                )
            oss2 = _import_oss2()
            if self._security_token:
                auth = oss2.StsAuth(self.access_key_id, self._access_key_secret, self._security_token)
            else:
                auth = oss2.Auth(self.access_key_id, self._access_key_secret)
            client = oss2.Bucket(
                auth,
                self.endpoint,
                self.bucket,
                session=oss2.Session(pool_size=CONNECTION_POOL_SIZE),
                connect_timeout=self.connect_timeout,
                region=self.region,
                enable_crc=True,
            )
            local.client, local.pid = client, pid
        return client

    # ---- paths and messages ------------------------------------------------------------
    def describe(self, path: str) -> str:
        return f"oss://{self.bucket}/{path.lstrip('/')}"

    @staticmethod
    def _key(path: str) -> str:
        if not path.startswith("/"):
            raise ValueError(f"oss: expected an absolute path, got {path!r}")
        return path[1:]

    @classmethod
    def _norm(cls, path: str) -> str:
        cls._key(path)
        return path.rstrip("/") or "/"

    @staticmethod
    def _dir_prefix(norm_path: str) -> str:
        return "" if norm_path == "/" else norm_path[1:] + "/"

    def _where(self, op: str, path: str) -> str:
        return f"oss: {op} {self.describe(path)} (endpoint {self.endpoint_host})"

    # ---- error handling ---------------------------------------------------------------
    @staticmethod
    def _is_transient(exc: BaseException) -> bool:
        import requests

        exceptions = _import_oss2().exceptions
        if isinstance(exc, exceptions.InconsistentError):
            return True  # CRC mismatch: the bytes were damaged in transit
        if isinstance(exc, exceptions.ServerError):
            # 4xx (NoSuchBucket, AccessDenied, InvalidAccessKeyId, SignatureDoesNotMatch, ...) fail at once
            return exc.status in retry.TRANSIENT_HTTP_STATUSES or exc.code in _TRANSIENT_CODES
        if isinstance(exc, _ShortRead):
            return True
        if isinstance(exc, exceptions.RequestError):
            exc = exc.exception  # oss2 wraps errors raised while sending
        # errors while reading a response body come from requests unwrapped
        if isinstance(exc, requests.exceptions.SSLError):
            return False  # certificate problems do not go away by retrying
        return retry.is_transient_network_error(exc) or isinstance(exc, requests.exceptions.ChunkedEncodingError)

    @staticmethod
    def _failures() -> tuple[type[BaseException], ...]:
        """What a primitive turns into CheckpointStorageError (requests errors are OSErrors)."""
        return (_import_oss2().exceptions.OssError, OSError, _ShortRead)

    def _call(self, op: str, path: str, fn: Callable[[], T]) -> T:
        """Run ``fn`` with retries; callers map what escapes with ``_storage_error``."""
        return self._with_retries(op, path, fn, is_transient=self._is_transient, what=self._where(op, path))

    def _storage_error(self, op: str, path: str, exc: BaseException) -> CheckpointStorageError:
        oss2 = _import_oss2()
        where = self._where(op, path)
        if isinstance(exc, oss2.exceptions.RequestError):
            detail = f"network error: {type(exc.exception).__name__}"
        elif isinstance(exc, oss2.exceptions.ServerError):
            code = exc.code or "no error code"
            message = f": {exc.message}" if exc.message else ""
            request_id = f", request id {exc.request_id}" if exc.request_id else ""
            detail = f"{code}{message} (HTTP {exc.status}{request_id})"
            if exc.code in ("InvalidAccessKeyId", "SignatureDoesNotMatch"):
                detail += "; check fs.oss.accessKeyId / fs.oss.accessKeySecret"
            elif exc.code == "NoSuchBucket":
                detail += f"; bucket {self.bucket!r} does not exist at this endpoint"
        elif isinstance(exc, oss2.exceptions.OssError):
            detail = f"{type(exc).__name__}: {exc.body if isinstance(exc.body, str) else ''}".rstrip(": ")
        else:
            detail = f"{type(exc).__name__}: {exc}"
        transient = self._is_transient(exc)
        tail = f" after {self.retry_attempts} attempts" if transient else ""
        return CheckpointStorageError(f"{where} failed{tail}: {detail}")

    # ---- primitives -------------------------------------------------------------------
    def read(self, path: str, offset: int = 0, length: int | None = None) -> bytes:
        if offset < 0 or (length is not None and length < 0):
            raise ValueError(f"offset and length must be >= 0, got {offset} and {length}")
        key = self._key(path)
        if length == 0:
            if self._head(path) is None:
                raise FileNotFoundError(errno.ENOENT, "oss: no such object", self.describe(path))
            return b""
        oss2 = _import_oss2()
        ranged = offset > 0 or length is not None
        byte_range = (offset, offset + length - 1 if length is not None else None) if ranged else None
        headers = {"x-oss-range-behavior": "standard"} if ranged else None

        def attempt() -> bytes:
            result = self._client().get_object(key, byte_range=byte_range, headers=headers)
            try:
                data = result.read()
            finally:
                result.close()
            if result.content_length is not None and len(data) != result.content_length:
                raise _ShortRead(f"got {len(data)} of {result.content_length} bytes")
            if not ranged and result.server_crc is not None and result.client_crc != result.server_crc:
                raise oss2.exceptions.InconsistentError("CRC-64 of the downloaded bytes differs", result.request_id)
            if ranged and result.status == 200:  # range ignored by the server: cut it here
                end = None if length is None else offset + length
                data = data[offset:end]
            return data

        try:
            return self._call("read", path, attempt)
        except oss2.exceptions.NoSuchKey:
            raise FileNotFoundError(errno.ENOENT, "oss: no such object", self.describe(path)) from None
        except oss2.exceptions.ServerError as exc:
            if exc.status == 416 and exc.code == "InvalidRange":
                return b""  # offset at or past the end of an existing object
            raise self._storage_error("read", path, exc) from exc
        except self._failures() as exc:
            raise self._storage_error("read", path, exc) from exc

    def write_atomic(self, path: str, data: Bytes) -> None:
        key = self._key(path)
        if not key or key.endswith("/"):
            raise ValueError(f"oss: cannot write to directory path {path!r}")
        payload = data if isinstance(data, bytes) else bytes(data)  # a private copy: later changes can't leak in
        try:
            if len(payload) <= self.multipart_threshold:
                self._put(key, path, payload)
            else:
                self._multipart_put(key, path, payload)
        except self._failures() as exc:
            raise self._storage_error("write", path, exc) from exc

    def _create_new(self, path: str, data: Bytes) -> None:
        """One PutObject with ``x-oss-forbid-overwrite: true``: OSS itself refuses an
        existing key (409 FileAlreadyExists), so of several creators exactly one wins."""
        key = self._key(path)
        if not key or key.endswith("/"):
            raise ValueError(f"oss: cannot write to directory path {path!r}")
        payload = data if isinstance(data, bytes) else bytes(data)
        headers = {"Content-Type": "application/octet-stream", "x-oss-forbid-overwrite": "true"}
        exceptions = _import_oss2().exceptions

        def attempt() -> None:
            try:
                self._client().put_object(key, payload, headers=headers)
            except exceptions.ServerError as exc:
                if exc.status == 409 and exc.code == "FileAlreadyExists":
                    raise FileExistsError(errno.EEXIST, "oss: already exists", self.describe(path)) from None
                raise

        try:
            self._call("create", path, attempt)
        except FileExistsError:
            raise
        except self._failures() as exc:
            raise self._storage_error("create", path, exc) from exc

    def list_dir(self, path: str) -> list[FileInfo]:
        norm = self._norm(path)
        prefix = self._dir_prefix(norm)
        children: dict[str, FileInfo] = {}
        try:
            for page in self._pages(path, prefix, delimiter="/"):
                for obj in page.object_list:
                    if obj.key == prefix:
                        continue  # a zero-byte "folder" marker some tools create
                    name = obj.key[len(prefix) :]
                    children[name] = FileInfo("/" + obj.key, obj.size, False, float(obj.last_modified))
                for common in page.prefix_list:
                    name = common[len(prefix) :].rstrip("/")
                    if name:
                        children.setdefault(name, FileInfo("/" + prefix + name, 0, True))
        except self._failures() as exc:
            raise self._storage_error("list", path, exc) from exc
        return [children[name] for name in sorted(children)]

    def walk_files(self, path: str) -> Any:
        try:
            for page in self._pages(path, self._dir_prefix(self._norm(path))):
                for obj in page.object_list:
                    if not obj.key.endswith("/"):  # skip "folder" markers
                        yield FileInfo("/" + obj.key, obj.size, False, float(obj.last_modified))
        except self._failures() as exc:
            raise self._storage_error("list", path, exc) from exc

    def delete_files(self, paths: Any) -> None:
        keys = [k for k in dict.fromkeys(self._norm(p)[1:] for p in paths) if k]
        for start in range(0, len(keys), DELETE_BATCH):
            batch = keys[start : start + DELETE_BATCH]
            where = "/" + batch[0]
            try:
                if len(batch) == 1:
                    self._call("delete", where, lambda: self._client().delete_object(batch[0]))  # noqa: B023 - called within this iteration
                else:
                    self._call("delete", where, lambda b=batch: self._client().batch_delete_objects(b))  # type: ignore[misc]  # mypy cannot type a lambda with default arguments as Callable[[], T]
            except self._failures() as exc:
                raise self._storage_error("delete", where, exc) from exc

    def delete(self, path: str, recursive: bool = False) -> None:
        norm = self._norm(path)
        key = norm[1:]
        prefix = self._dir_prefix(norm)
        try:
            if recursive:
                self._delete_prefix(prefix, path)
            elif self._has_children(prefix, path):
                raise CheckpointStorageError(
                    f"{self._where('delete', path)} refused: non-empty directory (use recursive=True)"
                )
            if key:
                self._call("delete", path, lambda: self._client().delete_object(key))
        except self._failures() as exc:
            raise self._storage_error("delete", path, exc) from exc

    def info(self, path: str) -> FileInfo | None:
        norm = self._norm(path)
        try:
            if norm != "/":
                found = self._head(norm)
                if found is not None:
                    return found
            # not a file: a directory exists while some key lies below it; the root always does
            if self._has_children(self._dir_prefix(norm), path) or norm == "/":
                return FileInfo(norm, 0, True)
        except self._failures() as exc:
            raise self._storage_error("info", path, exc) from exc
        return None

    # ---- helpers ----------------------------------------------------------------------
    def _head(self, path: str) -> FileInfo | None:
        """FileInfo of the object at ``path``, None when there is no such key."""
        oss2 = _import_oss2()
        key = self._key(path)

        def attempt() -> FileInfo | None:
            try:
                meta = self._client().head_object(key)
            except oss2.exceptions.NoSuchKey:
                return None
            except oss2.exceptions.NotFound as exc:
                if exc.code:  # NoSuchBucket and friends
                    raise
                return None  # a HEAD 404 without an error document
            mtime = float(meta.last_modified) if meta.last_modified is not None else None
            return FileInfo(path, meta.content_length or 0, False, mtime)

        try:
            return self._call("info", path, attempt)
        except self._failures() as exc:
            raise self._storage_error("info", path, exc) from exc

    def _has_children(self, prefix: str, path: str) -> bool:
        page = self._call("list", path, lambda: self._client().list_objects_v2(prefix=prefix, max_keys=1))
        return bool(page.object_list or page.prefix_list)

    def _pages(self, path: str, prefix: str, delimiter: str = "") -> Any:
        """ListObjectsV2 pages below ``prefix``, each request retried on its own."""
        token = ""
        while True:
            page = self._call(
                "list",
                path,
                lambda t=token: self._client().list_objects_v2(  # type: ignore[misc]  # mypy cannot type a lambda with default arguments as Callable[[], T]
                    prefix=prefix, delimiter=delimiter, continuation_token=t, max_keys=LIST_PAGE
                ),
            )
            yield page
            if not page.is_truncated:
                return
            token = page.next_continuation_token

    def _delete_prefix(self, prefix: str, path: str) -> None:
        for page in self._pages(path, prefix):
            keys = [obj.key for obj in page.object_list]
            for start in range(0, len(keys), DELETE_BATCH):
                batch = keys[start : start + DELETE_BATCH]
                self._call("delete", path, lambda b=batch: self._client().batch_delete_objects(b))  # type: ignore[misc]  # mypy cannot type a lambda with default arguments as Callable[[], T]

    def _put(self, key: str, path: str, payload: bytes) -> None:
        headers = {"Content-Type": "application/octet-stream"}  # integrity: oss2's CRC-64 check
        self._call("write", path, lambda: self._client().put_object(key, payload, headers=headers))

    def _multipart_put(self, key: str, path: str, payload: bytes) -> None:
        oss2 = _import_oss2()
        part_size = max(self.part_size, -(-len(payload) // MAX_PARTS))
        upload_id = self._call(
            "write (initiate multipart)",
            path,
            lambda: self._client().init_multipart_upload(key, headers={"Content-Type": "application/octet-stream"}),
        ).upload_id
        view = memoryview(payload)
        parts = []
        try:
            for number, start in enumerate(range(0, len(payload), part_size), start=1):
                chunk = bytes(view[start : start + part_size])
                result = self._call(  # each part is CRC-64 checked by oss2 (enable_crc)
                    f"write (part {number})",
                    path,
                    lambda c=chunk, n=number: self._client().upload_part(key, upload_id, n, c),  # type: ignore[misc]  # mypy cannot type a lambda with default arguments as Callable[[], T]
                )
                parts.append(oss2.models.PartInfo(number, result.etag, size=len(chunk), part_crc=result.crc))
            self._complete(key, path, upload_id, parts, len(payload))
        except BaseException:
            self._abort(key, path, upload_id)
            raise

    def _complete(self, key: str, path: str, upload_id: str, parts: list, size: int) -> None:
        oss2 = _import_oss2()
        attempts = 0

        def attempt() -> None:
            nonlocal attempts
            attempts += 1
            try:
                self._client().complete_multipart_upload(key, upload_id, parts)
            except oss2.exceptions.NoSuchUpload:
                # A retry after a lost answer: the first attempt may have completed it.
                if attempts > 1:
                    found = self._head(path)
                    if found is not None and found.size == size:
                        return
                raise

        self._call("write (complete multipart)", path, attempt)

    def _abort(self, key: str, path: str, upload_id: str) -> None:
        try:
            self._call("write (abort multipart)", path, lambda: self._client().abort_multipart_upload(key, upload_id))
        except Exception as exc:  # best effort; the original error matters more
            log.warning(
                "%s: could not abort multipart upload %s (%s); OSS lifecycle rules will have to clean it up",
                self._where("write", path),
                upload_id,
                type(exc).__name__,
            )


class _ShortRead(Exception):
    """The response body ended before Content-Length bytes arrived."""
