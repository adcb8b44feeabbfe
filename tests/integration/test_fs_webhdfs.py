"""WebHdfsFileSystem against the protocol-level WebHDFS server (tests/servers/webhdfs.py).

Covers the FileSystem contract (five primitives, not-found semantics, atomic
overwrite), the retry policy (transient vs permanent, request counts from the server's
log), HA fail-over, pickling, concurrency, the plugin-config mapping, and Kerberos
ticket renewal with fake ``kinit``/``klist`` scripts.
"""

from __future__ import annotations

import importlib.util
import os
import pickle
import stat
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from hdfs import InsecureClient

from airflow_provider_seatunnel_ckpt.errors import BackendMissing, CheckpointStorageError, ConfigError
from airflow_provider_seatunnel_ckpt.storage.fs_webhdfs import WebHdfsFileSystem
from airflow_provider_seatunnel_ckpt.storage.kerberos import KerberosTicketRenewer, parse_klist
from tests.servers.webhdfs import Namespace, WebHdfsServer

pytestmark = pytest.mark.timeout(60)

FAST = dict(retry_initial_wait_s=0.005, retry_max_wait_s=0.02)


@pytest.fixture
def srv():
    with WebHdfsServer() as server:
        yield server


@pytest.fixture
def fs(srv):
    return WebHdfsFileSystem([srv.url], user="alice", **FAST)


def temp_files(server):
    return [p for p in server.namespace.files() if ".tmp-" in p]


# ---- the five primitives ---------------------------------------------------------------
def test_write_read_info_list_delete(fs, srv):
    fs.write_atomic("/ns/job/chk-1/task-0", b"state-0")
    fs.write_atomic("/ns/job/chk-1/_metadata", bytearray(b'{"v": 1}'))
    fs.write_atomic("/ns/job/job.json", memoryview(b"{}"))

    assert fs.read("/ns/job/chk-1/task-0") == b"state-0"
    assert fs.read("/ns/job/chk-1/task-0", offset=2) == b"ate-0"
    assert fs.read("/ns/job/chk-1/task-0", offset=1, length=3) == b"tat"
    assert fs.read_text("/ns/job/chk-1/_metadata") == '{"v": 1}'

    info = fs.info("/ns/job/chk-1/task-0")
    assert (info.path, info.size, info.is_dir) == ("/ns/job/chk-1/task-0", 7, False)
    assert info.mtime is not None and abs(info.mtime - time.time()) < 60
    assert fs.info("/ns/job").is_dir
    assert fs.info("/").is_dir

    listing = fs.list_dir("/ns/job")
    assert [(i.name, i.is_dir) for i in listing] == [("chk-1", True), ("job.json", False)]
    assert [i.path for i in fs.list_dir("/ns/job/chk-1")] == [
        "/ns/job/chk-1/_metadata",
        "/ns/job/chk-1/task-0",
    ]
    assert sorted(i.path for i in fs.walk_files("/ns")) == sorted(srv.namespace.files())

    fs.delete("/ns/job/chk-1/task-0")
    assert fs.info("/ns/job/chk-1/task-0") is None
    fs.delete("/ns/job", recursive=True)
    assert srv.namespace.files() == {}
    assert fs.exists("/ns") and not fs.exists("/ns/job")


def test_not_found_semantics(fs, srv):
    assert fs.info("/missing") is None
    assert fs.list_dir("/missing") == []
    fs.delete("/missing")  # no-op
    fs.delete("/missing", recursive=True)
    with pytest.raises(FileNotFoundError) as err:
        fs.read("/missing/file")
    assert f"127.0.0.1:{srv.port}/missing/file" in str(err.value)
    fs.write_atomic("/dir/file", b"x")
    with pytest.raises(FileNotFoundError):
        fs.read("/dir")  # HDFS: "Path is not a file" is a FileNotFoundException
    assert fs.list_dir("/dir/file") == []  # a file has no children
    assert not fs.exists("/missing")


def test_delete_non_empty_directory_needs_recursive(fs, srv):
    fs.write_atomic("/d/f", b"1")
    with pytest.raises(CheckpointStorageError, match="non-empty directory"):
        fs.delete("/d")
    assert srv.namespace.files() == {"/d/f": b"1"}


def test_read_past_the_end_is_empty(fs, srv):
    fs.write_atomic("/f", b"abc")
    assert fs.read("/f", offset=3) == b""
    srv.clear_log()
    assert fs.read("/f", offset=4, length=2) == b""  # HDFS says IOException; the contract says b""
    assert [(r.op, r.status) for r in srv.log] == [("OPEN", 307), ("OPEN", 403), ("GETFILESTATUS", 200)]
    srv.fail_next(1, status=403, exception="AccessControlException", role="datanode")
    with pytest.raises(CheckpointStorageError, match="AccessControlException"):
        fs.read("/f", offset=1)  # another error on a short read stays an error


