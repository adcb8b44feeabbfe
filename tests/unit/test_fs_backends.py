"""Backend-specific behaviour of the local, memory and S3 file systems.

The shared behaviour is in tests/contract/test_filesystem_contract.py; this file covers
what only one backend has: configuration mapping, multipart uploads, error mapping.
"""

from __future__ import annotations

import base64
import errno
import hashlib
import os
import pickle
import uuid

import pytest

from airflow_provider_seatunnel_ckpt.errors import CheckpointStorageError, ConfigError
from airflow_provider_seatunnel_ckpt.storage import fs_local, fs_s3
from airflow_provider_seatunnel_ckpt.storage.fs_local import LocalFileSystem
from airflow_provider_seatunnel_ckpt.storage.fs_memory import MemoryFileSystem
from airflow_provider_seatunnel_ckpt.storage.fs_s3 import S3FileSystem, is_transient_s3_error

FAST = {"retry_attempts": 3, "retry_initial_wait_s": 0.01, "retry_max_wait_s": 0.02}
MiB = 1 << 20


# ---- local --------------------------------------------------------------------------------
@pytest.mark.parametrize("default_fs", [None, "file:///", "file:/", " file:/// "])
def test_local_from_plugin_config(default_fs):
    cfg = {"storage.type": "hdfs", "namespace": "/tmp/ckpt/"}
    if default_fs is not None:
        cfg["fs.defaultFS"] = default_fs
    assert isinstance(LocalFileSystem.from_plugin_config(cfg), LocalFileSystem)


@pytest.mark.parametrize("default_fs", ["hdfs://localhost:9000", "file:///tmp/ckpt", "s3a://b"])
def test_local_from_plugin_config_rejects_other_file_systems(default_fs):
    with pytest.raises(ConfigError) as err:
        LocalFileSystem.from_plugin_config({"fs.defaultFS": default_fs})
    assert err.value.key == "plugin-config.fs.defaultFS"
    assert "file:///" in err.value.problem


def test_local_permission_error_names_backend_and_path(tmp_path, monkeypatch):
    fs = LocalFileSystem()
    target = str(tmp_path / "d" / "f")

    def denied(*_a, **_k):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(fs_local.os, "replace", denied)
    with pytest.raises(CheckpointStorageError, match=r"^local: cannot write .*/d/f: Permission denied"):
        fs.write_atomic(target, b"x")
    assert os.listdir(tmp_path / "d") == []  # the temp file went too
    monkeypatch.undo()

    fs.write_atomic(target, b"x")
    monkeypatch.setattr(fs_local, "open", denied, raising=False)
    with pytest.raises(CheckpointStorageError, match="local: cannot read"):
        fs.read(target)
    monkeypatch.setattr(fs_local.os, "stat", denied)
    with pytest.raises(CheckpointStorageError, match="local: cannot stat"):
        fs.info(target)  # "denied" must never read as "missing"


def test_local_hides_in_flight_temp_files(tmp_path):
    fs = LocalFileSystem()
    (tmp_path / ".task-0.state.tmp-0123456789abcdef").write_bytes(b"partial")
    (tmp_path / ".hidden-but-real").write_bytes(b"kept")
    assert [i.name for i in fs.list_dir(str(tmp_path))] == [".hidden-but-real"]


def test_local_delete_directory_non_recursive(tmp_path):
    fs = LocalFileSystem()
    fs.write_atomic(f"{tmp_path}/full/f", b"1")
    with pytest.raises(CheckpointStorageError, match="non-empty directory"):
        fs.delete(f"{tmp_path}/full")
    os.mkdir(tmp_path / "empty")
    fs.delete(f"{tmp_path}/empty")
    assert not (tmp_path / "empty").exists()


def test_local_write_onto_directory_or_below_file_fails(tmp_path):
    fs = LocalFileSystem()
    fs.write_atomic(f"{tmp_path}/a/file", b"1")
    with pytest.raises(CheckpointStorageError, match="local: cannot write"):
        fs.write_atomic(f"{tmp_path}/a", b"2")
    with pytest.raises(CheckpointStorageError, match="local: cannot write"):
        fs.write_atomic(f"{tmp_path}/a/file/below", b"2")


