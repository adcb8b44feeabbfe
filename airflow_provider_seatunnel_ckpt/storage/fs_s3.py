"""S3 (and S3-compatible stores: MinIO, Ceph RGW, ...) through boto3.

``S3FileSystem.from_plugin_config`` maps SeaTunnel's Hadoop S3A keys (``s3.bucket``,
``fs.s3a.*``, ``fs.s3a.aws.credentials.provider``). Object key = path without the leading
``/``; writes are one PutObject, or above ``multipart_threshold`` a multipart upload of
memoryview slices (no copy); ``create_new`` is a PutObject with ``If-None-Match: *``
(an endpoint answering 501 falls back, once logged, to the racy base class). boto3's own
retries are off: every call goes through ``retry.call_with_retries``. Instances hold
configuration only; each process creates its client lazily.

The keys, credentials providers and the backend's behaviour: docs/storage.md, "Amazon S3
and S3-compatible stores".
"""

from __future__ import annotations

import base64
import errno
import functools
import hashlib
import io
import logging
import os
import re
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar
from urllib.parse import urlparse

from airflow_provider_seatunnel_ckpt.errors import CheckpointStorageError, ConfigError
from airflow_provider_seatunnel_ckpt.storage.filesystem import Bytes, FileInfo, FileSystem, warn_once
from airflow_provider_seatunnel_ckpt.storage.retry import (
    DEFAULT_ATTEMPTS,
    DEFAULT_INITIAL_WAIT_S,
    DEFAULT_MAX_WAIT_S,
    TRANSIENT_HTTP_STATUSES,
    is_transient_network_error,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

MiB = 1 << 20
#: Objects up to this size go up in one PutObject, larger ones as a multipart upload.
#: Measured against moto's server on loopback, 64 MiB: single PUT 0.30-0.32 s (raw boto3
#: put_object 0.32-0.35 s), multipart 0.38-0.44 s with 16 MiB parts x4 threads and
#: 0.45-0.52 s serial; so 64 MiB stays a single PUT. Hadoop S3A's default is also 128M.
DEFAULT_MULTIPART_THRESHOLD = 128 * MiB
DEFAULT_MULTIPART_CHUNK_SIZE = 16 * MiB
DEFAULT_MULTIPART_CONCURRENCY = 4
MIN_PART_SIZE = 5 * MiB  # S3's minimum for every part but the last
MAX_PARTS = 10_000
DELETE_BATCH = 1000  # DeleteObjects limit

_TRANSIENT_CODES = frozenset(
    {
        "SlowDown",
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottled",
        "RequestLimitExceeded",
        "TooManyRequestsException",
        "BandwidthLimitExceeded",
        "RequestTimeout",
        "RequestTimeoutException",
        "InternalError",
        "ServiceUnavailable",
        "PriorRequestNotComplete",
        "ConditionalRequestConflict",  # 409: another conditional write to the key is in flight
    }
)

#: serialises boto3 Session creation, which is not thread-safe
_SESSION_LOCK = threading.Lock()


def is_transient_s3_error(exc: BaseException) -> bool:
    """True for errors worth retrying: 408/429/5xx, throttling, connection trouble."""
    from botocore import exceptions as bce

    if isinstance(exc, bce.ClientError):
        return _status(exc) in TRANSIENT_HTTP_STATUSES or _code(exc) in _TRANSIENT_CODES
    if isinstance(exc, bce.SSLError):  # certificate problems do not heal by retrying
        return False
    if isinstance(exc, (bce.ConnectionError, bce.HTTPClientError, bce.IncompleteReadError)):
        return True
    try:
        from urllib3 import exceptions as u3e

        if isinstance(exc, (u3e.ProtocolError, u3e.TimeoutError)):
            return True
    except ImportError:  # pragma: no cover - urllib3 comes with botocore
        pass
    return is_transient_network_error(exc)


def _response(exc: BaseException) -> dict[str, Any]:
    response = getattr(exc, "response", None)  # set on ClientError; None or absent elsewhere
    return response if isinstance(response, dict) else {}


def _code(exc: BaseException) -> str:
    return str(_response(exc).get("Error", {}).get("Code", ""))


def _status(exc: BaseException) -> int | None:
    return _response(exc).get("ResponseMetadata", {}).get("HTTPStatusCode")


class _ViewReader(io.RawIOBase):
    """A seekable file object over a memoryview whose reads return slices, not copies."""

    def __init__(self, view: memoryview):
        super().__init__()
        self._view = view
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: len(self._view)}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def read(self, size: int = -1) -> memoryview:
        end = len(self._view) if size is None or size < 0 else min(self._pos + size, len(self._view))
        chunk = self._view[self._pos : end]
        self._pos = max(self._pos, end)
        return chunk

    def readinto(self, buffer: Any) -> int:
        chunk = self.read(len(buffer))
        buffer[: len(chunk)] = chunk
        return len(chunk)


