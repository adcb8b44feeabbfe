"""A protocol-level Aliyun OSS server for tests (standard library only).

Written from Aliyun's public OSS REST API documentation so that the real ``oss2`` SDK
works against it unchanged. ``oss2`` sends path-style URLs
(``http://127.0.0.1:PORT/bucket/key``) when the endpoint host is an IP address or
``localhost``, so that is the only addressing style served here.

What it implements:

* V1 request signing: ``Authorization: OSS <AccessKeyId>:<Signature>`` with
  ``Signature = base64(HMAC-SHA1(secret, VERB\\nContent-MD5\\nContent-Type\\nDate\\n
  CanonicalizedOSSHeaders + CanonicalizedResource))``. Unknown key id -> 403
  ``InvalidAccessKeyId``; bad signature -> 403 ``SignatureDoesNotMatch``; a Date more
  than 15 minutes off -> 403 ``RequestTimeTooSkewed``.
* Objects: PutObject, GetObject (single ``Range``, 206; an invalid range is ignored and
  the whole object returned unless ``x-oss-range-behavior: standard`` asks for 416),
  HeadObject / GetObjectMeta (errors carried base64-encoded in ``x-oss-err`` because a
  HEAD response has no body), DeleteObject, DeleteMultipleObjects (``POST ?delete``,
  Content-MD5 required and checked), CopyObject (``x-oss-copy-source``).
* Listing: ListObjects (``prefix``, ``marker``, ``max-keys``, ``delimiter`` ->
  ``CommonPrefixes``, ``encoding-type=url``) and ListObjectsV2 (``list-type=2``,
  ``continuation-token``, ``start-after``).
* Multipart: InitiateMultipartUpload, UploadPart, CompleteMultipartUpload (the object
  appears only on complete), AbortMultipartUpload.
* Buckets: PutBucket, DeleteBucket, GetBucketInfo, ListBuckets (GET /).
* Response details as OSS sends them: upper-case MD5 ETags, ``x-oss-request-id``,
  ``x-oss-hash-crc64ecma`` (which ``oss2`` checks on uploads), ``x-oss-object-type``,
  and XML error bodies with Code, Message, RequestId and HostId.

Test hooks (Python API, not HTTP): ``create_bucket``, ``put_object``, ``get_object``,
``keys``, ``pending_uploads``; fault injection with ``fail_next``, ``fail_rate`` and
``drop_connection_next`` (before or after the request takes effect); and ``requests``,
a log of every request received (method, path, query, headers without
``Authorization``, status, injected fault).

The request handling core (``OssState.handle``) takes a parsed request and returns a
response object; the HTTP server around it is a thin adapter.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import random
import socket
import socketserver
import sys
import threading
import time
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from email.utils import formatdate, parsedate_to_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, quote, unquote

__all__ = ["OssServer", "OssState", "RequestRecord", "crc64_ecma"]

# ---------------------------------------------------------------------------------------
# constants from the OSS documentation

#: query parameters that are part of the CanonicalizedResource when signing (V1)
SIGNED_SUBRESOURCES = frozenset(
    {
        "acl",
        "append",
        "bucketInfo",
        "callback",
        "callback-var",
        "comp",
        "continuation-token",
        "cors",
        "delete",
        "encryption",
        "endTime",
        "group",
        "inventory",
        "inventoryId",
        "lifecycle",
        "link",
        "live",
        "location",
        "logging",
        "objectInfo",
        "objectMeta",
        "partNumber",
        "policy",
        "position",
        "qos",
        "referer",
        "replication",
        "requestPayment",
        "response-cache-control",
        "response-content-disposition",
        "response-content-encoding",
        "response-content-language",
        "response-content-type",
        "response-expires",
        "restore",
        "security-token",
        "sequential",
        "startTime",
        "stat",
        "status",
        "symlink",
        "tagging",
        "uploadId",
        "uploads",
        "versionId",
        "versioning",
        "versions",
        "vod",
        "website",
        "worm",
        "wormExtend",
        "wormId",
        "x-oss-process",
        "x-oss-traffic-limit",
    }
)

#: sub-resources this server understands; any other signed sub-resource -> 501
_HANDLED_SUBRESOURCES = frozenset(
    {
        "bucketInfo",
        "continuation-token",
        "delete",
        "objectMeta",
        "partNumber",
        "response-cache-control",
        "response-content-disposition",
        "response-content-encoding",
        "response-content-language",
        "response-content-type",
        "response-expires",
        "security-token",
        "uploadId",
        "uploads",
    }
)

MAX_KEYS_LIMIT = 1000
MAX_DELETE_KEYS = 1000
MIN_PART_SIZE = 100 * 1024  # every part but the last
MAX_PART_NUMBER = 10000
MAX_KEY_BYTES = 1023
MAX_CLOCK_SKEW_S = 15 * 60

_STATUS_CODES = {
    400: "InvalidRequest",
    403: "AccessDenied",
    404: "NotFound",
    409: "Conflict",
    429: "Throttling",
    500: "InternalError",
    502: "BadGateway",
    503: "ServiceUnavailable",
    504: "GatewayTimeout",
}

_XML_DECL = b'<?xml version="1.0" encoding="UTF-8"?>\n'

# ---------------------------------------------------------------------------------------
# CRC-64/ECMA-182 as OSS reports it in x-oss-hash-crc64ecma (reflected, init and xorout ~0)

_CRC64_POLY_REFLECTED = 0xC96C5795D7870F42
_CRC64_MASK = 0xFFFFFFFFFFFFFFFF


def _make_crc64_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ _CRC64_POLY_REFLECTED if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC64_TABLE = _make_crc64_table()


def _crc64_ecma_python(data: bytes, crc: int = 0) -> int:
    """CRC-64 of ``data``; pass a previous result as ``crc`` to continue it (~0.1 s/MiB)."""
    table = _CRC64_TABLE
    crc ^= _CRC64_MASK
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ _CRC64_MASK


def _crc64_ecma_c() -> Any:
    """crcmod's C extension (oss2 depends on crcmod), when it is compiled in; else None."""
    try:
        from crcmod import _crcfunext  # noqa: F401 - only present when the C extension built
        from oss2.utils import Crc64
    except ImportError:
        return None

    def crc64(data: bytes, crc: int = 0) -> int:
        digest = Crc64(crc)
        digest.update(data)
        return digest.crc

    sample = bytes(range(256)) * 17 + b"tail"
    if crc64(sample) != _crc64_ecma_python(sample) or crc64(sample[:5], 12345) != _crc64_ecma_python(sample[:5], 12345):
        return None  # never serve different values than the reference
    return crc64