def test_local_move_is_a_rename_not_a_copy(tmp_path, monkeypatch):
    fs = LocalFileSystem()
    fs.write_atomic(f"{tmp_path}/_staged/part-0", b"x" * 4096)
    inode = os.stat(f"{tmp_path}/_staged/part-0").st_ino
    monkeypatch.setattr(fs, "read", lambda *a, **k: pytest.fail("move read the file back"))
    fs.move(f"{tmp_path}/_staged/part-0", f"{tmp_path}/out/part-0")
    assert os.stat(f"{tmp_path}/out/part-0").st_ino == inode
    assert not os.path.exists(f"{tmp_path}/_staged/part-0")


def _resident_pages(path: str) -> int:
    """How many of the file's pages are in the page cache (mincore(2) over a mapping)."""
    import ctypes
    import mmap

    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    size = os.path.getsize(path)
    vec = (ctypes.c_ubyte * -(-size // mmap.PAGESIZE))()
    with open(path, "rb") as f:
        address = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, f.fileno(), 0)
        assert address not in (None, ctypes.c_void_p(-1).value), os.strerror(ctypes.get_errno())
        try:
            assert libc.mincore(address, size, vec) == 0, os.strerror(ctypes.get_errno())
        finally:
            libc.munmap(address, size)
    return sum(v & 1 for v in vec)


@pytest.mark.skipif(not hasattr(os, "posix_fadvise"), reason="the page cache hint is Linux's")
def test_local_new_file_leaves_the_page_cache_once_durable(tmp_path):
    """A sink's output is not read back by the job: once fsynced, its pages are dropped
    instead of filling the page cache with a job's gigabytes."""
    fs = LocalFileSystem()
    path = f"{tmp_path}/out/part-0.parquet"
    new = fs.open_new(path)
    data = os.urandom(1 << 20)
    for _ in range(4):
        new.write(data)
    new.close()
    assert _resident_pages(path) > 0  # written, not yet synced: still cached (dirty or under writeback)
    new.sync()
    assert _resident_pages(path) == 0
    assert fs.read(path) == data * 4  # and durable content, read back from the disk


@pytest.mark.skipif(not hasattr(os, "posix_fadvise"), reason="the page cache hint is Linux's")
@pytest.mark.parametrize("how", ["write_atomic", "pieces"])
def test_local_large_state_files_leave_the_page_cache_and_small_documents_stay(tmp_path, how):
    """A large state file is read again only by a restore; small documents are read often."""
    fs = LocalFileSystem()
    big, small = os.urandom(fs_local.DROP_CACHED_FROM * 3), b"{}" * 100
    for name, data in (("big", big), ("small", small)):
        if how == "write_atomic":
            fs.write_atomic(f"{tmp_path}/{name}", data)
        else:
            pieces = [data[i : i + (1 << 20)] for i in range(0, len(data), 1 << 20)]
            assert (
                fs.write_atomic_hashed_pieces(f"{tmp_path}/{name}", len(data), pieces)
                == hashlib.sha256(data).hexdigest()
            )
    assert _resident_pages(f"{tmp_path}/big") == 0
    assert _resident_pages(f"{tmp_path}/small") == 1
    assert fs.read(f"{tmp_path}/big") == big and fs.read(f"{tmp_path}/small") == small


def test_pieces_are_joined_without_copying_a_lone_one_and_must_add_up():
    from airflow_provider_seatunnel_ckpt.storage.filesystem import join_pieces

    lone = b"x" * 5000
    assert join_pieces(5000, [lone]) is lone
    assert join_pieces(7, iter([b"abc", b"", b"defg"])) == b"abcdefg"
    for size, pieces in ((6, [b"abc", b"defg"]), (8, [b"abc", b"defg"]), (4, [b"abc"]), (2, [b"abc"])):
        with pytest.raises(ValueError, match=f"not the {size} announced"):
            join_pieces(size, pieces)


def test_a_storage_that_writes_state_its_own_way_gets_the_pieces_whole(tmp_path):
    """A plugin that subclasses the file storage to change ``write_state`` (encryption,
    compression) or its file system's ``write_atomic`` keeps seeing every state byte."""
    from airflow_provider_seatunnel_ckpt.storage.fs_storage import FileSystemCheckpointStorage

    seen: list[bytes] = []

    class Reversing(FileSystemCheckpointStorage):
        def write_state(self, job_id, pipeline_id, checkpoint_id, name, data, savepoint=False):
            seen.append(bytes(data))
            return super().write_state(job_id, pipeline_id, checkpoint_id, name, bytes(data)[::-1], savepoint)

    class Recording(LocalFileSystem):
        def write_atomic(self, path, data):
            seen.append(bytes(data))
            super().write_atomic(path, data)

    pieces = [b"a" * (1 << 20), b"b" * 10]
    reversing = Reversing(LocalFileSystem(), f"{tmp_path}/one/")
    reversing.write_state_pieces("job", 1, 1, "task-0-0.state", (1 << 20) + 10, pieces)
    assert seen == [b"".join(pieces)]
    stored = f"{reversing.layout.checkpoint_dir('job', 1, 1, False)}/task-0-0.state"
    assert LocalFileSystem().read(stored) == b"".join(pieces)[::-1]
    seen.clear()
    FileSystemCheckpointStorage(Recording(), f"{tmp_path}/two/").write_state_pieces(
        "job", 1, 1, "t.state", (1 << 20) + 10, pieces
    )
    assert seen == [b"".join(pieces)]


def test_local_rejects_relative_paths():
    with pytest.raises(ValueError, match="absolute"):
        LocalFileSystem().read("relative/path")


# ---- memory -------------------------------------------------------------------------------
def test_memory_instances_share_a_named_store():
    MemoryFileSystem.clear_all()
    a, b, other = MemoryFileSystem("s1"), MemoryFileSystem("s1"), MemoryFileSystem("s2")
    a.write_atomic("/x/y", b"1")
    assert b.read("/x/y") == b"1"
    assert pickle.loads(pickle.dumps(a)).read("/x/y") == b"1"
    assert other.info("/x/y") is None
    MemoryFileSystem.clear_all()
    assert a.info("/x/y") is None


def test_memory_keeps_a_private_copy():
    fs = MemoryFileSystem("copy")
    data = bytearray(b"abc")
    fs.write_atomic("/f", data)
    data[0] = ord("z")
    assert fs.read("/f") == b"abc"
    MemoryFileSystem.clear_all()


def test_memory_rejects_file_directory_clashes():
    fs = MemoryFileSystem("clash")
    fs.write_atomic("/a/b", b"1")
    with pytest.raises(CheckpointStorageError):
        fs.write_atomic("/a", b"2")
    with pytest.raises(CheckpointStorageError):
        fs.write_atomic("/a/b/c", b"2")
    with pytest.raises(CheckpointStorageError, match="non-empty directory"):
        fs.delete("/a")
    MemoryFileSystem.clear_all()


# ---- s3: configuration ----------------------------------------------------------------------
SIMPLE = "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"


def test_s3_seed_example_simple_credentials():
    fs = S3FileSystem.from_plugin_config(
        {
            "storage.type": "s3",
            "s3.bucket": "s3a://your-bucket",
            "fs.s3a.access.key": "AKIAEXAMPLE",
            "fs.s3a.secret.key": "very-secret",
            "fs.s3a.aws.credentials.provider": SIMPLE,
        }
    )
    assert (fs.bucket, fs.access_key_id, fs.secret_access_key) == ("your-bucket", "AKIAEXAMPLE", "very-secret")
    assert fs.endpoint_url is None and not fs.path_style and not fs.anonymous
    assert "very-secret" not in repr(fs)


def test_s3_seed_example_instance_profile():
    fs = S3FileSystem.from_plugin_config(
        {
            "s3.bucket": "your-bucket",
            "fs.s3a.endpoint": "your-endpoint",
            "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.InstanceProfileCredentialsProvider",
        }
    )
    assert fs.endpoint_url == "https://your-endpoint"
    assert fs.access_key_id is None and fs.secret_access_key is None  # boto3's default chain


def test_s3_full_mapping():
    fs = S3FileSystem.from_plugin_config(
        {
            "s3.bucket": "s3://ckpt/",
            "fs.s3a.endpoint": "minio:9000",
            "fs.s3a.connection.ssl.enabled": "false",
            "fs.s3a.endpoint.region": "eu-west-1",
            "fs.s3a.access.key": "ak",
            "fs.s3a.secret.key": "sk",
            "fs.s3a.session.token": "tok",
            "fs.s3a.path.style.access": "true",
            "fs.s3a.multipart.threshold": "256M",
            "fs.s3a.multipart.size": 8388608,
            "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider",
        }
    )
    assert fs.bucket == "ckpt" and fs.endpoint_url == "http://minio:9000" and fs.region == "eu-west-1"
    assert (fs.access_key_id, fs.secret_access_key, fs.session_token) == ("ak", "sk", "tok")
    assert fs.path_style is True
    assert fs.multipart_threshold == 256 * MiB and fs.multipart_chunk_size == 8 * MiB
    assert fs.endpoint_host == "minio:9000"


@pytest.mark.parametrize("value", ["b-1", "s3a://b-1", "s3://b-1", "s3a://b-1/", "  b-1/ "])
def test_s3_bucket_forms(value):
    assert S3FileSystem.from_plugin_config({"s3.bucket": value}).bucket == "b-1"


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (None, "missing"),
        ("", "missing"),
        ("s3a://b-1/prefix", "path after the bucket"),
        ("gs://b-1", "unsupported scheme"),
        ("oss://b-1", "unsupported scheme"),
        ("Bad_Bucket!", "not a valid bucket name"),
        ("ab", "not a valid bucket name"),
    ],
)
def test_s3_bad_bucket(value, problem):
    with pytest.raises(ConfigError) as err:
        S3FileSystem.from_plugin_config({"s3.bucket": value} if value is not None else {})
    assert err.value.key == "plugin-config.s3.bucket"
    assert problem in err.value.problem and "expected" in err.value.problem


