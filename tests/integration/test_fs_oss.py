"""OssFileSystem against the protocol-level OSS test server."""

from __future__ import annotations

import pickle
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from airflow_provider_seatunnel_ckpt.errors import CheckpointStorageError, ConfigError
from airflow_provider_seatunnel_ckpt.storage.filesystem import FileInfo
from airflow_provider_seatunnel_ckpt.storage.fs_oss import OssFileSystem
from tests.servers.oss import OssServer, OssState

AK, SK = "it-access-key-id", "it-very-secret-key"
BUCKET = "ckpt"
FAST_RETRY = dict(retry_initial_wait_s=0.001, retry_max_wait_s=0.01)


@pytest.fixture(scope="module")
def server():
    with OssServer(access_key_id=AK, access_key_secret=SK) as srv:
        yield srv


@pytest.fixture
def srv(server):
    server.clear_faults()
    server.delete_bucket(BUCKET)
    server.create_bucket(BUCKET)
    server.clear_requests()
    return server


def make_fs(srv, **overrides) -> OssFileSystem:
    kwargs = dict(bucket=BUCKET, endpoint=srv.endpoint, access_key_id=AK, access_key_secret=SK, **FAST_RETRY)
    kwargs.update(overrides)
    return OssFileSystem(**kwargs)


@pytest.fixture
def fs(srv):
    return make_fs(srv)


# ---- the five primitives -------------------------------------------------------------------


def test_write_read_info_list_delete(srv, fs):
    fs.write_atomic("/ns/job-1/pipeline-1/chk-0001/_metadata", b'{"v": 1}')
    fs.write_atomic("/ns/job-1/pipeline-1/chk-0001/task-0-0.state", bytearray(b"state-bytes"))
    fs.write_atomic("/ns/job-1/job.json", memoryview(b"{}"))
    assert srv.keys(BUCKET) == [
        "ns/job-1/job.json",
        "ns/job-1/pipeline-1/chk-0001/_metadata",
        "ns/job-1/pipeline-1/chk-0001/task-0-0.state",
    ]

    assert fs.read("/ns/job-1/pipeline-1/chk-0001/_metadata") == b'{"v": 1}'
    assert fs.read_text("/ns/job-1/job.json") == "{}"

    info = fs.info("/ns/job-1/pipeline-1/chk-0001/task-0-0.state")
    assert (info.path, info.size, info.is_dir) == ("/ns/job-1/pipeline-1/chk-0001/task-0-0.state", 11, False)
    assert info.mtime and info.mtime > 0
    assert fs.info("/ns/job-1/pipeline-1") == FileInfo("/ns/job-1/pipeline-1", 0, True)
    assert fs.info("/ns/job-1/pipeline-1/").is_dir
    assert fs.info("/").is_dir

    listing = fs.list_dir("/ns/job-1")
    assert [(e.name, e.is_dir, e.size) for e in listing] == [("job.json", False, 2), ("pipeline-1", True, 0)]
    assert listing[1].path == "/ns/job-1/pipeline-1"
    assert [e.path for e in fs.walk_files("/ns")] == [
        "/ns/job-1/job.json",
        "/ns/job-1/pipeline-1/chk-0001/_metadata",
        "/ns/job-1/pipeline-1/chk-0001/task-0-0.state",
    ]

    fs.delete("/ns/job-1/job.json")
    assert not fs.exists("/ns/job-1/job.json")
    fs.delete("/ns/job-1", recursive=True)
    assert srv.keys(BUCKET) == []
    assert fs.info("/ns") is None


def test_overwrite_replaces_content(fs):
    fs.write_atomic("/a/f", b"old content that is longer")
    fs.write_atomic("/a/f", b"new")
    assert fs.read("/a/f") == b"new"


def test_ranged_reads(srv, fs):
    fs.write_atomic("/r", b"0123456789")
    srv.clear_requests()
    assert fs.read("/r", offset=2, length=3) == b"234"
    assert srv.requests[-1].headers["range"] == "bytes=2-4"
    assert fs.read("/r", offset=7) == b"789"
    assert fs.read("/r", offset=8, length=100) == b"89"
    assert fs.read("/r", offset=10) == b""
    assert fs.read("/r", offset=50, length=5) == b""
    assert fs.read("/r", offset=3, length=0) == b""
    with pytest.raises(ValueError):
        fs.read("/r", offset=-1)