#: CRC-64/ECMA-182: crcmod's C version when available (same values, ~1000x faster)
crc64_ecma = _crc64_ecma_c() or _crc64_ecma_python


# ---------------------------------------------------------------------------------------
# request / response values


@dataclass(frozen=True)
class RequestRecord:
    """One request as the server saw it (``Authorization`` left out)."""

    method: str
    path: str  #: raw (still percent-encoded) path, e.g. ``/bucket/a%2Fb``
    query: tuple[tuple[str, str], ...]  #: decoded query parameters in order
    headers: dict[str, str]  #: lower-cased names
    body_size: int
    status: int | None = None  #: None when the connection was dropped
    fault: str | None = None  #: "fail", "drop" or "drop-after" when injected

    @property
    def params(self) -> dict[str, str]:
        return dict(self.query)

    @property
    def bucket(self) -> str:
        return self.path.lstrip("/").partition("/")[0]

    @property
    def key(self) -> str:
        return unquote(self.path.lstrip("/").partition("/")[2])


@dataclass
class Request:
    method: str
    path: str
    query: list[tuple[str, str]]
    headers: dict[str, str]  #: lower-cased names; repeated headers joined with ","
    body: bytes


@dataclass
class Response:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


class OssError(Exception):
    """An error the server answers with an OSS XML error document."""

    def __init__(self, status: int, code: str, message: str, **extra: str):
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.extra = extra


# ---------------------------------------------------------------------------------------
# storage model


@dataclass
class _Object:
    data: bytes
    etag: str  #: quoted, upper-case hex
    mtime: float
    content_type: str
    meta: dict[str, str]  #: x-oss-meta-* headers, lower-cased names
    object_type: str  #: "Normal" or "Multipart"
    crc64: int


@dataclass
class _Part:
    data: bytes
    etag: str
    crc64: int
    mtime: float


@dataclass
class _Upload:
    bucket: str
    key: str
    content_type: str
    meta: dict[str, str]
    initiated: float
    parts: dict[int, _Part] = field(default_factory=dict)


@dataclass
class _Bucket:
    name: str
    created: float
    objects: dict[str, _Object] = field(default_factory=dict)


def _etag_of(data: bytes) -> str:
    return '"' + hashlib.md5(data).hexdigest().upper() + '"'


def _iso8601(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(ts))


_BUCKET_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")


def _valid_bucket_name(name: str) -> bool:
    """3 to 63 lower-case letters, digits and hyphens, not starting or ending with a hyphen."""
    return 3 <= len(name) <= 63 and set(name) <= _BUCKET_CHARS and name[0] != "-" and name[-1] != "-"


def _xml(root: ET.Element) -> bytes:
    return _XML_DECL + ET.tostring(root, encoding="utf-8", xml_declaration=False)


def _sub(parent: ET.Element, tag: str, text: str | int | None = None) -> ET.Element:
    node = ET.SubElement(parent, tag)
    if text is not None:
        node.text = str(text)
    return node


# ---------------------------------------------------------------------------------------
# the protocol core: parsed request in, response out; no sockets