@pytest.mark.parametrize(
    ("cfg", "missing"),
    [
        ({"fs.s3a.access.key": "ak", "fs.s3a.aws.credentials.provider": SIMPLE}, "fs.s3a.secret.key"),
        ({"fs.s3a.secret.key": "sk", "fs.s3a.aws.credentials.provider": SIMPLE}, "fs.s3a.access.key"),
        ({"fs.s3a.aws.credentials.provider": SIMPLE}, "fs.s3a.access.key"),
        ({"fs.s3a.secret.key": "sk"}, "fs.s3a.access.key"),  # no provider, half the keys
        (
            {
                "fs.s3a.access.key": "ak",
                "fs.s3a.secret.key": "sk",
                "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider",
            },
            "fs.s3a.session.token",
        ),
    ],
)
def test_s3_missing_credentials(cfg, missing):
    with pytest.raises(ConfigError) as err:
        S3FileSystem.from_plugin_config({"s3.bucket": "b-1", **cfg})
    assert err.value.key == f"plugin-config.{missing}"
    assert "sk" not in str(err.value).replace("fs.s3a", "")


def test_s3_provider_variants():
    base = {"s3.bucket": "b-1", "fs.s3a.access.key": "ak", "fs.s3a.secret.key": "sk"}
    assert S3FileSystem.from_plugin_config(base).access_key_id == "ak"  # no provider: keys
    anon = S3FileSystem.from_plugin_config(
        {
            "s3.bucket": "b-1",
            "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider",
        }
    )
    assert anon.anonymous
    chain = S3FileSystem.from_plugin_config(
        {**base, "fs.s3a.aws.credentials.provider": "com.amazonaws.auth.EnvironmentVariableCredentialsProvider"}
    )
    assert chain.access_key_id is None
    listed = S3FileSystem.from_plugin_config(
        {**base, "fs.s3a.aws.credentials.provider": f"{SIMPLE}, com.amazonaws.auth.InstanceProfileCredentialsProvider"}
    )
    assert listed.access_key_id == "ak"
    with pytest.raises(ConfigError) as err:
        S3FileSystem.from_plugin_config({**base, "fs.s3a.aws.credentials.provider": "com.example.MyProvider"})
    assert err.value.key == "plugin-config.fs.s3a.aws.credentials.provider" and "MyProvider" in err.value.problem


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("fs.s3a.path.style.access", "yes"),
        ("fs.s3a.connection.ssl.enabled", "1"),
        ("fs.s3a.multipart.threshold", "lots"),
        ("fs.s3a.multipart.size", "1M"),  # below S3's 5 MiB part minimum
        ("fs.s3a.endpoint", "ftp://host"),
    ],
)
def test_s3_bad_values(key, value):
    with pytest.raises(ConfigError) as err:
        S3FileSystem.from_plugin_config({"s3.bucket": "b-1", key: value})
    assert err.value.key == f"plugin-config.{key}" and "expected" in err.value.problem