def test_paths_below_a_file_do_not_exist(fs, srv):
    fs.write_atomic("/d/file", b"1")
    assert fs.info("/d/file/below") is None
    assert fs.list_dir("/d/file/below") == []
    fs.delete("/d/file/below")
    with pytest.raises(FileNotFoundError):
        fs.read("/d/file/below")
    assert srv.namespace.files() == {"/d/file": b"1"}
    with pytest.raises(CheckpointStorageError, match="ParentNotDirectoryException"):
        fs.write_atomic("/d/file/below", b"x")  # writing there is an error, not a no-op


def test_bad_arguments(fs):
    with pytest.raises(ValueError):
        fs.read("relative/path")
    with pytest.raises(ValueError):
        fs.read("/f", offset=-1)
    with pytest.raises(ValueError):
        fs.write_atomic("/a/../b", b"")


# ---- atomic overwrite -----------------------------------------------------------------------
def test_overwrite_uses_one_atomic_rename_and_leaves_no_temp_files(fs, srv):
    fs.write_atomic("/c/_metadata", b"old")
    srv.clear_log()
    fs.write_atomic("/c/_metadata", b"new")
    assert fs.read("/c/_metadata") == b"new"
    assert temp_files(srv) == []
    renames = srv.requests(op="RENAME")
    assert len(renames) == 1 and renames[0].query["renameoptions"] == "OVERWRITE"
    assert renames[0].path.startswith("/c/._metadata.tmp-")
    assert renames[0].query["destination"] == "/c/_metadata"
    assert srv.requests(op="DELETE") == []  # no window without a _metadata


def test_overwrite_falls_back_to_delete_and_rename(srv):
    srv.support_rename_options = False  # like HttpFS / old name nodes
    fs = WebHdfsFileSystem(srv.url, user="alice", **FAST)
    fs.write_atomic("/f", b"first")
    assert fs.read("/f") == b"first"
    fs.write_atomic("/f", b"second")
    assert fs.read("/f") == b"second"
    assert temp_files(srv) == []
    assert [r.path for r in srv.requests(op="DELETE")] == ["/f"]


@pytest.mark.parametrize("rename_options", [True, False])
def test_write_onto_a_directory_fails_and_cleans_up(srv, rename_options):
    srv.support_rename_options = rename_options
    fs = WebHdfsFileSystem(srv.url, user="alice", **FAST)
    fs.write_atomic("/d/inner", b"1")
    with pytest.raises(CheckpointStorageError) as err:
        fs.write_atomic("/d", b"x")
    assert "/d" in str(err.value)
    assert srv.namespace.files() == {"/d/inner": b"1"}


@pytest.mark.parametrize("rename_options", [True, False])
def test_readers_never_see_a_partial_file(srv, rename_options):
    srv.support_rename_options = rename_options
    srv.datanode_chunk_delay_s = 0.005  # each upload stays visible-but-partial for a while
    fs = WebHdfsFileSystem(srv.url, user="alice", **FAST)
    versions = [bytes([65 + i]) * 200_000 for i in range(6)]
    fs.write_atomic("/f", versions[0])
    stop = threading.Event()
    seen: list[bytes | None] = []

    def reader():
        while not stop.is_set():
            try:
                seen.append(fs.read("/f"))
            except FileNotFoundError:
                seen.append(None)

    t = threading.Thread(target=reader)
    t.start()
    try:
        for v in versions[1:]:
            fs.write_atomic("/f", v)
    finally:
        stop.set()
        t.join(20)
    assert len(seen) > 10
    assert all(s is None or s in versions for s in seen)  # never a prefix
    if rename_options:
        assert None not in seen  # rename2 replaces in one step: never missing
    assert fs.read("/f") == versions[-1]
    assert temp_files(srv) == []


# ---- retries and errors ---------------------------------------------------------------
def test_transient_503_is_retried(fs, srv):
    srv.fail_next(2, status=503)
    fs.write_atomic("/f", b"1")
    assert fs.read("/f") == b"1"
    assert [r.fault for r in srv.log[:2]] == ["fail", "fail"]
    assert temp_files(srv) == []


@pytest.mark.parametrize(
    "inject",
    [
        lambda s: s.fail_next(2, status=500, exception="RuntimeException"),
        lambda s: s.fail_next(2, status=502, exception=""),  # a proxy's HTML page
        lambda s: s.fail_next(1, status=503, role="datanode"),
        lambda s: s.drop_connection_next(2),
        lambda s: s.drop_connection_next(1, role="datanode"),
    ],
)
def test_other_transient_failures_are_retried(fs, srv, inject):
    fs.write_atomic("/f", b"v1")
    inject(srv)
    fs.write_atomic("/f", b"v2")
    inject(srv)
    assert fs.read("/f") == b"v2"
    inject(srv)
    assert [i.name for i in fs.list_dir("/")] == ["f"]
    assert temp_files(srv) == []