def _sign_checksum_not_payload(request: Any, **_: Any) -> None:
    """botocore ``before-sign`` handler: when we send ``x-amz-checksum-sha256`` (a sha256
    we computed anyway, for the manifest), sign that header instead of hashing the whole
    body a second time for ``x-amz-content-sha256``.

    botocore already does exactly this over https (``UNSIGNED-PAYLOAD`` plus a checksum
    header); over plain http it hashes every body. The checksum header is itself signed
    and S3 rejects a body that does not match it, so the body stays bound to the
    signature. An explicit ``payload_signing_enabled`` in the client config wins.
    """
    if "x-amz-checksum-sha256" not in request.headers:
        return
    config = request.context.get("client_config")
    s3_config = dict(getattr(config, "s3", None) or {})
    if config is None or s3_config.get("payload_signing_enabled") is not None:
        return
    from botocore.config import Config

    s3_config["payload_signing_enabled"] = False
    request.context["client_config"] = config.merge(Config(s3=s3_config))


class S3FileSystem(FileSystem):
    backend = "s3"
    flat_listing = True
    extra = "s3"
    title = "S3"

    def __init__(
        self,
        bucket: str,
        endpoint_url: str | None = None,
        region: str | None = None,
        access_key_id: str | None = None,
        secret_access_key: str | None = None,
        session_token: str | None = None,
        path_style: bool = False,
        multipart_threshold: int = DEFAULT_MULTIPART_THRESHOLD,
        multipart_chunk_size: int = DEFAULT_MULTIPART_CHUNK_SIZE,
        *,
        multipart_concurrency: int = DEFAULT_MULTIPART_CONCURRENCY,
        anonymous: bool = False,
        connect_timeout_s: float = 10.0,
        read_timeout_s: float = 60.0,
        max_pool_connections: int = 32,
        retry_attempts: int = DEFAULT_ATTEMPTS,
        retry_initial_wait_s: float = DEFAULT_INITIAL_WAIT_S,
        retry_max_wait_s: float = DEFAULT_MAX_WAIT_S,
    ):
        if (access_key_id is None) != (secret_access_key is None):
            raise ValueError("s3: access_key_id and secret_access_key go together")
        if multipart_chunk_size < MIN_PART_SIZE:
            raise ValueError(f"s3: multipart_chunk_size must be >= {MIN_PART_SIZE} bytes")
        self.bucket = bucket
        self.endpoint_url = endpoint_url
        self.region = region
        self.access_key_id = access_key_id
        self.secret_access_key = secret_access_key
        self.session_token = session_token
        self.path_style = path_style
        self.multipart_threshold = multipart_threshold
        self.multipart_chunk_size = multipart_chunk_size
        self.multipart_concurrency = max(1, multipart_concurrency)
        self.anonymous = anonymous
        self.connect_timeout_s = connect_timeout_s
        self.read_timeout_s = read_timeout_s
        self.max_pool_connections = max_pool_connections
        self.retry_attempts = retry_attempts
        self.retry_initial_wait_s = retry_initial_wait_s
        self.retry_max_wait_s = retry_max_wait_s
        self._client: Any = None
        self._client_pid: int | None = None
        #: False once the endpoint answered 501 to If-None-Match (then create_new is racy)
        self._conditional_writes = True

    # ---- configuration ----------------------------------------------------------
    @classmethod
    def from_plugin_config(cls, plugin_config: dict[str, Any]) -> S3FileSystem:
        cfg = plugin_config
        bucket = _parse_bucket(cfg.get("s3.bucket"))
        ssl = _bool(cfg, "fs.s3a.connection.ssl.enabled", True)
        endpoint_url = _endpoint_url(_text(cfg, "fs.s3a.endpoint"), ssl)
        access, secret, token = (
            _text(cfg, "fs.s3a.access.key"),
            _text(cfg, "fs.s3a.secret.key"),
            _text(cfg, "fs.s3a.session.token"),
        )
        mode = _credentials_mode(_text(cfg, "fs.s3a.aws.credentials.provider"), access, secret, token)
        static = mode == "static"
        return cls(
            bucket,
            endpoint_url=endpoint_url,
            region=_text(cfg, "fs.s3a.endpoint.region"),
            access_key_id=access if static else None,
            secret_access_key=secret if static else None,
            session_token=token if static else None,
            path_style=_bool(cfg, "fs.s3a.path.style.access", False),
            multipart_threshold=_size(cfg, "fs.s3a.multipart.threshold", DEFAULT_MULTIPART_THRESHOLD),
            multipart_chunk_size=_size(
                cfg, "fs.s3a.multipart.size", DEFAULT_MULTIPART_CHUNK_SIZE, minimum=MIN_PART_SIZE
            ),
            anonymous=mode == "anonymous",
        )

    def __repr__(self) -> str:  # no credentials
        return (
            f"S3FileSystem(bucket={self.bucket!r}, endpoint_url={self.endpoint_url!r}, "
            f"region={self.region!r}, path_style={self.path_style!r})"
        )

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_client"] = None
        state["_client_pid"] = None
        return state

    def describe(self, path: str) -> str:
        return f"s3://{self.bucket}/{_key(path)}"

    @property
    def endpoint_host(self) -> str:
        if self.endpoint_url:
            return urlparse(self.endpoint_url).netloc or self.endpoint_url
        return f"s3.{self.region}.amazonaws.com" if self.region else "s3.amazonaws.com"

    # ---- primitives -------------------------------------------------------------
    def read(self, path: str, offset: int = 0, length: int | None = None) -> bytes:
        if offset < 0 or (length is not None and length < 0):
            raise ValueError(f"offset and length must be >= 0, got {offset} and {length}")
        if length == 0:  # no Range can say "zero bytes"; still report a missing file
            found = self.info(path)
            if found is None or found.is_dir:
                raise FileNotFoundError(errno.ENOENT, "s3: no such object", self.describe(path))
            return b""
        kwargs: dict[str, Any] = {"Bucket": self.bucket, "Key": _key(path)}
        if offset or length is not None:
            last = "" if length is None else str(offset + length - 1)
            kwargs["Range"] = f"bytes={offset}-{last}"
        client = self._get_client()

        def get() -> bytes:
            try:
                response = client.get_object(**kwargs)
            except Exception as exc:
                if _code(exc) == "NoSuchKey":
                    raise FileNotFoundError(errno.ENOENT, "s3: no such object", self.describe(path)) from None
                if _code(exc) == "InvalidRange":  # offset at or past the end
                    return b""
                raise
            with response["Body"] as body:
                return body.read()

        return self._call("read", path, get)

    def write_atomic(self, path: str, data: Bytes) -> None:
        if len(data) > self.multipart_threshold:
            self._write(path, data, None)
        else:  # our sha256 as the upload checksum: botocore then adds no CRC32 pass of its own
            self.write_atomic_hashed(path, data)

    def write_atomic_hashed(self, path: str, data: Bytes) -> str:
        """One sha256 serves both the manifest and S3's own upload integrity check
        (``ChecksumSHA256``), so botocore skips its separate CRC32 pass over the body."""
        if len(data) > self.multipart_threshold:
            return super().write_atomic_hashed(path, data)
        digest = hashlib.sha256(data).digest()
        self._write(path, data, base64.b64encode(digest).decode("ascii"))
        return digest.hex()

    def _write(self, path: str, data: Bytes, checksum_sha256: str | None) -> None:
        view = memoryview(data)
        if view.ndim != 1 or view.itemsize != 1:
            view = view.cast("B")
        if view.nbytes > self.multipart_threshold:
            self._write_multipart(path, view)
            return
        client = self._get_client()
        extra = {"ChecksumSHA256": checksum_sha256} if checksum_sha256 else {}
        key = _key(path)
        if isinstance(data, (bytes, bytearray)):
            put = lambda: client.put_object(Bucket=self.bucket, Key=key, Body=data, **extra)  # noqa: E731
        else:  # a fresh reader per attempt, so a retry starts from byte 0
            put = lambda: client.put_object(Bucket=self.bucket, Key=key, Body=_ViewReader(view), **extra)  # noqa: E731
        self._call("write", path, put)

    def _create_new(self, path: str, data: Bytes) -> None:
        """One PutObject with ``If-None-Match: *`` (S3 conditional writes): S3 decides,
        atomically, so of several creators exactly one gets 200 and the others 412."""
        if not self._conditional_writes:
            self._create_new_unfenced(path, data)
            return
        view = memoryview(data)
        if view.ndim != 1 or view.itemsize != 1:
            view = view.cast("B")
        checksum = base64.b64encode(hashlib.sha256(view).digest()).decode("ascii")
        client = self._get_client()
        key = _key(path)

        def put() -> bool:
            body = data if isinstance(data, (bytes, bytearray)) else _ViewReader(view)  # fresh per attempt
            try:
                client.put_object(Bucket=self.bucket, Key=key, Body=body, IfNoneMatch="*", ChecksumSHA256=checksum)
            except Exception as exc:
                if _status(exc) == 412 or _code(exc) == "PreconditionFailed":
                    raise FileExistsError(errno.EEXIST, "s3: already exists", self.describe(path)) from None
                if _status(exc) == 501 or _code(exc) == "NotImplemented":
                    return False  # the server does not do conditional writes
                raise
            return True

        if self._call("create", path, put):
            return
        self._conditional_writes = False
        warn_once(
            ("s3 If-None-Match", self.endpoint_host, self.bucket),
            "s3: %s (bucket %s) does not support conditional writes (If-None-Match: * answered "
            "501 NotImplemented); create_new falls back to a check, then a write: concurrent "
            "drivers of one job are not fenced on this store",
            self.endpoint_host,
            self.bucket,
        )
        self._create_new_unfenced(path, data)

    def list_dir(self, path: str) -> list[FileInfo]:
        prefix = _dir_prefix(path)
        result: list[FileInfo] = []
        for page in self._pages("list", path, Prefix=prefix, Delimiter="/"):
            for common in page.get("CommonPrefixes", ()):
                name = common["Prefix"][len(prefix) :].rstrip("/")
                if name:
                    result.append(FileInfo("/" + prefix + name, 0, True))
            for obj in page.get("Contents", ()):
                if obj["Key"] == prefix:  # a "directory marker" object some tools create
                    continue
                result.append(FileInfo("/" + obj["Key"], obj["Size"], False, obj["LastModified"].timestamp()))
        result.sort(key=lambda i: (i.path, i.is_dir))
        return result

    def walk_files(self, path: str) -> Any:
        """Every object below ``path``: one ListObjectsV2 (per 1000 keys), no delimiter."""
        prefix = _dir_prefix(path)
        for page in self._pages("list", path, Prefix=prefix):
            for obj in page.get("Contents", ()):
                if obj["Key"].endswith("/"):  # "directory marker" objects
                    continue
                yield FileInfo("/" + obj["Key"], obj["Size"], False, obj["LastModified"].timestamp())

    def delete_files(self, paths: Any) -> None:
        keys = [k for k in dict.fromkeys(_key(p) for p in paths) if k]
        if len(keys) == 1:
            client = self._get_client()
            self._call("delete", "/" + keys[0], lambda: client.delete_object(Bucket=self.bucket, Key=keys[0]))
            return
        for start in range(0, len(keys), DELETE_BATCH):
            self._delete_batch("/" + keys[start], keys[start : start + DELETE_BATCH])

    def delete(self, path: str, recursive: bool = False) -> None:
        key = _key(path)
        client = self._get_client()
        if not recursive:
            if key:
                self._call("delete", path, lambda: client.delete_object(Bucket=self.bucket, Key=key))
            return
        batch = [key] if key else []
        for page in self._pages("delete", path, Prefix=_dir_prefix(path)):
            for obj in page.get("Contents", ()):
                batch.append(obj["Key"])
                if len(batch) == DELETE_BATCH:
                    self._delete_batch(path, batch)
                    batch = []
        if batch:
            self._delete_batch(path, batch)

    def move(self, source: str, destination: str) -> None:
        """Server-side copy, then delete: the File sink's commit publishes every output
        byte this way, and the bytes never travel through this process (the base
        class's read-and-rewrite would download and upload each file). Idempotent."""
        client = self._get_client()
        source_key, destination_key = _key(source), _key(destination)

        def copy() -> bool:
            try:
                client.copy_object(
                    Bucket=self.bucket, Key=destination_key, CopySource={"Bucket": self.bucket, "Key": source_key}
                )
            except Exception as exc:
                if _code(exc) == "NoSuchKey":
                    return False
                raise
            return True

        if not self._call("move", source, copy):
            if self.info(destination) is not None:  # a replayed commit: already moved
                return
            raise FileNotFoundError(errno.ENOENT, "s3: no such object", self.describe(source))
        self._call("delete", source, lambda: client.delete_object(Bucket=self.bucket, Key=source_key))

    def info(self, path: str) -> FileInfo | None:
        key = _key(path)
        norm = "/" + key
        if key:
            client = self._get_client()

            def head() -> Any:
                try:
                    return client.head_object(Bucket=self.bucket, Key=key)
                except Exception as exc:
                    if _status(exc) == 404:  # missing key, or missing bucket: the listing tells
                        return None
                    raise

            response = self._call("stat", path, head)
            if response is not None:
                return FileInfo(norm, response["ContentLength"], False, response["LastModified"].timestamp())
        page = next(self._pages("stat", path, Prefix=_dir_prefix(path), MaxKeys=1))
        if not key or page.get("KeyCount", 0) > 0:
            return FileInfo(norm, 0, True)
        return None

    # ---- internals --------------------------------------------------------------
    def _new_session(self) -> Any:
        """The boto3 session clients are made from: static keys, or boto3's default chain.
        A subclass may sign with a session built elsewhere (refreshable credentials)."""
        import boto3

        return boto3.session.Session(
            aws_access_key_id=self.access_key_id,
            aws_secret_access_key=self.secret_access_key,
            aws_session_token=self.session_token,
            region_name=self.region,
        )

    def _get_client(self) -> Any:
        pid = os.getpid()
        client = self._client
        if client is not None and self._client_pid == pid:
            return client
        with _SESSION_LOCK:
            if self._client is None or self._client_pid != pid:
                self.require_client()
                from botocore import UNSIGNED
                from botocore.config import Config

                config = Config(
                    retries={"total_max_attempts": 1, "mode": "standard"},
                    s3={"addressing_style": "path" if self.path_style else "auto"},
                    connect_timeout=self.connect_timeout_s,
                    read_timeout=self.read_timeout_s,
                    max_pool_connections=self.max_pool_connections,
                    signature_version=UNSIGNED if self.anonymous else None,
                )
                client = self._new_session().client(
                    "s3", endpoint_url=self.endpoint_url, region_name=self.region, config=config
                )
                for operation in ("PutObject", "UploadPart"):
                    client.meta.events.register(f"before-sign.s3.{operation}", _sign_checksum_not_payload)
                self._client = client
                self._client_pid = pid
            return self._client

    def _call(self, op: str, path: str, fn: Callable[[], T]) -> T:
        """Run one request with the shared retry policy; map failures to our errors."""
        what = f"s3 {op} {self.describe(path)} at {self.endpoint_host}"
        return self._with_retries(op, path, fn, is_transient=is_transient_s3_error, what=what, to_error=self._error)

    def _error(self, op: str, path: str, exc: BaseException) -> CheckpointStorageError:
        if _code(exc):
            status = _status(exc)
            message = _response(exc).get("Error", {}).get("Message", "")
            reason = f"{_code(exc)} (HTTP {status})" + (f": {message}" if message else "")
        else:
            reason = f"{type(exc).__name__}: {exc}"
        text = f"s3: cannot {op} {self.describe(path)} at {self.endpoint_host}: {reason}"
        for secret in (self.secret_access_key, self.session_token):
            if secret and len(secret) >= 8:  # belt and braces: S3 never echoes secrets
                text = text.replace(secret, "***")
        return CheckpointStorageError(text)

    def _pages(self, op: str, path: str, **kwargs: Any) -> Any:
        """ListObjectsV2 pages, each request retried on its own."""
        client = self._get_client()
        kwargs["Bucket"] = self.bucket
        while True:
            page = self._call(op, path, functools.partial(client.list_objects_v2, **kwargs))
            yield page
            if not page.get("IsTruncated"):
                return
            kwargs["ContinuationToken"] = page["NextContinuationToken"]

    def _delete_batch(self, path: str, keys: list[str]) -> None:
        client = self._get_client()
        request = {"Objects": [{"Key": k} for k in keys], "Quiet": True}
        response = self._call("delete", path, lambda: client.delete_objects(Bucket=self.bucket, Delete=request))
        errors = response.get("Errors") or []
        if errors:
            first = errors[0]
            raise CheckpointStorageError(
                f"s3: cannot delete s3://{self.bucket}/{first.get('Key')} at {self.endpoint_host}: "
                f"{first.get('Code')}: {first.get('Message', '')} ({len(errors)} keys failed)"
            )

    def _write_multipart(self, path: str, view: memoryview) -> None:
        client = self._get_client()
        key = _key(path)
        size = view.nbytes
        chunk = max(self.multipart_chunk_size, -(-size // MAX_PARTS))
        parts = [(n, start, min(start + chunk, size)) for n, start in enumerate(range(0, size, chunk), 1)]
        upload_id = self._call(
            "write", path, lambda: client.create_multipart_upload(Bucket=self.bucket, Key=key)["UploadId"]
        )
        ids = {"Bucket": self.bucket, "Key": key, "UploadId": upload_id}

        def upload(part: tuple[int, int, int]) -> dict[str, Any]:
            number, start, end = part
            response = self._call(
                "write",
                path,
                lambda: client.upload_part(PartNumber=number, Body=_ViewReader(view[start:end]), **ids),
            )
            return {"PartNumber": number, "ETag": response["ETag"]}

        try:
            workers = min(self.multipart_concurrency, len(parts))
            if workers > 1:
                pool = ThreadPoolExecutor(workers, thread_name_prefix="s3-part")
                try:
                    done = list(pool.map(upload, parts))
                finally:
                    pool.shutdown(wait=True, cancel_futures=True)
            else:
                done = [upload(p) for p in parts]
            self._complete(path, ids, done)
        except BaseException:
            self._abort(path, ids)
            raise

    def _complete(self, path: str, ids: dict[str, Any], parts: list[dict[str, Any]]) -> None:
        client = self._get_client()
        tried = False

        def complete() -> None:
            nonlocal tried
            try:
                client.complete_multipart_upload(MultipartUpload={"Parts": parts}, **ids)
            except Exception as exc:
                # An earlier attempt may have completed with the reply lost in transit.
                if not (tried and _code(exc) == "NoSuchUpload" and self._has_etag(ids["Key"], parts)):
                    raise
            finally:
                tried = True

        self._call("write", path, complete)

    def _has_etag(self, key: str, parts: list[dict[str, Any]]) -> bool:
        digest = hashlib.md5(usedforsecurity=False)
        for part in parts:
            digest.update(bytes.fromhex(part["ETag"].strip('"')))
        expected = f'"{digest.hexdigest()}-{len(parts)}"'
        try:
            return self._get_client().head_object(Bucket=self.bucket, Key=key)["ETag"] == expected
        except Exception:
            return False

    def _abort(self, path: str, ids: dict[str, Any]) -> None:
        client = self._get_client()
        try:
            self._call("abort upload of", path, lambda: client.abort_multipart_upload(**ids))
        except Exception as exc:  # the original error matters more; S3 lifecycle rules clean up
            log.warning("%s; its parts stay until an AbortIncompleteMultipartUpload rule removes them", exc)


# ---- paths ------------------------------------------------------------------------
def _key(path: str) -> str:
    return path.strip("/")


def _dir_prefix(path: str) -> str:
    key = _key(path)
    return key + "/" if key else ""


# ---- plugin-config parsing ----------------------------------------------------------
_BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9.\-_]{1,61}[a-z0-9]$")
_BUCKET_EXPECTED = "expected a bucket name such as 'my-bucket', 's3a://my-bucket' or 's3://my-bucket'"
_SIZE = re.compile(r"^\s*(\d+)\s*([kmgtp]?)b?\s*$", re.IGNORECASE)

_STATIC_PROVIDERS = {"SimpleAWSCredentialsProvider", "TemporaryAWSCredentialsProvider"}
_ANONYMOUS_PROVIDERS = {"AnonymousAWSCredentialsProvider", "AnonymousCredentialsProvider"}
_CHAIN_PROVIDERS = {
    "InstanceProfileCredentialsProvider",
    "IAMInstanceCredentialsProvider",
    "EnvironmentVariableCredentialsProvider",
    "DefaultAWSCredentialsProviderChain",
    "DefaultCredentialsProvider",
    "ContainerCredentialsProvider",
    "EC2ContainerCredentialsProviderWrapper",
    "WebIdentityTokenCredentialsProvider",
    "ProfileCredentialsProvider",
    "SystemPropertyCredentialsProvider",
}


def _text(cfg: dict[str, Any], key: str) -> str | None:
    value = cfg.get(key)
    if value is None:
        return None
    value = str(value).strip()
    return value or None


def _bool(cfg: dict[str, Any], key: str, default: bool) -> bool:
    value = cfg.get(key)
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "false"):
        return text == "true"
    raise ConfigError(f"plugin-config.{key}", f"{value!r} is not a boolean; expected true or false")