def test_s3_transient_classification():
    from botocore.exceptions import ClientError, ConnectionClosedError, EndpointConnectionError, SSLError

    def client_error(code: str, status: int) -> ClientError:
        return ClientError({"Error": {"Code": code}, "ResponseMetadata": {"HTTPStatusCode": status}}, "GetObject")

    for code, status in [("SlowDown", 503), ("InternalError", 500), ("Throttling", 400), ("RequestTimeout", 400)]:
        assert is_transient_s3_error(client_error(code, status)), code
    for code, status in [
        ("AccessDenied", 403),
        ("InvalidAccessKeyId", 403),
        ("SignatureDoesNotMatch", 403),
        ("NoSuchBucket", 404),
        ("NoSuchKey", 404),
    ]:
        assert not is_transient_s3_error(client_error(code, status)), code
    assert is_transient_s3_error(EndpointConnectionError(endpoint_url="http://x"))
    assert is_transient_s3_error(ConnectionClosedError(endpoint_url="http://x"))
    assert is_transient_s3_error(TimeoutError())
    assert not is_transient_s3_error(SSLError(endpoint_url="http://x", error="bad cert"))
    assert not is_transient_s3_error(ValueError())


# ---- s3: against moto ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def s3():
    from tests.servers.s3 import S3Server

    with S3Server(proxy=True) as server:
        yield server