@pytest.mark.parametrize("rename_options", [True, False])
@pytest.mark.parametrize("op", ["CREATE", "RENAME", "DELETE"])
def test_lost_answers_do_not_break_writes(srv, rename_options, op):
    """The request took effect, its answer was lost, the retry must still end well."""
    srv.support_rename_options = rename_options
    fs = WebHdfsFileSystem(srv.url, user="alice", **FAST)
    fs.write_atomic("/f", b"old")
    srv.drop_connection_next(1, op=op, after_processing=True)
    fs.write_atomic("/f", b"new")
    assert fs.read("/f") == b"new"
    assert temp_files(srv) == []
    srv.drop_connection_next(1, op=op, after_processing=True)
    fs.write_atomic("/g", b"fresh")  # a target that did not exist yet: the rename succeeds
    assert fs.read("/g") == b"fresh"
    assert temp_files(srv) == []
    srv.drop_connection_next(1, op="DELETE", after_processing=True)
    fs.delete("/g")
    assert fs.info("/g") is None


def test_persistent_503_gives_up_with_host_and_path(srv):
    fs = WebHdfsFileSystem([srv.url], user="alice", retry_attempts=4, **FAST)
    srv.fail_next(10, status=503)
    with pytest.raises(CheckpointStorageError) as err:
        fs.info("/ckpt/job/_metadata")
    message = str(err.value)
    assert message.startswith("hdfs: ")
    assert f"127.0.0.1:{srv.port}" in message
    assert "/ckpt/job/_metadata" in message
    assert "after 4 attempts" in message
    assert len(srv.log) == 4


def test_default_retry_budget_eventually_raises(fs, srv):
    srv.fail_next(10, status=503)
    with pytest.raises(CheckpointStorageError):
        fs.write_atomic("/f", b"x")
    assert len(srv.log) == 6  # DEFAULT_ATTEMPTS, each failing at the name node
    assert srv.namespace.files() == {}


def test_permission_denied_fails_fast():
    with WebHdfsServer(required_user="alice") as srv:
        fs = WebHdfsFileSystem([srv.url], user="bob", **FAST)
        with pytest.raises(CheckpointStorageError) as err:
            fs.info("/ckpt/job.json")
        assert len(srv.log) == 1  # no retry
        message = str(err.value)
        assert "AccessControlException" in message and "HTTP 403" in message
        assert f"127.0.0.1:{srv.port}" in message and "/ckpt/job.json" in message

        srv.clear_log()
        with pytest.raises(CheckpointStorageError):
            fs.write_atomic("/ckpt/job.json", b"{}")
        assert len(srv.log) == 1
        with pytest.raises(CheckpointStorageError):
            fs.list_dir("/ckpt")  # denied is never "empty"
        with pytest.raises(CheckpointStorageError):
            fs.delete("/ckpt")


def test_authentication_failure_is_not_retried(srv):
    srv.fail_next(1, status=401, exception="SecurityException", message="Authentication required")
    fs = WebHdfsFileSystem([srv.url], user="alice", **FAST)
    with pytest.raises(CheckpointStorageError, match="HTTP 401"):
        fs.read("/f")
    assert len(srv.log) == 1


def test_404_without_a_webhdfs_body_is_not_not_found(fs, srv):
    """A proxy's 404 (wrong URL) must not read as "no checkpoint"."""
    srv.fail_next(1, status=404, exception="")
    with pytest.raises(CheckpointStorageError, match="WebHDFS"):
        fs.info("/f")
    srv.fail_next(1, status=404, exception="")
    with pytest.raises(CheckpointStorageError):
        fs.list_dir("/")


def test_error_messages_never_carry_tokens(fs, srv):
    srv.fail_next(
        1,
        status=403,
        exception="AccessControlException",
        message="denied: /webhdfs/v1/f?op=OPEN&delegation=SECRETTOKEN123&user.name=x",
    )
    with pytest.raises(CheckpointStorageError) as err:
        fs.read("/f")
    assert "SECRETTOKEN123" not in str(err.value)
    assert "delegation=***" in str(err.value)


def test_a_java_stack_trace_in_a_remote_exception_stays_out_of_the_error(fs, srv):
    """A DataNode's StandbyException carries its Java stack trace in the message (seen on
    Hadoop 3.5's MiniDFSCluster); the error stays one line."""
    srv.fail_next(
        1,
        status=403,
        exception="AccessControlException",
        message="Permission denied: user=x\n\tat org.apache.hadoop.ipc.Server$Handler.run(Server.java:3279)\n",
    )
    with pytest.raises(CheckpointStorageError) as err:
        fs.read("/f")
    assert "\n" not in str(err.value) and str(err.value).endswith("Permission denied: user=x")


def test_connection_refused_is_retried_then_reported():
    srv = WebHdfsServer().start()
    url, port = srv.url, srv.port
    srv.stop()
    fs = WebHdfsFileSystem(url, user="alice", retry_attempts=3, timeout=2, **FAST)
    with pytest.raises(CheckpointStorageError) as err:
        fs.info("/f")
    assert f"127.0.0.1:{port}/f" in str(err.value)
    assert "after 3 attempts" in str(err.value)


