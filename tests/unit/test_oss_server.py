"""The test OSS server, driven by the real oss2 SDK."""

from __future__ import annotations

import base64
import hashlib
import socket
import threading

import oss2
import pytest
import requests
from oss2.models import PartInfo

from tests.servers.oss import OssServer, crc64_ecma

AK, SK = "test-ak", "test-sk"
BUCKET = "ckpt-bucket"


@pytest.fixture(scope="module")
def server():
    with OssServer(access_key_id=AK, access_key_secret=SK) as srv:
        yield srv


@pytest.fixture
def srv(server):
    server.clear_faults()
    server.clear_requests()
    server.delete_bucket(BUCKET)
    server.create_bucket(BUCKET)
    return server


@pytest.fixture
def bucket(srv):
    return oss2.Bucket(oss2.Auth(AK, SK), srv.endpoint, BUCKET)


def signed(srv, method, key="", params=None, headers=None, data=b"", secret=SK):
    """Send a request signed by oss2's own V1 signer (headers/params may be changed after)."""
    b = oss2.Bucket(oss2.Auth(AK, secret), srv.endpoint, BUCKET)
    req = oss2.http.Request(method, b._make_url(BUCKET, key), data=data, params=params or {}, headers=headers or {})
    b.auth._sign_request(req, BUCKET, key)
    return req


def send(req):
    return requests.request(req.method, req.url, params=req.params, headers=dict(req.headers), data=req.data)


# ---- objects -----------------------------------------------------------------------------


def test_put_get_roundtrip_with_oss_headers(srv, bucket):
    data = b"checkpoint-state" * 100
    put = bucket.put_object("jobs/1/state", data)
    assert put.etag == hashlib.md5(data).hexdigest().upper()
    assert put.crc == crc64_ecma(data)
    assert len(put.request_id) == 24

    got = bucket.get_object("jobs/1/state")
    assert got.read() == data
    assert got.server_crc == got.client_crc == crc64_ecma(data)
    assert got.headers["x-oss-object-type"] == "Normal"
    assert srv.get_object(BUCKET, "jobs/1/state") == data


def test_crc64_matches_oss2_implementation():
    crc = oss2.utils.Crc64()
    for chunk in (b"", b"a", b"hello world" * 37, bytes(range(256))):
        crc.update(chunk)
    assert crc.crc == crc64_ecma(b"a" + b"hello world" * 37 + bytes(range(256)))


def test_keys_with_special_characters_roundtrip(bucket):
    keys = ["dir/a b+c.json", "dir/ümlaut/ß", "dir/percent%2Fliteral", "dir/q?x=1&y"]
    for k in keys:
        bucket.put_object(k, k.encode())
    for k in keys:
        assert bucket.get_object(k).read() == k.encode()
    listed = [o.key for o in oss2.ObjectIteratorV2(bucket, prefix="dir/")]
    assert listed == sorted(keys)


def test_range_requests(bucket):
    bucket.put_object("r", b"0123456789")
    part = bucket.get_object("r", byte_range=(2, 4))
    assert part.status == 206
    assert part.content_range == "bytes 2-4/10"
    assert part.read() == b"234"
    assert bucket.get_object("r", byte_range=(7, None)).read() == b"789"
    assert bucket.get_object("r", byte_range=(None, 3)).read() == b"789"  # suffix: last 3 bytes
    assert bucket.get_object("r", byte_range=(8, 100)).read() == b"89"  # end clipped to size


def test_invalid_range_is_ignored_unless_standard_behaviour_requested(bucket):
    bucket.put_object("r", b"0123456789")
    whole = bucket.get_object("r", byte_range=(20, 30))
    assert whole.status == 200 and whole.read() == b"0123456789"
    with pytest.raises(oss2.exceptions.ServerError) as err:
        bucket.get_object("r", byte_range=(20, 30), headers={"x-oss-range-behavior": "standard"})
    assert (err.value.status, err.value.code) == (416, "InvalidRange")


def test_head_and_missing_key_and_bucket(srv, bucket):
    bucket.put_object("h", b"abc")
    head = bucket.head_object("h")
    assert head.content_length == 3
    assert head.etag == hashlib.md5(b"abc").hexdigest().upper()
    assert head.last_modified > 0
    with pytest.raises(oss2.exceptions.NoSuchKey):
        bucket.head_object("missing")  # the code travels in x-oss-err: HEAD has no body
    with pytest.raises(oss2.exceptions.NoSuchKey) as err:
        bucket.get_object("missing")
    assert err.value.request_id and err.value.details["HostId"]
    other = oss2.Bucket(oss2.Auth(AK, SK), srv.endpoint, "no-such-bucket")
    with pytest.raises(oss2.exceptions.NoSuchBucket):
        other.head_object("h")
    with pytest.raises(oss2.exceptions.NoSuchBucket):
        other.put_object("h", b"x")
    assert bucket.object_exists("h") and not bucket.object_exists("missing")