@pytest.fixture
def bucket(s3):
    s3.proxy.reset()
    yield s3.create_bucket(f"unit-{uuid.uuid4().hex[:12]}")
    s3.proxy.reset()


def _multipart_etag(data: bytes, part: int) -> str:
    digests = b"".join(hashlib.md5(data[i : i + part]).digest() for i in range(0, len(data), part))
    return f'"{hashlib.md5(digests).hexdigest()}-{-(-len(data) // part)}"'


def test_s3_multipart_upload(s3, bucket):
    fs = s3.filesystem(bucket, multipart_threshold=5 * MiB, multipart_chunk_size=5 * MiB)
    data = os.urandom(12 * MiB + 7)
    fs.write_atomic("/big/obj", memoryview(data))
    assert fs.read("/big/obj") == data
    assert fs.read("/big/obj", 5 * MiB - 3, 10) == data[5 * MiB - 3 : 5 * MiB + 7]
    raw = s3.client()
    assert raw.head_object(Bucket=bucket, Key="big/obj")["ETag"] == _multipart_etag(data, 5 * MiB)
    assert not raw.list_multipart_uploads(Bucket=bucket).get("Uploads")
    small = os.urandom(5 * MiB)  # at the threshold: one PUT
    fs.write_atomic("/big/small", small)
    assert "-" not in raw.head_object(Bucket=bucket, Key="big/small")["ETag"]


def test_s3_failed_multipart_is_aborted_and_invisible(s3, bucket):
    fs = s3.filesystem(
        bucket, multipart_threshold=5 * MiB, multipart_chunk_size=5 * MiB, multipart_concurrency=1, **FAST
    )
    fs.write_atomic("/obj", b"old")
    s3.proxy.fail_next(FAST["retry_attempts"], status=500, when=lambda m, p: m == "PUT" and "partNumber=2" in p)
    with pytest.raises(CheckpointStorageError, match=f"s3: cannot write s3://{bucket}/obj"):
        fs.write_atomic("/obj", os.urandom(11 * MiB))
    assert fs.read("/obj") == b"old"
    assert not s3.client().list_multipart_uploads(Bucket=bucket).get("Uploads")
    assert any(m == "DELETE" and "uploadId=" in p for m, p, _ in s3.proxy.requests)