# ---- HA ------------------------------------------------------------------------------------
def test_ha_failover_between_name_nodes():
    ns = Namespace()
    with WebHdfsServer(namespace=ns, standby=True) as nn1, WebHdfsServer(namespace=ns) as nn2:
        fs = WebHdfsFileSystem([nn1.url, nn2.url], user="alice", **FAST)
        fs.write_atomic("/f", b"1")
        assert nn1.log[0].fault == "standby"
        nn1.standby, nn2.standby = False, True  # fail-over
        assert fs.read("/f") == b"1"
        assert nn1.requests(role="namenode", op="OPEN")

        nn1.standby = True  # both standby (mid fail-over): retried, then reported
        with pytest.raises(CheckpointStorageError) as err:
            fs.info("/f")
        assert "StandbyException" in str(err.value)
        assert f"127.0.0.1:{nn1.port}" in str(err.value) and f"127.0.0.1:{nn2.port}" in str(err.value)


def test_ha_with_one_name_node_down():
    dead = WebHdfsServer().start()
    dead_url = dead.url
    dead.stop()
    with WebHdfsServer() as live:
        fs = WebHdfsFileSystem(f"{dead_url};{live.url}", user="alice", **FAST)
        fs.write_atomic("/f", b"1")
        assert fs.read("/f") == b"1"


# ---- pickling, processes, threads ------------------------------------------------------------
def test_pickle_round_trip_before_and_after_use(fs, srv):
    clone = pickle.loads(pickle.dumps(fs))
    assert clone.urls == fs.urls and clone.user == "alice"
    clone.write_atomic("/p", b"1")
    assert fs.read("/p") == b"1"  # fs made its client only now
    clone2 = pickle.loads(pickle.dumps(fs))  # fs now holds a client: not pickled
    assert clone2.read("/p") == b"1"
    assert "_local" not in fs.__getstate__()


def test_a_new_process_gets_a_new_client(fs, monkeypatch):
    fs.info("/")
    first = fs._client()
    assert fs._client() is first
    monkeypatch.setattr(os, "getpid", lambda: -12345)  # as after a fork
    assert fs._client() is not first


def test_sixteen_threads_write_concurrently(fs, srv):
    def work(i):
        for j in range(4):
            fs.write_atomic(f"/t/{i}/f{j}", f"{i}-{j}".encode())
        return [fs.read(f"/t/{i}/f{j}") for j in range(4)]

    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(work, range(16)))
    assert results == [[f"{i}-{j}".encode() for j in range(4)] for i in range(16)]
    assert len(srv.namespace.files()) == 64
    assert temp_files(srv) == []


def test_threads_get_their_own_client(fs):
    clients = []
    threads = [threading.Thread(target=lambda: clients.append(fs._client())) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(c) for c in clients}) == 3


# ---- plugin-config --------------------------------------------------------------------------
# keys exactly as in the SeaTunnel "Checkpoint Storage" page
SEED_HDFS = {
    "storage.type": "hdfs",
    "fs.defaultFS": "hdfs://localhost:9000",
    "kerberosPrincipal": "your-kerberos-principal",
    "kerberosKeytab": "your-kerberos-keytab",
}
SEED_HA = {
    "storage.type": "hdfs",
    "fs.defaultFS": "hdfs://usdp-bing",
    "seatunnel.hadoop.dfs.nameservices": "usdp-bing",
    "seatunnel.hadoop.dfs.ha.namenodes.usdp-bing": "nn1,nn2",
    "seatunnel.hadoop.dfs.namenode.rpc-address.usdp-bing.nn1": "usdp-bing-nn1:8020",
    "seatunnel.hadoop.dfs.namenode.rpc-address.usdp-bing.nn2": "usdp-bing-nn2:8020",
    "seatunnel.hadoop.dfs.client.failover.proxy.provider.usdp-bing": 'org.apache.hadoop.hdfs.server.namenode.ha.ConfiguredFailoverProxyProvider"',
}


def test_plugin_config_plain_seed():
    fs = WebHdfsFileSystem.from_plugin_config(SEED_HDFS)
    assert fs.urls == ["http://localhost:9870"]  # RPC port 9000 is not the HTTP port
    assert fs.kerberos_principal == "your-kerberos-principal"
    assert fs.kerberos_keytab == "your-kerberos-keytab"
    plain = WebHdfsFileSystem.from_plugin_config({"fs.defaultFS": "hdfs://nn.example:8020"})
    assert plain.urls == ["http://nn.example:9870"] and plain.kerberos_principal is None