def test_delete_and_batch_delete(srv, bucket):
    for k in ("a", "b", "c"):
        bucket.put_object(k, b"x")
    assert bucket.delete_object("a").status == 204
    assert bucket.delete_object("a").status == 204  # missing is fine
    result = bucket.batch_delete_objects(["b", "c", "never-there"])
    assert sorted(result.deleted_keys) == ["b", "c", "never-there"]
    assert srv.keys(BUCKET) == []


def test_batch_delete_checks_content_md5(srv, bucket):
    bucket.put_object("keep", b"x")
    body = oss2.xml_utils.to_batch_delete_objects_request(["keep"], False)
    wrong_md5 = base64.b64encode(b"0" * 16).decode()
    req = signed(srv, "POST", params={"delete": ""}, headers={"Content-MD5": wrong_md5}, data=body)
    resp = send(req)
    assert resp.status_code == 400 and b"<Code>InvalidDigest</Code>" in resp.content
    assert srv.keys(BUCKET) == ["keep"]


def test_copy_object(bucket):
    bucket.put_object("src", b"payload", headers={"x-oss-meta-origin": "test"})
    bucket.copy_object(BUCKET, "src", "dst")
    got = bucket.get_object("dst")
    assert got.read() == b"payload"
    assert got.headers["x-oss-meta-origin"] == "test"
    with pytest.raises(oss2.exceptions.NoSuchKey):
        bucket.copy_object(BUCKET, "missing", "dst2")


# ---- listing -----------------------------------------------------------------------------

KEYS = ["a/1", "a/2", "a/3", "a/sub/x", "a/sub/y", "a/sub2/z", "a/zz", "b/1", "top"]


@pytest.mark.parametrize("v2", [False, True])
def test_list_prefix_delimiter_and_pagination(bucket, v2):
    for k in KEYS:
        bucket.put_object(k, b"x")
    files, dirs, pages = [], [], 0
    token = ""
    while True:
        if v2:
            res = bucket.list_objects_v2(prefix="a/", delimiter="/", continuation_token=token, max_keys=2)
        else:
            res = bucket.list_objects(prefix="a/", delimiter="/", marker=token, max_keys=2)
        pages += 1
        assert len(res.object_list) + len(res.prefix_list) <= 2
        files += [o.key for o in res.object_list]
        dirs += res.prefix_list
        if not res.is_truncated:
            break
        token = res.next_continuation_token if v2 else res.next_marker
    assert files == ["a/1", "a/2", "a/3", "a/zz"]
    assert dirs == ["a/sub/", "a/sub2/"]
    assert pages == 3


def test_list_without_delimiter_is_flat_and_sorted(bucket):
    for k in reversed(KEYS):
        bucket.put_object(k, b"xy")
    listed = list(oss2.ObjectIteratorV2(bucket, max_keys=4))
    assert [o.key for o in listed] == sorted(KEYS)
    assert all(o.size == 2 and not o.is_prefix() for o in listed)


def test_list_max_keys_over_limit_is_rejected(bucket):
    with pytest.raises(oss2.exceptions.ServerError) as err:
        bucket.list_objects(max_keys=1001)
    assert (err.value.status, err.value.code) == (400, "InvalidArgument")


# ---- multipart ---------------------------------------------------------------------------

PART = 100 * 1024


def test_multipart_visible_only_after_complete(srv, bucket):
    upload_id = bucket.init_multipart_upload("big").upload_id
    chunks = [b"a" * PART, b"b" * PART, b"tail"]
    parts = []
    for n, chunk in enumerate(chunks, start=1):
        r = bucket.upload_part("big", upload_id, n, chunk)
        parts.append(PartInfo(n, r.etag, size=len(chunk), part_crc=r.crc))
    assert not bucket.object_exists("big")
    assert [o.key for o in oss2.ObjectIteratorV2(bucket)] == []
    assert srv.pending_uploads(BUCKET) == [("big", upload_id)]

    done = bucket.complete_multipart_upload("big", upload_id, parts)  # oss2 checks the combined CRC
    assert done.etag.endswith("-3")
    assert bucket.get_object("big").read() == b"".join(chunks)
    assert bucket.head_object("big").object_type == "Multipart"
    assert srv.pending_uploads(BUCKET) == []