def _is_complete(method: str, path: str) -> bool:
    return method == "POST" and "uploadId=" in path


def test_s3_multipart_complete_with_lost_reply(s3, bucket):
    """The first CompleteMultipartUpload succeeds but its reply is lost; the retry gets
    NoSuchUpload (as S3 may answer) and must recognise the object by its ETag."""
    fs = s3.filesystem(bucket, multipart_threshold=5 * MiB, multipart_chunk_size=5 * MiB, **FAST)
    data = os.urandom(10 * MiB + 1)
    s3.proxy.drop_connection_next(1, after_forward=True, when=_is_complete)
    s3.proxy.fail_next(1, status=404, code="NoSuchUpload", when=_is_complete)
    fs.write_atomic("/obj", data)
    assert fs.read("/obj") == data
    assert [o for m, p, o in s3.proxy.requests if _is_complete(m, p)] == ["forward-drop", "fail"]


def test_s3_multipart_no_such_upload_without_object_fails(s3, bucket):
    fs = s3.filesystem(bucket, multipart_threshold=5 * MiB, multipart_chunk_size=5 * MiB, **FAST)
    s3.proxy.fail_next(1, status=500, when=_is_complete)  # never reached the server
    s3.proxy.fail_next(1, status=404, code="NoSuchUpload", when=_is_complete)
    with pytest.raises(CheckpointStorageError, match="NoSuchUpload"):
        fs.write_atomic("/obj", os.urandom(10 * MiB + 1))
    assert fs.info("/obj") is None


def test_s3_botocore_does_not_retry_on_its_own(s3, bucket):
    fs = s3.filesystem(bucket, retry_attempts=1)
    s3.proxy.fail_next(1, status=503)
    with pytest.raises(CheckpointStorageError, match="SlowDown"):
        fs.read("/x")
    assert s3.proxy.request_count == 1


def test_s3_delete_recursive_in_batches(s3, bucket, monkeypatch):
    monkeypatch.setattr(fs_s3, "DELETE_BATCH", 7)
    fs = s3.filesystem(bucket)
    for i in range(20):
        fs.write_atomic(f"/d/{i % 3}/{i}", b".")
    fs.write_atomic("/d-sibling", b".")
    s3.proxy.reset()
    fs.delete("/d", recursive=True)
    assert sum(1 for m, p, _ in s3.proxy.requests if m == "POST" and p.endswith("?delete")) == 3
    assert [i.path for i in fs.walk_files("/")] == ["/d-sibling"]


def test_s3_missing_bucket_is_an_error_not_empty(s3):
    fs = s3.filesystem("no-such-bucket-" + uuid.uuid4().hex[:8], **FAST)
    for op in (
        lambda: fs.info("/ckpt/x"),
        lambda: fs.list_dir("/ckpt"),
        lambda: fs.read("/ckpt/x"),
        lambda: fs.write_atomic("/ckpt/x", b"1"),
        lambda: fs.delete("/ckpt", recursive=True),
    ):
        with pytest.raises(CheckpointStorageError, match="NoSuchBucket"):
            op()


def test_s3_unknown_access_key(s3, bucket):
    with s3.iam_auth() as (key_id, secret):
        assert s3.filesystem(bucket, access_key_id=key_id, secret_access_key=secret).list_dir("/") == []
        fs = s3.filesystem(bucket, access_key_id="AKIAUNKNOWN", secret_access_key="sEcReT-123", **FAST)
        with pytest.raises(CheckpointStorageError) as err:
            fs.write_atomic("/ckpt/x", b"1")
    message = str(err.value)
    assert "InvalidAccessKeyId" in message and bucket in message and "ckpt/x" in message
    assert "sEcReT-123" not in message