def test_plugin_config_ha_seed():
    fs = WebHdfsFileSystem.from_plugin_config(SEED_HA)
    assert fs.urls == ["http://usdp-bing-nn1:9870", "http://usdp-bing-nn2:9870"]
    explicit = dict(SEED_HA)
    explicit["seatunnel.hadoop.dfs.namenode.http-address.usdp-bing.nn2"] = "web-nn2:50070"
    explicit["seatunnel.hadoop.dfs.namenode.http-address.usdp-bing.nn1"] = "0.0.0.0:9870"
    fs = WebHdfsFileSystem.from_plugin_config(explicit)
    assert fs.urls == ["http://usdp-bing-nn1:9870", "http://web-nn2:50070"]


def test_plugin_config_overrides_and_users():
    base = {"fs.defaultFS": "hdfs://nn:8020"}
    fs = WebHdfsFileSystem.from_plugin_config({**base, "webhdfs.url": "http://a:1;http://b:2"})
    assert fs.urls == ["http://a:1", "http://b:2"]
    fs = WebHdfsFileSystem.from_plugin_config({**base, "seatunnel.hadoop.dfs.namenode.http-address": "0.0.0.0:50070"})
    assert fs.urls == ["http://nn:50070"]
    fs = WebHdfsFileSystem.from_plugin_config({"fs.defaultFS": "webhdfs://web:14000"})
    assert fs.urls == ["http://web:14000"]
    fs = WebHdfsFileSystem.from_plugin_config({**base, "seatunnel.hadoop.dfs.http.policy": "HTTPS_ONLY"})
    assert fs.urls == ["https://nn:9871"]
    fs = WebHdfsFileSystem.from_plugin_config({**base, "hdfs.user": "etl"})
    assert fs.user == "etl"
    fs = WebHdfsFileSystem.from_plugin_config({**base, "seatunnel.hadoop.hadoop.user.name": "svc"})
    assert fs.user == "svc"
    fs = WebHdfsFileSystem.from_plugin_config(
        {**base, "kerberosPrincipal": "p@R", "kerberosKeytabFilePath": "/k.keytab", "webhdfs.timeout": 5}
    )
    assert (fs.kerberos_keytab, fs.timeout) == ("/k.keytab", 5.0)


def test_plugin_config_bare_hadoop_keys_and_http_default_fs():
    bare = {k.replace("seatunnel.hadoop.", ""): v for k, v in SEED_HA.items()}
    assert WebHdfsFileSystem.from_plugin_config(bare).urls == [
        "http://usdp-bing-nn1:9870",
        "http://usdp-bing-nn2:9870",
    ]
    mixed = {**bare, "seatunnel.hadoop.dfs.namenode.http-address.usdp-bing.nn1": "web1:8080"}
    assert WebHdfsFileSystem.from_plugin_config(mixed).urls[0] == "http://web1:8080"
    assert WebHdfsFileSystem.from_plugin_config({"fs.defaultFS": "https://nn:9871"}).urls == ["https://nn:9871"]
    broken = {k: v for k, v in bare.items() if k != "dfs.namenode.rpc-address.usdp-bing.nn1"}
    broken["dfs.namenode.http-address.usdp-bing.nn1"] = "bad address"
    with pytest.raises(ConfigError) as err:
        WebHdfsFileSystem.from_plugin_config(broken)
    assert err.value.key == "plugin-config.dfs.namenode.http-address.usdp-bing.nn1"  # as the user wrote it


def test_plugin_config_krb5_path_reaches_kinit(krb):
    fs = WebHdfsFileSystem.from_plugin_config(
        {**SEED_HDFS, "kerberosKeytab": krb.keytab, "krb5Path": "/etc/custom-krb5.conf"}
    )
    assert fs.kerberos_krb5_conf == "/etc/custom-krb5.conf"
    renewer = fs._renewer()
    assert renewer.krb5_conf == "/etc/custom-krb5.conf"
    assert fs._renewer() is renewer  # one per process, shared by instances
    assert WebHdfsFileSystem.from_plugin_config(dict(SEED_HDFS, kerberosKeytab=krb.keytab))._renewer() is not renewer


@pytest.mark.parametrize(
    "config, key",
    [
        ({}, "plugin-config.fs.defaultFS"),
        ({"fs.defaultFS": "file:///"}, "plugin-config.fs.defaultFS"),
        ({"fs.defaultFS": "hdfs://nn:8020/base"}, "plugin-config.fs.defaultFS"),
        ({"fs.defaultFS": "hdfs://nn:8020", "storage.type": "s3"}, "plugin-config.storage.type"),
        ({"fs.defaultFS": "hdfs://nn:8020", "kerberosPrincipal": "p"}, "plugin-config.kerberosKeytab"),
        ({"fs.defaultFS": "hdfs://nn:8020", "kerberosKeytab": "/k"}, "plugin-config.kerberosPrincipal"),
        (
            {
                "fs.defaultFS": "hdfs://nn:8020",
                "kerberosPrincipal": "p",
                "kerberosKeytab": "/a",
                "kerberosKeytabFilePath": "/b",
            },
            "plugin-config.kerberosKeytabFilePath",
        ),
        ({"fs.defaultFS": "hdfs://nn:8020", "webhdfs.timeout": "0"}, "plugin-config.webhdfs.timeout"),
        ({"fs.defaultFS": "hdfs://nn:8020", "webhdfs.url": "ftp://x"}, "plugin-config.webhdfs.url"),
        (
            {k: v for k, v in SEED_HA.items() if not k.endswith(".nn2")},
            "plugin-config.seatunnel.hadoop.dfs.namenode.rpc-address.usdp-bing.nn2",
        ),
        (
            {**SEED_HA, "seatunnel.hadoop.dfs.namenode.rpc-address.usdp-bing.nn1": 'nn1:8020"'},
            "plugin-config.seatunnel.hadoop.dfs.namenode.rpc-address.usdp-bing.nn1",
        ),
        (
            {"fs.defaultFS": "hdfs://ns1", "seatunnel.hadoop.dfs.nameservices": "ns1"},
            "plugin-config.seatunnel.hadoop.dfs.ha.namenodes.ns1",
        ),
    ],
)
def test_plugin_config_errors_name_the_key(config, key):
    with pytest.raises(ConfigError) as err:
        WebHdfsFileSystem.from_plugin_config(config)
    assert err.value.key == key
    assert str(err.value).startswith(key + ": ")