class OssState:
    """Buckets, objects, uploads and the OSS request semantics; thread-safe."""

    def __init__(
        self,
        access_key_id: str,
        access_key_secret: str,
        security_token: str | None = None,
        host_id: str = "127.0.0.1",
        emit_crc64: bool = True,
        clock: Callable[[], float] = time.time,
    ):
        self.access_key_id = access_key_id
        self._secret = access_key_secret
        self.security_token = security_token
        self.host_id = host_id
        self.emit_crc64 = emit_crc64
        self._clock = clock
        self._lock = threading.RLock()
        self._buckets: dict[str, _Bucket] = {}
        self._uploads: dict[str, _Upload] = {}

    # ---- Python API for tests ---------------------------------------------------------
    def create_bucket(self, name: str) -> None:
        if not _valid_bucket_name(name):
            raise ValueError(f"invalid bucket name {name!r}")
        with self._lock:
            self._buckets.setdefault(name, _Bucket(name, self._clock()))

    def delete_bucket(self, name: str) -> None:
        """Remove a bucket and everything in it (no emptiness check)."""
        with self._lock:
            self._buckets.pop(name, None)
            for upload_id in [u for u, up in self._uploads.items() if up.bucket == name]:
                del self._uploads[upload_id]

    def put_object(self, bucket: str, key: str, data: bytes, content_type: str = "application/octet-stream") -> None:
        with self._lock:
            self._require_bucket(bucket).objects[key] = self._new_object(bytes(data), content_type, {}, "Normal")

    def get_object(self, bucket: str, key: str) -> bytes | None:
        with self._lock:
            obj = self._buckets[bucket].objects.get(key)
            return None if obj is None else obj.data

    def keys(self, bucket: str) -> list[str]:
        with self._lock:
            return sorted(self._buckets[bucket].objects)

    def pending_uploads(self, bucket: str | None = None) -> list[tuple[str, str]]:
        """(key, upload id) of multipart uploads neither completed nor aborted."""
        with self._lock:
            return sorted((up.key, uid) for uid, up in self._uploads.items() if bucket is None or up.bucket == bucket)

    # ---- request entry point ---------------------------------------------------------
    def request_id(self) -> str:
        return uuid.uuid4().hex[:24].upper()

    def handle(self, req: Request) -> Response:
        request_id = self.request_id()
        try:
            resp = self._dispatch(req)
        except OssError as err:
            resp = self.error_response(err, req.method, request_id)
        resp.headers.setdefault("x-oss-request-id", request_id)
        return resp

    def error_response(self, err: OssError, method: str, request_id: str) -> Response:
        root = ET.Element("Error")
        _sub(root, "Code", err.code)
        _sub(root, "Message", err.message)
        _sub(root, "RequestId", request_id)
        _sub(root, "HostId", self.host_id)
        for tag, text in err.extra.items():
            _sub(root, tag, text)
        body = _xml(root)
        headers = {"Content-Type": "application/xml", "x-oss-request-id": request_id}
        if method == "HEAD":  # no body on HEAD: OSS carries the error document in a header
            headers["x-oss-err"] = base64.b64encode(body).decode("ascii")
            body = b""
        return Response(err.status, headers, body)

    # ---- authentication ------------------------------------------------------------
    def string_to_sign(self, req: Request, bucket: str, key: str) -> str:
        h = req.headers
        oss_headers = sorted((name, value) for name, value in h.items() if name.startswith("x-oss-"))
        canonical_headers = "".join(f"{name}:{value}\n" for name, value in oss_headers)
        subresources = sorted((k, v) for k, v in req.query if k in SIGNED_SUBRESOURCES)
        resource = f"/{bucket}/{key}" if bucket else "/"
        if subresources:
            resource += "?" + "&".join(f"{k}={v}" if v else k for k, v in subresources)
        return "\n".join(
            [
                req.method,
                h.get("content-md5", ""),
                h.get("content-type", ""),
                h.get("date", ""),
                canonical_headers + resource,
            ]
        )

    def _authenticate(self, req: Request, bucket: str, key: str) -> None:
        auth = req.headers.get("authorization", "")
        if not auth:
            raise OssError(403, "AccessDenied", "AccessDenied: anonymous access is not allowed.")
        scheme, _, credential = auth.partition(" ")
        if scheme != "OSS":
            raise OssError(403, "AccessDenied", f"Only OSS V1 signatures are supported by this server, got {scheme!r}.")
        key_id, _, signature = credential.rpartition(":")
        if key_id != self.access_key_id:
            raise OssError(
                403,
                "InvalidAccessKeyId",
                "The OSS Access Key Id you provided does not exist in our records.",
                OSSAccessKeyId=key_id,
            )
        date = req.headers.get("date")
        if not date:
            raise OssError(403, "AccessDenied", "Date header is required.")
        try:
            sent = parsedate_to_datetime(date).timestamp()
        except (TypeError, ValueError):
            raise OssError(403, "AccessDenied", f"Invalid Date header {date!r}.") from None
        if abs(sent - self._clock()) > MAX_CLOCK_SKEW_S:
            raise OssError(
                403,
                "RequestTimeTooSkewed",
                "The difference between the request time and the current time is too large.",
            )
        string_to_sign = self.string_to_sign(req, bucket, key)
        expected = base64.b64encode(
            hmac.new(self._secret.encode("utf-8"), string_to_sign.encode("utf-8"), hashlib.sha1).digest()
        ).decode("ascii")
        if not hmac.compare_digest(expected, signature):
            raise OssError(
                403,
                "SignatureDoesNotMatch",
                "The request signature we calculated does not match the signature you provided. "
                "Check your key and signing method.",
                StringToSign=string_to_sign,
            )
        if self.security_token is not None and req.headers.get("x-oss-security-token") != self.security_token:
            raise OssError(403, "AccessDenied", "The security token you provided is invalid.")

    # ---- routing ---------------------------------------------------------------------
    def _dispatch(self, req: Request) -> Response:
        bucket, _, raw_key = req.path.lstrip("/").partition("/")
        key = unquote(raw_key)
        self._authenticate(req, bucket, key)
        params = dict(req.query)
        unknown = sorted(k for k in params if k in SIGNED_SUBRESOURCES and k not in _HANDLED_SUBRESOURCES)
        if unknown:
            raise OssError(501, "NotImplemented", f"This test server does not implement ?{unknown[0]}.")
        method = req.method
        if not bucket:
            if method == "GET":
                return self._list_buckets()
            raise OssError(405, "MethodNotAllowed", f"{method} is not allowed on the service.")
        if not _valid_bucket_name(bucket):
            raise OssError(400, "InvalidBucketName", "The specified bucket is not valid.", BucketName=bucket)
        if not key:
            return self._bucket_op(req, bucket, params)
        if len(key.encode("utf-8")) > MAX_KEY_BYTES or key.startswith(("/", "\\")):
            raise OssError(400, "InvalidObjectName", "The specified object is not valid.")
        return self._object_op(req, bucket, key, params)

    def _bucket_op(self, req: Request, bucket: str, params: dict[str, str]) -> Response:
        method = req.method
        if method == "PUT":
            return self._put_bucket(bucket)
        if method == "DELETE":
            return self._delete_bucket(bucket)
        if method == "GET":
            if "bucketInfo" in params:
                return self._get_bucket_info(bucket)
            if params.get("list-type") == "2":
                return self._list_objects(bucket, params, v2=True)
            return self._list_objects(bucket, params, v2=False)
        if method == "POST" and "delete" in params:
            return self._delete_multiple(req, bucket)
        raise OssError(405, "MethodNotAllowed", f"{method} is not allowed on a bucket here.")

    def _object_op(self, req: Request, bucket: str, key: str, params: dict[str, str]) -> Response:
        method = req.method
        if method == "PUT":
            if "uploadId" in params or "partNumber" in params:
                if "x-oss-copy-source" in req.headers:
                    raise OssError(501, "NotImplemented", "UploadPartCopy is not implemented by this server.")
                return self._upload_part(req, bucket, key, params)
            if "x-oss-copy-source" in req.headers:
                return self._copy_object(req, bucket, key)
            return self._put_object(req, bucket, key)
        if method in ("GET", "HEAD"):
            return self._get_object(req, bucket, key, params)
        if method == "DELETE":
            if "uploadId" in params:
                return self._abort_upload(bucket, key, params["uploadId"])
            return self._delete_object(bucket, key)
        if method == "POST":
            if "uploads" in params:
                return self._init_upload(req, bucket, key)
            if "uploadId" in params:
                return self._complete_upload(req, bucket, key, params["uploadId"])
        raise OssError(405, "MethodNotAllowed", f"{method} is not allowed on an object here.")

    # ---- helpers ---------------------------------------------------------------------
    def _require_bucket(self, bucket: str) -> _Bucket:
        found = self._buckets.get(bucket)
        if found is None:
            raise OssError(404, "NoSuchBucket", "The specified bucket does not exist.", BucketName=bucket)
        return found

    def _new_object(
        self,
        data: bytes,
        content_type: str,
        meta: dict[str, str],
        object_type: str,
        etag: str | None = None,
        crc: int | None = None,
    ) -> _Object:
        return _Object(
            data=data,
            etag=etag or _etag_of(data),
            mtime=self._clock(),
            content_type=content_type,
            meta=meta,
            object_type=object_type,
            crc64=crc if crc is not None else (crc64_ecma(data) if self.emit_crc64 else 0),
        )

    @staticmethod
    def _check_md5(req: Request) -> None:
        sent = req.headers.get("content-md5")
        if sent is None:
            return
        actual = base64.b64encode(hashlib.md5(req.body).digest()).decode("ascii")
        if sent.strip() != actual:
            raise OssError(400, "InvalidDigest", "The Content-MD5 you specified was invalid.")

    @staticmethod
    def _user_meta(req: Request) -> dict[str, str]:
        return {k: v for k, v in req.headers.items() if k.startswith("x-oss-meta-")}

    def _object_headers(self, obj: _Object) -> dict[str, str]:
        headers = {
            "ETag": obj.etag,
            "Last-Modified": formatdate(obj.mtime, usegmt=True),
            "Content-Type": obj.content_type,
            "x-oss-object-type": obj.object_type,
            "x-oss-storage-class": "Standard",
            "Accept-Ranges": "bytes",
        }
        if self.emit_crc64:
            headers["x-oss-hash-crc64ecma"] = str(obj.crc64)
        headers.update(obj.meta)
        return headers

    def _write_result_headers(self, obj: _Object) -> dict[str, str]:
        headers = {"ETag": obj.etag}
        if self.emit_crc64:
            headers["x-oss-hash-crc64ecma"] = str(obj.crc64)
        return headers

    # ---- buckets ---------------------------------------------------------------------
    def _put_bucket(self, bucket: str) -> Response:
        with self._lock:
            if bucket in self._buckets:
                raise OssError(
                    409, "BucketAlreadyExists", "The requested bucket name is not available.", BucketName=bucket
                )
            self._buckets[bucket] = _Bucket(bucket, self._clock())
        return Response(200, {"Location": f"/{bucket}"})

    def _delete_bucket(self, bucket: str) -> Response:
        with self._lock:
            found = self._require_bucket(bucket)
            if found.objects or any(up.bucket == bucket for up in self._uploads.values()):
                raise OssError(409, "BucketNotEmpty", "The bucket you tried to delete is not empty.", BucketName=bucket)
            del self._buckets[bucket]
        return Response(204)

    def _get_bucket_info(self, bucket: str) -> Response:
        with self._lock:
            found = self._require_bucket(bucket)
            created = found.created
        root = ET.Element("BucketInfo")
        node = _sub(root, "Bucket")
        _sub(node, "CreationDate", _iso8601(created))
        _sub(node, "ExtranetEndpoint", self.host_id)
        _sub(node, "IntranetEndpoint", self.host_id)
        _sub(node, "Location", "oss-test-local")
        _sub(node, "Name", bucket)
        _sub(node, "StorageClass", "Standard")
        owner = _sub(node, "Owner")
        _sub(owner, "DisplayName", self.access_key_id)
        _sub(owner, "ID", self.access_key_id)
        acl = _sub(node, "AccessControlList")
        _sub(acl, "Grant", "private")
        return Response(200, {"Content-Type": "application/xml"}, _xml(root))

    def _list_buckets(self) -> Response:
        with self._lock:
            buckets = sorted((b.name, b.created) for b in self._buckets.values())
        root = ET.Element("ListAllMyBucketsResult")
        owner = _sub(root, "Owner")
        _sub(owner, "ID", self.access_key_id)
        _sub(owner, "DisplayName", self.access_key_id)
        node = _sub(root, "Buckets")
        for name, created in buckets:
            b = _sub(node, "Bucket")
            _sub(b, "CreationDate", _iso8601(created))
            _sub(b, "ExtranetEndpoint", self.host_id)
            _sub(b, "IntranetEndpoint", self.host_id)
            _sub(b, "Location", "oss-test-local")
            _sub(b, "Name", name)
            _sub(b, "StorageClass", "Standard")
        return Response(200, {"Content-Type": "application/xml"}, _xml(root))

    # ---- listing ---------------------------------------------------------------------
    def _list_objects(self, bucket: str, params: dict[str, str], v2: bool) -> Response:
        prefix = params.get("prefix", "")
        delimiter = params.get("delimiter", "")
        try:
            max_keys = int(params.get("max-keys") or 100)
        except ValueError:
            raise OssError(400, "InvalidArgument", "max-keys must be an integer.", ArgumentName="max-keys") from None
        if not 0 <= max_keys <= MAX_KEYS_LIMIT:
            raise OssError(
                400,
                "InvalidArgument",
                f"max-keys must be between 0 and {MAX_KEYS_LIMIT}.",
                ArgumentName="max-keys",
                ArgumentValue=str(max_keys),
            )
        encoding_type = params.get("encoding-type", "")
        if encoding_type not in ("", "url"):
            raise OssError(400, "InvalidArgument", "encoding-type must be url.", ArgumentName="encoding-type")
        encode = encoding_type == "url"
        if v2:
            token = params.get("continuation-token", "")
            if token:
                try:
                    marker = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode("utf-8")
                except ValueError:
                    raise OssError(
                        400,
                        "InvalidArgument",
                        "The continuation token is not valid.",
                        ArgumentName="continuation-token",
                    ) from None
            else:
                marker = params.get("start-after", "")
        else:
            marker = params.get("marker", "")

        with self._lock:
            found = self._require_bucket(bucket)
            snapshot = sorted((k, o) for k, o in found.objects.items() if k.startswith(prefix) and k > marker)
        contents: list[tuple[str, _Object]] = []
        prefixes: list[str] = []
        truncated = False
        last = ""
        for k, obj in snapshot:
            common = None
            if delimiter:
                cut = k.find(delimiter, len(prefix))
                if cut >= 0:
                    common = k[: cut + len(delimiter)]
            if common is not None and (common <= marker or (prefixes and prefixes[-1] == common)):
                continue  # rolled up into a prefix already returned on this or an earlier page
            if len(contents) + len(prefixes) >= max_keys:
                truncated = True
                break
            if common is not None:
                prefixes.append(common)
                last = common
            else:
                contents.append((k, obj))
                last = k

        enc = (lambda s: quote(s, safe="")) if encode else (lambda s: s)
        root = ET.Element("ListBucketResult")
        _sub(root, "Name", bucket)
        _sub(root, "Prefix", enc(prefix))
        if v2:
            if params.get("continuation-token"):
                _sub(root, "ContinuationToken", params["continuation-token"])
            if params.get("start-after"):
                _sub(root, "StartAfter", enc(params["start-after"]))
        else:
            _sub(root, "Marker", enc(marker))
        _sub(root, "MaxKeys", max_keys)
        _sub(root, "Delimiter", enc(delimiter))
        if encode:
            _sub(root, "EncodingType", "url")
        _sub(root, "IsTruncated", "true" if truncated else "false")
        if truncated:
            if v2:
                _sub(
                    root,
                    "NextContinuationToken",
                    base64.urlsafe_b64encode(last.encode("utf-8")).decode("ascii").rstrip("="),
                )
            else:
                _sub(root, "NextMarker", enc(last))
        if v2:
            _sub(root, "KeyCount", len(contents) + len(prefixes))
        for k, obj in contents:
            node = _sub(root, "Contents")
            _sub(node, "Key", enc(k))
            _sub(node, "LastModified", _iso8601(obj.mtime))
            _sub(node, "ETag", obj.etag)
            _sub(node, "Type", obj.object_type)
            _sub(node, "Size", len(obj.data))
            _sub(node, "StorageClass", "Standard")
            if not v2 or params.get("fetch-owner") == "true":
                owner = _sub(node, "Owner")
                _sub(owner, "ID", self.access_key_id)
                _sub(owner, "DisplayName", self.access_key_id)
        for p in prefixes:
            _sub(_sub(root, "CommonPrefixes"), "Prefix", enc(p))
        return Response(200, {"Content-Type": "application/xml"}, _xml(root))

    # ---- objects ---------------------------------------------------------------------
    def _put_object(self, req: Request, bucket: str, key: str) -> Response:
        self._check_md5(req)
        content_type = req.headers.get("content-type") or "application/octet-stream"
        obj = self._new_object(req.body, content_type, self._user_meta(req), "Normal")
        with self._lock:
            found = self._require_bucket(bucket)
            if req.headers.get("x-oss-forbid-overwrite", "").lower() == "true" and key in found.objects:
                raise OssError(
                    409,
                    "FileAlreadyExists",
                    "The object you specified already exists and can not be overwritten.",
                )
            found.objects[key] = obj
        headers = self._write_result_headers(obj)
        headers["Content-MD5"] = base64.b64encode(hashlib.md5(obj.data).digest()).decode("ascii")
        return Response(200, headers)

    def _get_object(self, req: Request, bucket: str, key: str, params: dict[str, str]) -> Response:
        with self._lock:
            obj = self._require_bucket(bucket).objects.get(key)
        if obj is None:
            raise OssError(404, "NoSuchKey", "The specified key does not exist.", Key=key)
        if req.method == "HEAD" and "objectMeta" in params:  # GetObjectMeta: a reduced header set
            headers = {
                "ETag": obj.etag,
                "Last-Modified": formatdate(obj.mtime, usegmt=True),
                "Content-Length": str(len(obj.data)),
            }
            if self.emit_crc64:
                headers["x-oss-hash-crc64ecma"] = str(obj.crc64)
            return Response(200, headers)
        headers = self._object_headers(obj)
        for name in (
            "content-type",
            "content-language",
            "expires",
            "cache-control",
            "content-disposition",
            "content-encoding",
        ):
            override = params.get("response-" + name)
            if override:
                headers[name.title()] = override
        size = len(obj.data)
        span = self._parse_range(
            req.headers.get("range"), size, req.headers.get("x-oss-range-behavior", "").lower() == "standard"
        )
        if span is None:
            headers["Content-Length"] = str(size)
            return Response(200, headers, obj.data)
        start, end = span
        headers["Content-Range"] = f"bytes {start}-{end}/{size}"
        headers["Content-Length"] = str(end - start + 1)
        return Response(206, headers, obj.data[start : end + 1])

    @staticmethod
    def _parse_range(value: str | None, size: int, standard: bool) -> tuple[int, int] | None:
        """(first, last) byte to send, or None for the whole object.

        OSS ignores a range it cannot satisfy and returns the whole object with 200,
        unless the request says ``x-oss-range-behavior: standard``, then it is 416.
        """
        if not value:
            return None
        value = value.strip()
        if not value.startswith("bytes=") or "," in value:
            return None  # malformed or multi-range: ignored, whole object
        first_s, dash, last_s = value[len("bytes=") :].partition("-")
        try:
            if not dash or (not first_s and not last_s):
                return None
            if not first_s:  # suffix range: last N bytes
                n = int(last_s)
                if n <= 0 or size == 0:
                    raise ValueError
                return max(0, size - n), size - 1
            first = int(first_s)
            last = int(last_s) if last_s else size - 1
            if first < 0 or first >= size or last < first:
                raise ValueError
            return first, min(last, size - 1)
        except ValueError:
            if standard:
                raise OssError(
                    416,
                    "InvalidRange",
                    "The requested range cannot be satisfied.",
                    RangeRequested=value,
                    ActualObjectSize=str(size),
                ) from None
            return None

    def _delete_object(self, bucket: str, key: str) -> Response:
        with self._lock:
            self._require_bucket(bucket).objects.pop(key, None)
        return Response(204)

    def _delete_multiple(self, req: Request, bucket: str) -> Response:
        if "content-md5" not in req.headers:
            raise OssError(400, "InvalidDigest", "The Content-MD5 header is required for DeleteMultipleObjects.")
        self._check_md5(req)
        try:
            root = ET.fromstring(req.body)
        except ET.ParseError:
            raise OssError(400, "MalformedXML", "The XML you provided was not well-formed.") from None
        if root.tag != "Delete":
            raise OssError(400, "MalformedXML", "The root element must be Delete.")
        quiet = (root.findtext("Quiet") or "false").strip().lower() == "true"
        keys = [node.findtext("Key") or "" for node in root.findall("Object")]
        if not keys or len(keys) > MAX_DELETE_KEYS or any(not k for k in keys):
            raise OssError(400, "MalformedXML", f"Between 1 and {MAX_DELETE_KEYS} non-empty keys are required.")
        encode = dict(req.query).get("encoding-type") == "url"
        if encode:
            keys = [unquote(k) for k in keys]
        with self._lock:
            objects = self._require_bucket(bucket).objects
            for k in keys:
                objects.pop(k, None)
        result = ET.Element("DeleteResult")
        if encode:
            _sub(result, "EncodingType", "url")
        if not quiet:
            for k in keys:
                _sub(_sub(result, "Deleted"), "Key", quote(k, safe="") if encode else k)
        return Response(200, {"Content-Type": "application/xml"}, _xml(result))

    def _copy_object(self, req: Request, bucket: str, key: str) -> Response:
        source = req.headers["x-oss-copy-source"]
        src_path = source.partition("?")[0]
        src_bucket, _, src_key = src_path.lstrip("/").partition("/")
        src_key = unquote(src_key)
        directive = req.headers.get("x-oss-metadata-directive", "COPY").upper()
        with self._lock:
            src_obj = self._require_bucket(src_bucket).objects.get(src_key)
            if src_obj is None:
                raise OssError(404, "NoSuchKey", "The specified key does not exist.", Key=src_key)
            target = self._require_bucket(bucket)
            if directive == "REPLACE":
                content_type = req.headers.get("content-type") or "application/octet-stream"
                meta = self._user_meta(req)
            else:
                content_type, meta = src_obj.content_type, dict(src_obj.meta)
            obj = self._new_object(
                src_obj.data, content_type, meta, src_obj.object_type, etag=src_obj.etag, crc=src_obj.crc64
            )
            target.objects[key] = obj
        root = ET.Element("CopyObjectResult")
        _sub(root, "ETag", obj.etag)
        _sub(root, "LastModified", _iso8601(obj.mtime))
        headers = {"Content-Type": "application/xml"}
        headers.update(self._write_result_headers(obj))
        return Response(200, headers, _xml(root))

    # ---- multipart -------------------------------------------------------------------
    def _init_upload(self, req: Request, bucket: str, key: str) -> Response:
        upload_id = uuid.uuid4().hex.upper()
        with self._lock:
            self._require_bucket(bucket)
            self._uploads[upload_id] = _Upload(
                bucket,
                key,
                req.headers.get("content-type") or "application/octet-stream",
                self._user_meta(req),
                self._clock(),
            )
        root = ET.Element("InitiateMultipartUploadResult")
        _sub(root, "Bucket", bucket)
        _sub(root, "Key", key)
        _sub(root, "UploadId", upload_id)
        return Response(200, {"Content-Type": "application/xml"}, _xml(root))

    def _upload_of(self, bucket: str, key: str, upload_id: str) -> _Upload:
        self._require_bucket(bucket)
        upload = self._uploads.get(upload_id)
        if upload is None or upload.bucket != bucket or upload.key != key:
            raise OssError(404, "NoSuchUpload", "The specified upload does not exist.", UploadId=upload_id)
        return upload

    def _upload_part(self, req: Request, bucket: str, key: str, params: dict[str, str]) -> Response:
        try:
            number = int(params.get("partNumber", ""))
        except ValueError:
            number = 0
        if not 1 <= number <= MAX_PART_NUMBER:
            raise OssError(
                400,
                "InvalidArgument",
                f"Part number must be an integer between 1 and {MAX_PART_NUMBER}.",
                ArgumentName="partNumber",
            )
        self._check_md5(req)
        part = _Part(req.body, _etag_of(req.body), crc64_ecma(req.body) if self.emit_crc64 else 0, self._clock())
        with self._lock:
            self._upload_of(bucket, key, params.get("uploadId", "")).parts[number] = part
        headers = {"ETag": part.etag}
        if self.emit_crc64:
            headers["x-oss-hash-crc64ecma"] = str(part.crc64)
        return Response(200, headers)

    def _complete_upload(self, req: Request, bucket: str, key: str, upload_id: str) -> Response:
        with self._lock:
            upload = self._upload_of(bucket, key, upload_id)
            if req.headers.get("x-oss-complete-all", "").lower() == "yes":
                if req.body:
                    raise OssError(400, "InvalidArgument", "x-oss-complete-all must come with an empty body.")
                wanted = [(n, upload.parts[n].etag) for n in sorted(upload.parts)]
            else:
                wanted = self._parse_complete_body(req.body)
            chosen: list[_Part] = []
            previous = 0
            for number, etag in wanted:
                if number <= previous:
                    raise OssError(400, "InvalidPartOrder", "The list of parts was not in ascending order.")
                previous = number
                part = upload.parts.get(number)
                if part is None or part.etag.strip('"').upper() != etag.strip().strip('"').upper():
                    raise OssError(
                        400,
                        "InvalidPart",
                        "One or more of the specified parts could not be found.",
                        PartNumber=str(number),
                    )
                chosen.append(part)
            if not chosen:
                raise OssError(400, "MalformedXML", "At least one part is required.")
            for part in chosen[:-1]:
                if len(part.data) < MIN_PART_SIZE:
                    raise OssError(
                        400, "EntityTooSmall", "Your proposed upload is smaller than the minimum allowed size."
                    )
            data = b"".join(p.data for p in chosen)
            digest = hashlib.md5(b"".join(bytes.fromhex(p.etag.strip('"')) for p in chosen)).hexdigest().upper()
            crc = 0
            if self.emit_crc64:
                for p in chosen:
                    crc = crc64_ecma(p.data, crc)
            obj = self._new_object(
                data, upload.content_type, upload.meta, "Multipart", etag=f'"{digest}-{len(chosen)}"', crc=crc
            )
            self._require_bucket(bucket).objects[key] = obj
            del self._uploads[upload_id]
        root = ET.Element("CompleteMultipartUploadResult")
        _sub(root, "Location", f"http://{self.host_id}/{bucket}/{quote(key)}")
        _sub(root, "Bucket", bucket)
        _sub(root, "Key", key)
        _sub(root, "ETag", obj.etag)
        headers = {"Content-Type": "application/xml"}
        headers.update(self._write_result_headers(obj))
        return Response(200, headers, _xml(root))

    @staticmethod
    def _parse_complete_body(body: bytes) -> list[tuple[int, str]]:
        try:
            root = ET.fromstring(body)
            if root.tag != "CompleteMultipartUpload":
                raise ValueError
            return [(int(p.findtext("PartNumber") or ""), p.findtext("ETag") or "") for p in root.findall("Part")]
        except (ET.ParseError, ValueError):
            raise OssError(400, "MalformedXML", "The XML you provided was not well-formed.") from None

    def _abort_upload(self, bucket: str, key: str, upload_id: str) -> Response:
        with self._lock:
            self._upload_of(bucket, key, upload_id)
            del self._uploads[upload_id]
        return Response(204)