def test_s3_unreachable_endpoint_fails_after_retries():
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    fs = S3FileSystem(
        "b-1",
        endpoint_url=f"http://127.0.0.1:{port}",
        access_key_id="a",
        secret_access_key="s",
        connect_timeout_s=1,
        **FAST,
    )
    with pytest.raises(CheckpointStorageError, match=f"s3: cannot stat s3://b-1/x at 127.0.0.1:{port}"):
        fs.info("/x")


def test_s3_pickle_drops_the_client(s3, bucket):
    fs = s3.filesystem(bucket)
    fs.write_atomic("/x", b"1")
    assert fs._client is not None
    clone = pickle.loads(pickle.dumps(fs))
    assert clone._client is None and clone.read("/x") == b"1"


def test_s3_body_is_hashed_once_checksum_header_signed(s3, bucket):
    """Our sha256 goes up as x-amz-checksum-sha256 (signed), so botocore neither adds a
    CRC32 nor hashes the body again for x-amz-content-sha256 on plain http; bodies we
    send without a checksum, and a client configured explicitly, keep botocore's default."""
    fs = s3.filesystem(bucket)
    sent: list[dict[str, str]] = []

    def capture(request, **_):
        if request.method == "PUT":
            sent.append({k.lower(): (v.decode() if isinstance(v, bytes) else v) for k, v in request.headers.items()})

    fs._get_client().meta.events.register("before-send.s3", capture)
    data = os.urandom(2 * MiB)
    digest = fs.write_atomic_hashed("/h/state", data)
    fs.write_atomic("/h/_metadata", b"{}")
    assert digest == hashlib.sha256(data).hexdigest()
    for headers in sent:
        assert headers["x-amz-content-sha256"] == "UNSIGNED-PAYLOAD"
        assert "x-amz-checksum-sha256" in headers and "x-amz-checksum-sha256" in headers["authorization"]
        assert "x-amz-checksum-crc32" not in headers
    assert base64.b64decode(sent[0]["x-amz-checksum-sha256"]).hex() == digest
    assert fs.read("/h/state") == data

    # a plain boto3 client (the benchmark's baseline) is not affected
    raw = s3.client()
    plain: list[dict[str, str]] = []
    raw.meta.events.register(
        "before-send.s3", lambda request, **_: plain.append({k.lower(): v for k, v in request.headers.items()})
    )
    raw.put_object(Bucket=bucket, Key="h/raw", Body=data)
    assert plain[-1]["x-amz-content-sha256"] not in ("UNSIGNED-PAYLOAD", b"UNSIGNED-PAYLOAD")
    # an explicit payload_signing_enabled wins
    signed = s3.filesystem(bucket)
    signed._get_client().meta.config.s3["payload_signing_enabled"] = True
    headers: list[dict[str, str]] = []
    signed._get_client().meta.events.register(
        "before-send.s3", lambda request, **_: headers.append({k.lower(): v for k, v in request.headers.items()})
    )
    signed.write_atomic_hashed("/h/signed", b"abc")
    assert headers[-1]["x-amz-content-sha256"] in (
        hashlib.sha256(b"abc").hexdigest(),
        hashlib.sha256(b"abc").hexdigest().encode(),
    )


def test_s3_listing_and_batched_deletes(s3, bucket):
    fs = s3.filesystem(bucket)
    for name in ("p/chk-1/_metadata", "p/chk-1/a", "p/chk-2/_metadata", "p/x"):
        fs.write_atomic("/" + name, b"1")
    s3.proxy.reset()
    walked = sorted(i.path for i in fs.walk_files("/p"))
    assert walked == ["/p/chk-1/_metadata", "/p/chk-1/a", "/p/chk-2/_metadata", "/p/x"]
    fs.delete_files(["/p/chk-1/_metadata", "/p/chk-2/_metadata"])
    fs.delete_files(["/p/chk-1/a"])
    methods = [(m, p.split("?")[-1]) for m, p, _ in s3.proxy.requests]
    assert [m for m, _ in methods] == ["GET", "POST", "DELETE"]  # one listing, one batch, one single delete
    assert sorted(i.path for i in fs.walk_files("/p")) == ["/p/x"]