def test_ha_plugin_config_against_live_name_nodes():
    ns = Namespace()
    with WebHdfsServer(namespace=ns, standby=True) as nn1, WebHdfsServer(namespace=ns) as nn2:
        config = {
            "storage.type": "hdfs",
            "fs.defaultFS": "hdfs://mycluster",
            "seatunnel.hadoop.dfs.nameservices": "mycluster",
            "seatunnel.hadoop.dfs.ha.namenodes.mycluster": "nn1,nn2",
            "seatunnel.hadoop.dfs.namenode.rpc-address.mycluster.nn1": "127.0.0.1:8020",
            "seatunnel.hadoop.dfs.namenode.rpc-address.mycluster.nn2": "127.0.0.1:8020",
            "seatunnel.hadoop.dfs.namenode.http-address.mycluster.nn1": f"127.0.0.1:{nn1.port}",
            "seatunnel.hadoop.dfs.namenode.http-address.mycluster.nn2": f"127.0.0.1:{nn2.port}",
            "hdfs.user": "etl",
        }
        fs = WebHdfsFileSystem.from_plugin_config(config)
        fs.write_atomic("/seatunnel/checkpoint/j/job.json", b"{}")
        assert ns.lookup("/seatunnel/checkpoint/j/job.json").owner == "etl"


# ---- Kerberos ------------------------------------------------------------------------------
FAKE_KINIT = r"""#!/bin/sh
# fake kinit -kt KEYTAB [-c CACHE] PRINCIPAL: records its arguments, writes a "ticket"
echo "$*" >> "$FAKE_KRB_DIR/kinit.log"
echo "${KRB5_CONFIG:-}" >> "$FAKE_KRB_DIR/kinit.env"
if [ -f "$FAKE_KRB_DIR/kinit_fail" ]; then
  echo "kinit: Keytab contains no suitable keys for x@EXAMPLE.COM while getting initial credentials" >&2
  exit 1
fi
now=$(( $(date +%s) + $(cat "$FAKE_KRB_DIR/offset") ))
life=$(cat "$FAKE_KRB_DIR/lifetime")
for last; do :; done
echo "$last $now $(( now + life ))" > "$FAKE_KRB_DIR/ticket"
"""

FAKE_KLIST = r"""#!/bin/sh
echo "$*" >> "$FAKE_KRB_DIR/klist.log"
t="$FAKE_KRB_DIR/ticket"
if [ ! -f "$t" ]; then
  echo "klist: No credentials cache found (filename: /tmp/krb5cc_test)" >&2
  exit 1
fi
read principal start end < "$t"
if [ "$1" = "-s" ]; then
  now=$(( $(date +%s) + $(cat "$FAKE_KRB_DIR/offset") ))
  [ "$end" -gt "$now" ]
  exit $?
fi
fmt='+%m/%d/%Y %H:%M:%S'
echo "Ticket cache: FILE:/tmp/krb5cc_test"
echo "Default principal: $principal"
echo
echo "Valid starting       Expires              Service principal"
if [ -f "$FAKE_KRB_DIR/garble" ]; then
  echo "someday              later                krbtgt/EXAMPLE.COM@EXAMPLE.COM"
else
  echo "$(date -d "@$start" "$fmt")  $(date -d "@$end" "$fmt")  krbtgt/EXAMPLE.COM@EXAMPLE.COM"
fi
"""