def test_multipart_abort_and_errors(srv, bucket):
    upload_id = bucket.init_multipart_upload("m").upload_id
    small = bucket.upload_part("m", upload_id, 1, b"too small")
    last = bucket.upload_part("m", upload_id, 2, b"last")
    with pytest.raises(oss2.exceptions.ServerError) as err:
        bucket.complete_multipart_upload("m", upload_id, [PartInfo(1, small.etag), PartInfo(2, last.etag)])
    assert err.value.code == "EntityTooSmall"
    with pytest.raises(oss2.exceptions.ServerError) as err:
        bucket.complete_multipart_upload("m", upload_id, [PartInfo(1, "0" * 32)])
    assert err.value.code == "InvalidPart"
    bucket.abort_multipart_upload("m", upload_id)
    assert srv.pending_uploads(BUCKET) == []
    assert not bucket.object_exists("m")
    with pytest.raises(oss2.exceptions.NoSuchUpload):
        bucket.upload_part("m", upload_id, 3, b"x")


# ---- buckets -----------------------------------------------------------------------------


def test_bucket_create_info_and_conflict(srv):
    b = oss2.Bucket(oss2.Auth(AK, SK), srv.endpoint, "made-by-sdk")
    b.create_bucket()
    try:
        assert b.get_bucket_info().name == "made-by-sdk"
        with pytest.raises(oss2.exceptions.ServerError) as err:
            b.create_bucket()
        assert (err.value.status, err.value.code) == (409, "BucketAlreadyExists")
    finally:
        srv.delete_bucket("made-by-sdk")


# ---- authentication ----------------------------------------------------------------------


def test_wrong_secret_is_signature_does_not_match(srv, bucket):
    bucket.put_object("k", b"x")
    bad = oss2.Bucket(oss2.Auth(AK, "wrong-secret"), srv.endpoint, BUCKET)
    with pytest.raises(oss2.exceptions.SignatureDoesNotMatch) as err:
        bad.get_object("k")
    assert err.value.status == 403
    with pytest.raises(oss2.exceptions.SignatureDoesNotMatch):
        bad.put_object("k", b"overwritten")
    assert srv.get_object(BUCKET, "k") == b"x"


def test_unknown_key_id_is_invalid_access_key_id(srv):
    bad = oss2.Bucket(oss2.Auth("someone-else", SK), srv.endpoint, BUCKET)
    with pytest.raises(oss2.exceptions.ServerError) as err:
        bad.get_object("k")
    assert (err.value.status, err.value.code) == (403, "InvalidAccessKeyId")


def test_missing_authorization_is_denied(srv):
    resp = requests.get(f"{srv.endpoint}/{BUCKET}/k")
    assert resp.status_code == 403 and b"<Code>AccessDenied</Code>" in resp.content


def test_signature_covers_subresources_and_oss_headers_only(srv, bucket):
    upload_id = bucket.init_multipart_upload("k").upload_id
    # a non-signed query parameter may change after signing ...
    req = signed(srv, "GET", params={"prefix": "a"})
    req.params["prefix"] = "b"
    assert send(req).status_code == 200
    # ... a signed sub-resource may not
    req = signed(srv, "PUT", "k", params={"uploadId": upload_id, "partNumber": "1"}, data=b"x")
    req.params["partNumber"] = "2"
    resp = send(req)
    assert resp.status_code == 403 and b"SignatureDoesNotMatch" in resp.content
    # nor may an x-oss-* header
    req = signed(srv, "PUT", "k2", headers={"x-oss-meta-a": "1"}, data=b"x")
    req.headers["x-oss-meta-a"] = "2"
    assert send(req).status_code == 403
    # nor the Content-Type
    req = signed(srv, "PUT", "k3", headers={"Content-Type": "text/plain"}, data=b"x")
    req.headers["Content-Type"] = "text/html"
    assert send(req).status_code == 403
    assert srv.keys(BUCKET) == []


def test_security_token_is_required_when_configured():
    with OssServer(AK, SK, security_token="tok", buckets=[BUCKET]) as srv:
        with_token = oss2.Bucket(oss2.StsAuth(AK, SK, "tok"), srv.endpoint, BUCKET)
        with_token.put_object("k", b"x")
        without = oss2.Bucket(oss2.Auth(AK, SK), srv.endpoint, BUCKET)
        with pytest.raises(oss2.exceptions.AccessDenied):
            without.get_object("k")
        assert all(r.headers.get("x-oss-security-token") in (None, "<redacted>") for r in srv.requests)


# ---- fault injection and the request log -------------------------------------------------