def test_ranged_read_when_server_ignores_range_behaviour(srv, fs, monkeypatch):
    # OSS answers an unsatisfiable range with the whole object unless asked for standard
    # behaviour; a compatible server that ignores the header must still give the right slice.
    original = OssState._parse_range
    monkeypatch.setattr(
        OssState, "_parse_range", staticmethod(lambda value, size, standard: original(value, size, False))
    )
    fs.write_atomic("/r", b"0123456789")
    assert fs.read("/r", offset=10) == b""
    assert fs.read("/r", offset=20, length=3) == b""
    assert fs.read("/r", offset=2, length=3) == b"234"


def test_not_found_semantics(srv, fs):
    fs.write_atomic("/dir/file", b"x")
    assert fs.info("/nothing") is None
    assert fs.info("/dir/fil") is None  # a key prefix is not a directory
    assert fs.list_dir("/nothing") == []
    assert fs.list_dir("/dir/file") == []  # a file has no children
    fs.delete("/nothing")
    fs.delete("/nothing", recursive=True)
    for call in (lambda: fs.read("/nothing"), lambda: fs.read("/dir"), lambda: fs.read("/nothing", 0, 0)):
        with pytest.raises(FileNotFoundError) as err:
            call()
        assert "oss://ckpt/" in str(err.value)
    assert not fs.exists("/nothing") and fs.exists("/dir") and fs.exists("/dir/file")


def test_non_recursive_delete_of_directory_is_refused(srv, fs):
    fs.write_atomic("/d/child", b"x")
    with pytest.raises(CheckpointStorageError, match="non-empty directory"):
        fs.delete("/d")
    assert srv.keys(BUCKET) == ["d/child"]


def test_recursive_delete_uses_batches_of_1000(srv, fs):
    for i in range(1005):
        srv.put_object(BUCKET, f"many/{i:05d}", b"x")
    srv.put_object(BUCKET, "many-sibling", b"keep")
    srv.put_object(BUCKET, "many", b"the file named like the dir")
    srv.clear_requests()
    fs.delete("/many", recursive=True)
    assert srv.keys(BUCKET) == ["many-sibling"]
    batches = [r for r in srv.requests if r.method == "POST" and "delete" in r.params]
    assert len(batches) == 2


def test_list_dir_paginates(srv, fs):
    for i in range(1003):
        srv.put_object(BUCKET, f"p/f{i:05d}", b"x")
    srv.put_object(BUCKET, "p/sub/deeper", b"x")
    srv.put_object(BUCKET, "p/", b"")  # a console-made folder marker is not a child
    entries = fs.list_dir("/p")
    assert len(entries) == 1004
    assert entries[-1] == FileInfo("/p/sub", 0, True)
    assert sum(1 for r in srv.requests if r.method == "GET" and r.params.get("list-type") == "2") == 2


# ---- multipart -----------------------------------------------------------------------------


def test_large_write_uses_multipart_and_is_complete(srv):
    fs = make_fs(srv, multipart_threshold=256 * 1024, part_size=100 * 1024)
    payload = bytes(range(256)) * 2800 + b"tail"  # ~700 KiB: 8 parts
    fs.write_atomic("/big/state", payload)
    methods = [(r.method, tuple(sorted(r.params))) for r in srv.requests]
    assert methods.count(("POST", ("uploads",))) == 1
    assert methods.count(("PUT", ("partNumber", "uploadId"))) == 8
    assert methods.count(("POST", ("uploadId",))) == 1
    assert ("PUT", ()) not in methods
    assert fs.read("/big/state") == payload
    assert srv.pending_uploads(BUCKET) == []

    small = make_fs(srv, multipart_threshold=256 * 1024)
    srv.clear_requests()
    small.write_atomic("/small", b"x" * 1000)
    assert [(r.method, r.params) for r in srv.requests] == [("PUT", {})]