class FakeKerberos:
    """Fake kinit/klist on PATH sharing a "ticket" file and a clock offset with the test."""

    def __init__(self, tmp_path, monkeypatch):
        self.dir = tmp_path / "krb"
        bindir = self.dir / "bin"
        bindir.mkdir(parents=True)
        for name, body in (("kinit", FAKE_KINIT), ("klist", FAKE_KLIST)):
            script = bindir / name
            script.write_text(textwrap.dedent(body))
            script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        self.offset = 0
        (self.dir / "offset").write_text("0")
        self.lifetime = 24 * 3600
        monkeypatch.setenv("FAKE_KRB_DIR", str(self.dir))
        monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
        self.keytab = str(tmp_path / "etl.keytab")

    @property
    def lifetime(self) -> int:
        return int((self.dir / "lifetime").read_text())

    @lifetime.setter
    def lifetime(self, seconds: int) -> None:
        (self.dir / "lifetime").write_text(str(seconds))

    def clock(self) -> float:
        return time.time() + self.offset

    def advance(self, seconds: float) -> None:
        self.offset += int(seconds)
        (self.dir / "offset").write_text(str(self.offset))

    def kinit_calls(self) -> list[str]:
        log = self.dir / "kinit.log"
        return log.read_text().splitlines() if log.exists() else []

    def klist_calls(self) -> list[str]:
        log = self.dir / "klist.log"
        return log.read_text().splitlines() if log.exists() else []

    def renewer(self, principal="etl@EXAMPLE.COM", **kwargs):
        kwargs.setdefault("check_interval_s", 0)
        return KerberosTicketRenewer(principal, self.keytab, clock=self.clock, **kwargs)


@pytest.fixture
def krb(tmp_path, monkeypatch):
    return FakeKerberos(tmp_path, monkeypatch)


def test_renewer_runs_kinit_when_missing_and_again_before_expiry(krb):
    renewer = krb.renewer()
    renewer.ensure_fresh()
    assert krb.kinit_calls() == [f"-kt {krb.keytab} etl@EXAMPLE.COM"]
    renewer.ensure_fresh()
    assert len(krb.kinit_calls()) == 1  # fresh ticket: nothing to do

    krb.advance(0.5 * 24 * 3600)
    renewer.ensure_fresh()
    assert len(krb.kinit_calls()) == 1  # half its life left

    krb.advance(0.35 * 24 * 3600)  # 85 % used: Hadoop's 80 % rule renews
    renewer.ensure_fresh()
    assert len(krb.kinit_calls()) == 2

    krb.advance(3 * 24 * 3600)  # long expired (the SeaTunnel 24 h bug)
    renewer.ensure_fresh()
    assert len(krb.kinit_calls()) == 3
    assert renewer.kinit_count == 3


def test_renewer_renews_within_the_margin_of_short_tickets(krb):
    krb.lifetime = 3600
    renewer = krb.renewer(margin_s=600)
    renewer.ensure_fresh()
    krb.advance(2700)  # 75 % used, but only 15 min left of a 1 h ticket... still > margin
    renewer.ensure_fresh()
    assert len(krb.kinit_calls()) == 1
    krb.advance(400)  # 8 min left: inside the 10 min margin
    renewer.ensure_fresh()
    assert len(krb.kinit_calls()) == 2


def test_renewer_keeps_a_ticket_shorter_than_its_margin_for_half_its_life(krb):
    """A KDC issuing 4-minute tickets, under the 5-minute margin: the renewal was due the
    moment a ticket was issued, and the renewer refused every fresh ticket (found on
    Hadoop's MiniKdc, tests/integration/hdfs/test_kerberos_storage.py)."""
    krb.lifetime = 240
    renewer = krb.renewer(margin_s=300)
    renewer.ensure_fresh()
    renewer.ensure_fresh()
    assert len(krb.kinit_calls()) == 1  # the fresh ticket is used
    krb.advance(150)  # past half its life: renewed
    renewer.ensure_fresh()
    assert len(krb.kinit_calls()) == 2


def test_renewer_checks_the_cache_only_every_interval(krb):
    renewer = krb.renewer(check_interval_s=60)
    renewer.ensure_fresh()
    klists = len(krb.klist_calls())
    for _ in range(5):
        renewer.ensure_fresh()
    assert len(krb.klist_calls()) == klists
    krb.advance(61)
    renewer.ensure_fresh()
    assert len(krb.klist_calls()) == klists + 1
    assert len(krb.kinit_calls()) == 1


def test_renewer_replaces_another_principals_ticket(krb):
    krb.renewer(principal="someone-else@EXAMPLE.COM").ensure_fresh()
    renewer = krb.renewer(principal="etl@EXAMPLE.COM")
    renewer.ensure_fresh()
    assert krb.kinit_calls()[-1].endswith(" etl@EXAMPLE.COM")
    assert len(krb.kinit_calls()) == 2


def test_renewer_falls_back_to_a_timer_when_dates_are_unreadable(krb):
    (krb.dir / "garble").write_text("1")
    renewer = krb.renewer(fallback_refresh_s=3600)
    renewer.ensure_fresh()
    renewer.ensure_fresh()
    assert len(krb.kinit_calls()) == 1  # klist -s says the ticket is valid
    krb.advance(3601)
    renewer.ensure_fresh()
    assert len(krb.kinit_calls()) == 2