# ---------------------------------------------------------------------------------------
# fault injection


@dataclass
class _FaultRule:
    remaining: int
    kind: str  #: "fail", "drop" (before processing) or "drop-after" (processed, answer lost)
    when: Callable[[RequestRecord], bool] | None
    status: int = 0
    code: str = ""


class _Faults:
    def __init__(self, seed: int):
        self.lock = threading.Lock()
        self.rules: list[_FaultRule] = []
        self.rate = 0.0
        self.rate_status = 503
        self.random = random.Random(seed)

    def decide(self, record: RequestRecord) -> _FaultRule | None:
        """The fault to inject for ``record`` (its rule's count is consumed), or None."""
        with self.lock:
            for rule in self.rules:
                if rule.remaining > 0 and (rule.when is None or rule.when(record)):
                    rule.remaining -= 1
                    self.rules = [r for r in self.rules if r.remaining > 0]
                    return rule
            if self.rate > 0 and self.random.random() < self.rate:
                status = self.rate_status
                return _FaultRule(1, "fail", None, status, _STATUS_CODES.get(status, "InternalError"))
        return None


# ---------------------------------------------------------------------------------------
# HTTP adapter


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    #: headers and body go out as separate writes: without TCP_NODELAY, Nagle plus the
    #: client's delayed ACK stall every small response by ~40 ms
    disable_nagle_algorithm = True
    server_version = "AliyunOSS"
    sys_version = ""
    timeout = 30  # seconds an idle keep-alive connection may stay open

    server: _HttpServer

    def setup(self) -> None:
        super().setup()
        self.server.track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.track(self.connection, add=False)

    def version_string(self) -> str:
        return self.server_version

    def log_message(self, format: str, *args: object) -> None:  # base signature
        pass  # quiet: tests read srv.requests instead

    def _read_body(self) -> bytes | None:
        """The request body, or None when the client went away before sending all of it:
        OSS stores nothing of an incomplete request (a killed client sends the headers
        and the body in separate writes, so it can die between them)."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size_line = self.rfile.readline(65537)
                if not size_line.endswith(b"\n"):
                    return None
                size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(chunks)
                chunk = self.rfile.read(size)
                if len(chunk) < size:
                    return None
                chunks.append(chunk)
                self.rfile.readline(3)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        return body if len(body) == length else None

    def _serve(self) -> None:
        owner: OssServer = self.server.owner
        body = self._read_body()
        if body is None:
            self._hang_up()
            return
        headers: dict[str, str] = {}
        for name, value in self.headers.items():
            lname = name.lower()
            headers[lname] = f"{headers[lname]},{value}" if lname in headers else value
        path, _, query_string = self.path.partition("?")
        query = parse_qsl(query_string, keep_blank_values=True)
        logged = {k: v for k, v in headers.items() if k != "authorization"}
        if "x-oss-security-token" in logged:
            logged["x-oss-security-token"] = "<redacted>"
        record = RequestRecord(self.command, path, tuple(query), logged, len(body))

        fault = owner._faults.decide(record)
        state = owner.state
        if fault is None:
            resp = state.handle(Request(self.command, path, query, headers, body))
            owner._log(record, resp.status, None)
            self._send(resp)
        elif fault.kind == "fail":
            resp = state.error_response(
                OssError(fault.status, fault.code, f"Injected failure ({fault.status} {fault.code})."),
                self.command,
                state.request_id(),
            )
            owner._log(record, fault.status, "fail")
            self._send(resp)
        else:
            if fault.kind == "drop-after":
                state.handle(Request(self.command, path, query, headers, body))  # applied, answer lost
            owner._log(record, None, fault.kind)
            self._hang_up()

    def _hang_up(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _send(self, resp: Response) -> None:
        self.send_response(resp.status)
        has_length = False
        for name, value in resp.headers.items():
            if name.lower() == "content-length":
                has_length = True
            self.send_header(name, value)
        if not has_length:
            self.send_header("Content-Length", str(len(resp.body)))
        self.end_headers()
        if self.command != "HEAD" and resp.body:
            self.wfile.write(resp.body)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _serve


class _HttpServer(ThreadingHTTPServer):
    daemon_threads = False  # stop() joins handler threads
    block_on_close = True
    allow_reuse_address = True

    def __init__(self, owner: OssServer):
        self.owner = owner
        self._conns: set[socket.socket] = set()
        self._conns_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind would call socket.getfqdn(), a reverse DNS lookup
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    def track(self, conn: socket.socket, add: bool) -> None:
        with self._conns_lock:
            (self._conns.add if add else self._conns.discard)(conn)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client resetting an idle keep-alive connection is not a server error.
        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            super().handle_error(request, client_address)

    def close_connections(self) -> None:
        with self._conns_lock:
            conns = list(self._conns)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class OssServer:
    """An OSS endpoint on 127.0.0.1 in a background thread.

    >>> with OssServer(access_key_id="ak", access_key_secret="sk") as srv:
    ...     srv.create_bucket("ckpt")
    ...     bucket = oss2.Bucket(oss2.Auth("ak", "sk"), srv.endpoint, "ckpt")
    """

    def __init__(
        self,
        access_key_id: str = "test-ak",
        access_key_secret: str = "test-sk",
        *,
        security_token: str | None = None,
        buckets: Iterable[str] = (),
        seed: int = 0,
        emit_crc64: bool = True,
    ):
        self.state = OssState(access_key_id, access_key_secret, security_token=security_token, emit_crc64=emit_crc64)
        self._faults = _Faults(seed)
        self._log_lock = threading.Lock()
        self._requests: list[RequestRecord] = []
        self._httpd: _HttpServer | None = None
        self._thread: threading.Thread | None = None
        for name in buckets:
            self.state.create_bucket(name)

    # ---- lifecycle -------------------------------------------------------------------
    def start(self) -> OssServer:
        if self._httpd is not None:
            return self
        self._httpd = _HttpServer(self)
        self.state.host_id = f"127.0.0.1:{self.port}"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"oss-server-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, thread = self._httpd, self._thread
        if httpd is None:
            return
        httpd.shutdown()  # stop accepting
        if thread is not None:
            thread.join()
        httpd.close_connections()  # wake handler threads blocked on idle keep-alive sockets
        httpd.server_close()  # closes the listening socket and joins handler threads
        self._httpd = self._thread = None

    def __enter__(self) -> OssServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("server not started")
        return self._httpd.server_address[1]

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # ---- data API --------------------------------------------------------------------
    def create_bucket(self, name: str) -> None:
        self.state.create_bucket(name)

    def delete_bucket(self, name: str) -> None:
        self.state.delete_bucket(name)

    def put_object(self, bucket: str, key: str, data: bytes) -> None:
        self.state.put_object(bucket, key, data)

    def get_object(self, bucket: str, key: str) -> bytes | None:
        return self.state.get_object(bucket, key)

    def keys(self, bucket: str) -> list[str]:
        return self.state.keys(bucket)

    def pending_uploads(self, bucket: str | None = None) -> list[tuple[str, str]]:
        return self.state.pending_uploads(bucket)

    # ---- fault injection -------------------------------------------------------------
    def fail_next(
        self,
        n: int,
        status: int = 503,
        code: str | None = None,
        when: Callable[[RequestRecord], bool] | None = None,
    ) -> None:
        """Answer the next ``n`` requests (those ``when`` accepts, if given) with an error."""
        rule = _FaultRule(n, "fail", when, status, code or _STATUS_CODES.get(status, "InternalError"))
        with self._faults.lock:
            self._faults.rules.append(rule)

    @property
    def fail_rate(self) -> float:
        return self._faults.rate

    @fail_rate.setter
    def fail_rate(self, rate: float) -> None:
        """Fail this fraction of requests with 503 (seeded, so runs repeat)."""
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"fail_rate must be within [0, 1], got {rate}")
        with self._faults.lock:
            self._faults.rate = rate

    def drop_connection_next(
        self,
        n: int,
        when: Callable[[RequestRecord], bool] | None = None,
        after_processing: bool = False,
    ) -> None:
        """Close the connection without answering the next ``n`` (matching) requests.

        By default the request is dropped before it has any effect; with
        ``after_processing`` it is carried out first and only the answer is lost.
        """
        rule = _FaultRule(n, "drop-after" if after_processing else "drop", when)
        with self._faults.lock:
            self._faults.rules.append(rule)

    def clear_faults(self) -> None:
        with self._faults.lock:
            self._faults.rules.clear()
            self._faults.rate = 0.0

    # ---- request log -----------------------------------------------------------------
    def _log(self, record: RequestRecord, status: int | None, fault: str | None) -> None:
        with self._log_lock:
            self._requests.append(replace(record, status=status, fault=fault))

    @property
    def requests(self) -> list[RequestRecord]:
        with self._log_lock:
            return list(self._requests)

    def clear_requests(self) -> None:
        with self._log_lock:
            self._requests.clear()