def test_failed_multipart_is_aborted_and_old_content_stays(srv):
    fs = make_fs(srv, multipart_threshold=256 * 1024, part_size=100 * 1024)
    fs.write_atomic("/big/state", b"previous")
    srv.fail_next(1, status=403, code="AccessDenied", when=lambda r: r.params.get("partNumber") == "3")
    with pytest.raises(CheckpointStorageError, match="AccessDenied"):
        fs.write_atomic("/big/state", b"n" * (700 * 1024))
    assert srv.pending_uploads(BUCKET) == []
    assert fs.read("/big/state") == b"previous"


def test_multipart_part_retry(srv):
    fs = make_fs(srv, multipart_threshold=256 * 1024, part_size=100 * 1024)
    srv.fail_next(2, status=503, when=lambda r: r.params.get("partNumber") == "2")
    payload = b"m" * (300 * 1024)
    fs.write_atomic("/big/retried", payload)
    assert fs.read("/big/retried") == payload
    assert srv.pending_uploads(BUCKET) == []


def test_multipart_complete_whose_answer_was_lost(srv):
    # The first CompleteMultipartUpload takes effect but its answer is lost; the retry
    # gets NoSuchUpload and must recognise the object as its own write.
    fs = make_fs(srv, multipart_threshold=256 * 1024, part_size=100 * 1024)
    srv.drop_connection_next(1, when=lambda r: r.method == "POST" and "uploadId" in r.params, after_processing=True)
    payload = b"c" * (300 * 1024)
    fs.write_atomic("/big/lost-answer", payload)
    assert fs.read("/big/lost-answer") == payload
    assert [r.fault for r in srv.requests if r.method == "POST" and "uploadId" in r.params] == ["drop-after", None]


def test_put_whose_answer_was_lost_is_retried(srv, fs):
    srv.drop_connection_next(1, when=lambda r: r.method == "PUT", after_processing=True)
    fs.write_atomic("/k", b"v2")
    assert srv.get_object(BUCKET, "k") == b"v2"
    assert [r.fault for r in srv.requests] == ["drop-after", None]


# ---- retries and failures ------------------------------------------------------------------


def test_transient_503s_are_retried(srv, fs):
    srv.fail_next(2, status=503)
    fs.write_atomic("/k", b"v")
    srv.fail_next(2, status=503)
    assert fs.read("/k") == b"v"
    srv.fail_next(2, status=500)
    assert [e.name for e in fs.list_dir("/")] == ["k"]
    assert [r.status for r in srv.requests] == [503, 503, 200, 503, 503, 200, 500, 500, 200]


def test_dropped_connections_are_retried(srv, fs):
    srv.drop_connection_next(2)
    fs.write_atomic("/k", b"v")
    srv.drop_connection_next(1)
    assert fs.info("/k").size == 1
    assert srv.get_object(BUCKET, "k") == b"v"


def test_persistent_503_ends_in_storage_error(srv):
    fs = make_fs(srv, retry_attempts=4)
    srv.fail_next(100, status=503)
    with pytest.raises(CheckpointStorageError) as err:
        fs.write_atomic("/ns/chk/_metadata", b"x")
    message = str(err.value)
    assert "oss://ckpt/ns/chk/_metadata" in message and "503" in message and "after 4 attempts" in message
    assert len(srv.requests) == 4


def test_wrong_secret_fails_fast_without_leaking_credentials(srv):
    fs = make_fs(srv, access_key_secret="wrong-secret-value")
    for op in (lambda: fs.write_atomic("/ns/x", b"1"), lambda: fs.read("/ns/x"), lambda: fs.info("/ns/x")):
        srv.clear_requests()
        with pytest.raises(CheckpointStorageError) as err:
            op()
        message = str(err.value)
        assert len(srv.requests) == 1  # no retries
        assert "SignatureDoesNotMatch" in message
        assert "ckpt" in message and "/ns/x" in message and f"127.0.0.1:{srv.port}" in message
        assert "wrong-secret-value" not in message and SK not in message and AK not in message