def test_renewer_passes_krb5_conf_to_kinit(krb):
    krb.renewer(krb5_conf="/etc/custom-krb5.conf").ensure_fresh()
    assert (krb.dir / "kinit.env").read_text().splitlines() == ["/etc/custom-krb5.conf"]


def test_renewer_reports_kinit_failure(krb):
    (krb.dir / "kinit_fail").write_text("1")
    with pytest.raises(CheckpointStorageError) as err:
        krb.renewer().ensure_fresh()
    message = str(err.value)
    assert "etl@EXAMPLE.COM" in message and "exit 1" in message and "no suitable keys" in message


def test_renewer_reports_missing_tools(tmp_path):
    renewer = KerberosTicketRenewer(
        "etl@EXAMPLE.COM", "/k.keytab", kinit=str(tmp_path / "no-kinit"), klist=str(tmp_path / "no-klist")
    )
    with pytest.raises(CheckpointStorageError, match="not found on PATH"):
        renewer.ensure_fresh()


def test_renewer_pickles_without_its_lock(krb):
    renewer = krb.renewer()
    renewer.ensure_fresh()
    clone = pickle.loads(pickle.dumps(renewer))
    assert clone.principal == renewer.principal and clone._renew_at is None


def test_parse_klist_formats():
    mit = textwrap.dedent("""\
        Ticket cache: FILE:/tmp/krb5cc_1000
        Default principal: etl@EXAMPLE.COM

        Valid starting     Expires            Service principal
        03/06/24 10:00:00  03/07/24 10:00:00  krbtgt/EXAMPLE.COM@EXAMPLE.COM
        \trenew until 03/13/24 10:00:00
        """)
    ticket = parse_klist(mit)
    assert ticket.principal == "etl@EXAMPLE.COM"
    assert ticket.expires - ticket.start == 24 * 3600
    heimdal = textwrap.dedent("""\
        Credentials cache: FILE:/tmp/krb5cc_1000
                Principal: etl@EXAMPLE.COM

          Issued                Expires               Principal
        Mar  6 10:00:00 2024  Mar  6 20:00:00 2024  krbtgt/EXAMPLE.COM@EXAMPLE.COM
        """)
    ticket = parse_klist(heimdal)
    assert ticket.principal == "etl@EXAMPLE.COM"
    assert ticket.expires - ticket.start == 10 * 3600
    assert parse_klist("klist: No credentials cache found") is None


def test_file_system_renews_the_ticket_before_requests(krb, srv, monkeypatch):
    renewer = krb.renewer()
    fs = WebHdfsFileSystem(
        [srv.url],
        kerberos_principal="etl@EXAMPLE.COM",
        kerberos_keytab=krb.keytab,
        kerberos_renewer=renewer,
        **FAST,
    )
    # stand-in for the SPNEGO client (the [kerberos] extra), talking to the same server
    monkeypatch.setattr(fs, "_new_client", lambda: InsecureClient(srv.url, user="etl"))
    fs.write_atomic("/k/f", b"1")
    assert len(krb.kinit_calls()) == 1
    assert fs.read("/k/f") == b"1"
    assert len(krb.kinit_calls()) == 1
    krb.advance(25 * 3600)  # a day later the first ticket is gone; SeaTunnel would fail here
    assert fs.read("/k/f") == b"1"
    assert len(krb.kinit_calls()) == 2


def test_kerberos_failure_is_reported_before_any_request(krb, srv, monkeypatch):
    (krb.dir / "kinit_fail").write_text("1")
    fs = WebHdfsFileSystem(
        [srv.url],
        kerberos_principal="etl@EXAMPLE.COM",
        kerberos_keytab=krb.keytab,
        kerberos_renewer=krb.renewer(),
        **FAST,
    )
    monkeypatch.setattr(fs, "_new_client", lambda: InsecureClient(srv.url, user="etl"))
    with pytest.raises(CheckpointStorageError, match="kinit"):
        fs.info("/f")
    assert srv.log == []


@pytest.mark.skipif(
    importlib.util.find_spec("requests_kerberos") is not None, reason="the [kerberos] extra is installed"
)
def test_kerberos_without_the_extra_raises_backend_missing(krb, srv):
    fs = WebHdfsFileSystem(
        [srv.url],
        kerberos_principal="etl@EXAMPLE.COM",
        kerberos_keytab=krb.keytab,
        kerberos_renewer=krb.renewer(),
        **FAST,
    )
    with pytest.raises(BackendMissing, match=r"airflow-provider-seatunnel-ckpt\[kerberos\]"):
        fs.info("/f")
    assert srv.log == [] and krb.kinit_calls() == []


def test_repr_and_describe_have_no_secrets(srv):
    fs = WebHdfsFileSystem([srv.url], kerberos_principal="etl@R", kerberos_keytab="/secret/etl.keytab")
    assert "keytab" not in repr(fs)
    assert fs.describe("/a/b") == f"webhdfs://127.0.0.1:{srv.port}/a/b"