def _size(cfg: dict[str, Any], key: str, default: int, minimum: int = 1) -> int:
    value = cfg.get(key)
    if value is None:
        return default
    match = None if isinstance(value, bool) else _SIZE.match(str(value))
    if match is None:
        raise ConfigError(f"plugin-config.{key}", f"{value!r} is not a size; expected bytes or e.g. 64M, 1G")
    number = int(match.group(1)) << (10 * " kmgtp".index(match.group(2).lower() or " "))
    if number < minimum:
        raise ConfigError(f"plugin-config.{key}", f"{value!r} is too small; expected at least {minimum} bytes")
    return number


def _parse_bucket(value: Any) -> str:
    key = "plugin-config.s3.bucket"
    if value is None or not str(value).strip():
        raise ConfigError(key, f"missing; {_BUCKET_EXPECTED}")
    text = str(value).strip()
    if "://" in text and not re.match(r"^s3a?://", text, re.IGNORECASE):
        raise ConfigError(key, f"{text!r} has an unsupported scheme; {_BUCKET_EXPECTED}")
    name = re.sub(r"^s3a?://", "", text, flags=re.IGNORECASE).rstrip("/")
    if "/" in name:
        raise ConfigError(
            key, f"{text!r} has a path after the bucket; {_BUCKET_EXPECTED} (put the path in 'namespace')"
        )
    if not _BUCKET_NAME.match(name):
        raise ConfigError(key, f"{text!r} is not a valid bucket name; {_BUCKET_EXPECTED}")
    return name