def test_unknown_access_key_fails_fast(srv):
    fs = make_fs(srv, access_key_id="nobody")
    with pytest.raises(CheckpointStorageError, match="InvalidAccessKeyId") as err:
        fs.list_dir("/ns")
    assert "nobody" not in str(err.value)
    assert len(srv.requests) == 1


def test_missing_bucket_is_an_error_not_absence(srv):
    fs = make_fs(srv, bucket="no-such-bucket")
    for op in (
        lambda: fs.info("/x"),
        lambda: fs.list_dir("/x"),
        lambda: fs.read("/x"),
        lambda: fs.read("/x", 0, 0),
        lambda: fs.write_atomic("/x", b"1"),
        lambda: fs.delete("/x", recursive=True),
    ):
        with pytest.raises(CheckpointStorageError, match="NoSuchBucket") as err:
            op()
        assert "no-such-bucket" in str(err.value)


def test_denied_read_is_not_file_not_found(srv, fs):
    fs.write_atomic("/k", b"v")
    srv.fail_next(1, status=403, code="AccessDenied")
    with pytest.raises(CheckpointStorageError, match="AccessDenied"):
        fs.exists("/k")


def test_unreachable_endpoint_is_retried_then_storage_error():
    with OssServer(AK, SK) as dead:
        endpoint = dead.endpoint  # port is freed when the server stops
    fs = OssFileSystem(BUCKET, endpoint, AK, SK, connect_timeout=2, retry_attempts=2, **FAST_RETRY)
    with pytest.raises(CheckpointStorageError, match="network error"):
        fs.read("/x")


# ---- processes and threads -----------------------------------------------------------------


def test_pickle_round_trip(srv, fs):
    fs.write_atomic("/before", b"1")  # a client exists now: it must not travel
    clone = pickle.loads(pickle.dumps(fs))
    assert clone.bucket == BUCKET and clone.endpoint == srv.endpoint
    clone.write_atomic("/after", b"2")
    assert clone.read("/before") == b"1" and fs.read("/after") == b"2"
    assert SK not in repr(fs)


def test_sixteen_threads_write_concurrently(srv, fs):
    barrier = threading.Barrier(16)

    def work(i: int) -> None:
        barrier.wait()
        for j in range(5):
            fs.write_atomic(f"/conc/t{i:02d}/f{j}", f"{i}-{j}".encode() * 100)
        assert fs.read(f"/conc/t{i:02d}/f4") == f"{i}-4".encode() * 100

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(work, range(16)))
    assert len(srv.keys(BUCKET)) == 80
    assert len(fs.list_dir("/conc")) == 16


# ---- configuration -------------------------------------------------------------------------

#: the OSS plugin-config from SeaTunnel's "Checkpoint Storage" page, as written there
SEED_PLUGIN_CONFIG = {
    "storage.type": "oss",
    "oss.bucket": "your-bucket",
    "fs.oss.accessKeyId": "your-access-key",
    "fs.oss.accessKeySecret": "your-secret-key",
    "fs.oss.endpoint": "endpoint address",
    "fs.oss.credentials.provider": "org.apache.hadoop.fs.aliyun.oss.AliyunCredentialsProvider",
}


@pytest.mark.parametrize("bucket_form", ["your-bucket", "oss://your-bucket", "oss://your-bucket/"])
def test_from_plugin_config_seed_example(bucket_form):
    server = OssServer(access_key_id="your-access-key", access_key_secret="your-secret-key", buckets=["your-bucket"])
    with server as srv:
        config = dict(SEED_PLUGIN_CONFIG, **{"oss.bucket": bucket_form, "fs.oss.endpoint": srv.endpoint})
        fs = OssFileSystem.from_plugin_config(config)
        assert fs.bucket == "your-bucket"
        fs.write_atomic("/seatunnel/checkpoint/x", b"ok")
        assert srv.get_object("your-bucket", "seatunnel/checkpoint/x") == b"ok"