def test_fail_next_answers_with_oss_errors_then_recovers(srv, bucket):
    srv.fail_next(2, status=503)
    for _ in range(2):
        with pytest.raises(oss2.exceptions.ServerError) as err:
            bucket.put_object("k", b"x")
        assert (err.value.status, err.value.code) == (503, "ServiceUnavailable")
        assert err.value.request_id
    bucket.put_object("k", b"x")
    assert [r.status for r in srv.requests] == [503, 503, 200]
    assert [r.fault for r in srv.requests] == ["fail", "fail", None]


def test_fail_next_with_filter_only_counts_matching_requests(srv, bucket):
    srv.fail_next(1, status=500, when=lambda r: r.method == "GET")
    bucket.put_object("k", b"x")  # not a GET: untouched
    with pytest.raises(oss2.exceptions.ServerError) as err:
        bucket.get_object("k")
    assert (err.value.status, err.value.code) == (500, "InternalError")
    assert bucket.get_object("k").read() == b"x"


def test_fail_rate_is_seeded_and_bounded(srv, bucket):
    srv.fail_rate = 1.0
    with pytest.raises(oss2.exceptions.ServerError):
        bucket.put_object("k", b"x")
    srv.fail_rate = 0.5
    outcomes = []
    for _ in range(40):
        try:
            bucket.put_object("k", b"x")
            outcomes.append(True)
        except oss2.exceptions.ServerError as e:
            assert e.status == 503
            outcomes.append(False)
    assert 5 < outcomes.count(False) < 35
    with pytest.raises(ValueError):
        srv.fail_rate = 1.5


def test_drop_connection_next(srv, bucket):
    bucket.put_object("k", b"x")
    srv.drop_connection_next(1)
    with pytest.raises(oss2.exceptions.RequestError):
        bucket.get_object("k")
    assert bucket.get_object("k").read() == b"x"
    dropped = [r for r in srv.requests if r.fault == "drop"]
    assert len(dropped) == 1 and dropped[0].status is None


def test_drop_after_processing_applies_the_request(srv, bucket):
    srv.drop_connection_next(1, when=lambda r: r.method == "PUT", after_processing=True)
    bucket.list_objects_v2()  # not a PUT: answered
    with pytest.raises(oss2.exceptions.RequestError):
        bucket.put_object("k", b"applied")
    assert srv.get_object(BUCKET, "k") == b"applied"
    assert [r.fault for r in srv.requests] == [None, "drop-after"]


def test_a_put_whose_client_died_mid_body_stores_nothing(srv):
    """A client killed after sending a PUT's headers and part of its body (http.client
    sends them in separate writes; a SIGKILLed driver creating a fence record did this):
    real OSS never stores a truncated object, so neither may this server, with or
    without x-oss-forbid-overwrite, nor with a chunked body."""
    for key, extra, body in [
        ("plain", {"Content-Length": "100"}, b'{"seq": 5'),
        ("create", {"Content-Length": "100", "x-oss-forbid-overwrite": "true"}, b""),
        ("chunked", {"Transfer-Encoding": "chunked"}, b"64\r\n" + b'{"seq": 5'),
    ]:
        req = signed(srv, "PUT", key, headers={"Content-Type": "application/octet-stream", **extra})
        head = [
            f"PUT {req.url.split(srv.endpoint.split('//')[1], 1)[1]} HTTP/1.1",
            f"Host: {srv.endpoint.split('//')[1]}",
        ] + [f"{k}: {v}" for k, v in req.headers.items()]
        host, port = srv.endpoint.split("//")[1].split(":")
        with socket.create_connection((host, int(port)), timeout=5) as conn:
            conn.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + body)
            conn.shutdown(socket.SHUT_WR)  # the client is gone: no more bytes will come
            conn.recv(1024)
        assert srv.get_object(BUCKET, key) is None, key


def test_request_log_has_no_authorization(srv, bucket):
    bucket.put_object("logged/key", b"abc", headers={"x-oss-meta-n": "1"})
    bucket.list_objects_v2(prefix="logged/")
    put, listing = srv.requests
    assert (put.method, put.key, put.bucket, put.body_size) == ("PUT", "logged/key", BUCKET, 3)
    assert put.headers["x-oss-meta-n"] == "1"
    assert "authorization" not in put.headers
    assert listing.params["list-type"] == "2" and listing.params["prefix"] == "logged/"


def test_stop_joins_threads_and_frees_the_port():
    before = set(threading.enumerate())
    srv = OssServer(AK, SK, buckets=[BUCKET]).start()
    port = srv.port
    b = oss2.Bucket(oss2.Auth(AK, SK), srv.endpoint, BUCKET)
    b.put_object("k", b"x")  # leaves an idle keep-alive connection open
    srv.stop()
    assert set(threading.enumerate()) <= before  # serving and handler threads all joined
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    srv.stop()  # idempotent