def _endpoint_url(value: str | None, ssl: bool) -> str | None:
    if value is None:
        return None
    url = value if "://" in value else ("https://" if ssl else "http://") + value
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ConfigError(
            "plugin-config.fs.s3a.endpoint",
            f"{value!r} is not an endpoint; expected e.g. 'http://minio:9000' or 's3.eu-west-1.amazonaws.com'",
        )
    return url.rstrip("/")


def _credentials_mode(provider: str | None, access: str | None, secret: str | None, token: str | None) -> str:
    """'static', 'anonymous' or 'chain' (boto3's default credential chain)."""
    key = "plugin-config.fs.s3a.aws.credentials.provider"
    names = [p.strip().rsplit(".", 1)[-1] for p in (provider or "").split(",") if p.strip()]
    unknown = [n for n in names if n not in _STATIC_PROVIDERS | _ANONYMOUS_PROVIDERS | _CHAIN_PROVIDERS]
    if unknown:
        raise ConfigError(
            key,
            f"{unknown[0]!r} is not supported; expected SimpleAWSCredentialsProvider, "
            "TemporaryAWSCredentialsProvider, AnonymousAWSCredentialsProvider or a provider "
            "served by boto3's default chain (e.g. InstanceProfileCredentialsProvider)",
        )
    wants_static = not names or bool(_STATIC_PROVIDERS & set(names))
    only_static = bool(names) and set(names) <= _STATIC_PROVIDERS
    if wants_static and (access or secret or only_static):
        needed = ["fs.s3a.access.key", "fs.s3a.secret.key"]
        if names == ["TemporaryAWSCredentialsProvider"]:
            needed.append("fs.s3a.session.token")
        given = {"fs.s3a.access.key": access, "fs.s3a.secret.key": secret, "fs.s3a.session.token": token}
        for name in needed:
            if not given[name]:
                why = f"{names[0]} needs" if names else "credentials need both"
                raise ConfigError(f"plugin-config.{name}", f"missing; {why} {' and '.join(needed)}")
        return "static"
    if names and set(names) <= _ANONYMOUS_PROVIDERS:
        return "anonymous"
    return "chain"