def test_seed_example_as_written_validates_and_fails_clearly_on_use():
    # Config validation accepts SeaTunnel's example (the CLI's validate must), but the
    # placeholder endpoint is reported on first use, without the secret.
    fs = OssFileSystem.from_plugin_config(SEED_PLUGIN_CONFIG)
    assert (fs.bucket, fs.endpoint) == ("your-bucket", "https://endpoint address")
    with pytest.raises(CheckpointStorageError) as err:
        fs.read("/seatunnel/checkpoint/x")
    assert "fs.oss.endpoint" in str(err.value) and "your-secret-key" not in str(err.value)


@pytest.mark.parametrize("bad", ["ftp://host", "https://host/path", "https://", "host?x=1", 7])
def test_malformed_endpoints_are_config_errors(bad):
    with pytest.raises(ConfigError) as err:
        OssFileSystem.from_plugin_config(dict(SEED_PLUGIN_CONFIG, **{"fs.oss.endpoint": bad}))
    assert err.value.key == "plugin-config.fs.oss.endpoint"


def test_endpoint_without_scheme_gets_https():
    config = dict(SEED_PLUGIN_CONFIG, **{"fs.oss.endpoint": "oss-cn-hangzhou.aliyuncs.com"})
    assert OssFileSystem.from_plugin_config(config).endpoint == "https://oss-cn-hangzhou.aliyuncs.com"
    config["fs.oss.endpoint"] = "http://127.0.0.1:9000/"
    assert OssFileSystem.from_plugin_config(config).endpoint == "http://127.0.0.1:9000"


@pytest.mark.parametrize(
    "bad", ["oss://your-bucket/path", "s3://your-bucket", "oss://", "Your_Bucket", "http://your-bucket", "", 42]
)
def test_bad_bucket_forms_are_rejected(bad):
    with pytest.raises(ConfigError) as err:
        OssFileSystem.from_plugin_config(
            dict(SEED_PLUGIN_CONFIG, **{"oss.bucket": bad, "fs.oss.endpoint": "h.example"})
        )
    assert err.value.key == "plugin-config.oss.bucket"
    assert "oss://bucket-name" in str(err.value)


@pytest.mark.parametrize("missing", ["fs.oss.accessKeyId", "fs.oss.accessKeySecret"])
def test_missing_credentials_name_the_key(missing):
    config = dict(SEED_PLUGIN_CONFIG, **{"fs.oss.endpoint": "h.example"})
    del config[missing]
    with pytest.raises(ConfigError) as err:
        OssFileSystem.from_plugin_config(config)
    assert err.value.key == f"plugin-config.{missing}"
    assert "your-secret-key" not in str(err.value)


def test_hadoop_prefixed_keys_and_security_token():
    config = {
        "oss.bucket": "b-1",
        "seatunnel.hadoop.fs.oss.endpoint": "oss-cn-beijing.aliyuncs.com",
        "seatunnel.hadoop.fs.oss.accessKeyId": "id",
        "fs.oss.accessKeySecret": "secret",
        "fs.oss.securityToken": "sts-token",
    }
    fs = OssFileSystem.from_plugin_config(config)
    assert (fs.bucket, fs.endpoint, fs.access_key_id) == ("b-1", "https://oss-cn-beijing.aliyuncs.com", "id")
    assert "secret" not in repr(fs) and "sts-token" not in repr(fs)


def test_connection_timeout_is_hadoop_milliseconds():
    config = dict(SEED_PLUGIN_CONFIG, **{"fs.oss.endpoint": "h.example", "fs.oss.connection.timeout": "200000"})
    assert OssFileSystem.from_plugin_config(config).connect_timeout == 200.0
    config["fs.oss.connection.timeout"] = "soon"
    with pytest.raises(ConfigError) as err:
        OssFileSystem.from_plugin_config(config)
    assert err.value.key == "plugin-config.fs.oss.connection.timeout"


def test_security_token_is_sent():
    with OssServer(AK, SK, security_token="sts-token", buckets=[BUCKET]) as srv:
        ok = OssFileSystem(BUCKET, srv.endpoint, AK, SK, security_token="sts-token", **FAST_RETRY)
        ok.write_atomic("/k", b"v")
        without = OssFileSystem(BUCKET, srv.endpoint, AK, SK, **FAST_RETRY)
        with pytest.raises(CheckpointStorageError, match="AccessDenied"):
            without.read("/k")
