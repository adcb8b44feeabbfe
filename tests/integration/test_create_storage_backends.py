"""Storage built exactly as a user builds it: seatunnel.yaml text -> load_config ->
create_storage, against each backend's real (loopback) server.

Each test writes the plugin-config keys a user writes (the SeaTunnel / Hadoop names),
stores checkpoints through the public API, reads the latest back, checks the objects
landed where docs/storage.md says they do, and runs ``seatunnel-ckpt validate`` on the
same file to check that secrets are masked.
"""

from __future__ import annotations

import json
import pickle
import textwrap
import uuid
from pathlib import Path

import pytest

from airflow_provider_seatunnel_ckpt.cli import main
from airflow_provider_seatunnel_ckpt.config import load_config
from airflow_provider_seatunnel_ckpt.storage import PipelineState, create_storage
from airflow_provider_seatunnel_ckpt.storage.fs_memory import MemoryFileSystem
from airflow_provider_seatunnel_ckpt.storage.fs_storage import FileSystemCheckpointStorage

JOB = "orders-etl"
SMALL = b"offsets: partition-0=41"  # inlined into _metadata
LARGE = bytes(range(256)) * 40  # 10 KiB: its own coordinator.state file


pytestmark = pytest.mark.usefixtures("package_logging_restored")


def seatunnel_yaml(plugin_config: str, max_retained: int = 2) -> str:
    """A full seatunnel.yaml with the given plugin-config lines (already YAML)."""
    return textwrap.dedent(
        """\
        seatunnel:
          engine:
            checkpoint:
              interval: 6000
              timeout: 7000
              storage:
                type: hdfs
                max-retained: {max_retained}
                plugin-config:
        {plugin_config}"""
    ).format(max_retained=max_retained, plugin_config=textwrap.indent(textwrap.dedent(plugin_config), " " * 10))


def write_config(tmp_path: Path, text: str) -> str:
    path = tmp_path / "seatunnel.yaml"
    path.write_text(text)
    return str(path)


def round_trip(config_path: str) -> FileSystemCheckpointStorage:
    """The README's Python API on a config file: store, read latest, retention."""
    config = load_config(config_path)
    storage = create_storage(config.storage)
    assert isinstance(storage, FileSystemCheckpointStorage)
    for checkpoint_id in (1, 2, 3):
        storage.store_checkpoint(
            PipelineState(job_id=JOB, pipeline_id=1, checkpoint_id=checkpoint_id, states=SMALL + b"#%d" % checkpoint_id)
        )
    storage.store_checkpoint(PipelineState(job_id=JOB, pipeline_id=2, checkpoint_id=3, states=LARGE))

    # a copy, as shipped to a Spark executor, sees the same storage (clients are lazy)
    copy = pickle.loads(pickle.dumps(storage))
    latest = copy.get_latest_checkpoint_by_job_id_and_pipeline_id(JOB, 1)
    assert (latest.checkpoint_id, latest.states) == (3, SMALL + b"#3")
    per_pipeline = {s.pipeline_id: (s.checkpoint_id, s.states) for s in copy.get_latest_checkpoint(JOB)}
    assert per_pipeline == {1: (3, SMALL + b"#3"), 2: (3, LARGE)}
    assert copy.list_jobs() == [JOB]
    # max-retained: 2 -> checkpoint 1 was removed when 3 completed
    assert [s.checkpoint_id for s in copy.get_checkpoints_by_job_id_and_pipeline_id(JOB, 1)] == [2, 3]
    assert copy.verify_checkpoint(JOB, 2, 3) == []
    return storage


def expected_files(namespace: str) -> set[str]:
    """Paths (relative to the bucket / file-system root) the round trip leaves behind."""
    base = namespace.strip("/") + f"/{JOB}"
    return {
        f"{base}/pipeline-1/chk-00000000000000000002/_metadata",
        f"{base}/pipeline-1/chk-00000000000000000003/_metadata",
        f"{base}/pipeline-2/chk-00000000000000000003/_metadata",
        f"{base}/pipeline-2/chk-00000000000000000003/coordinator.state",
    }


def validate_output(config_path: str, capsys: pytest.CaptureFixture[str]) -> dict:
    assert main(["validate", config_path]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out)


# ---- S3 (moto behind a recording proxy: the session's s3_server, tests/conftest.py) ------------
def test_s3_from_seatunnel_yaml(s3_server, tmp_path, capsys):
    bucket = s3_server.create_bucket(f"ckpt-{uuid.uuid4().hex[:12]}")
    secret = "s3-SeCrEt-" + uuid.uuid4().hex
    path = write_config(
        tmp_path,
        seatunnel_yaml(
            f"""\
            storage.type: s3
            s3.bucket: s3a://{bucket}
            namespace: /seatunnel/checkpoint/
            fs.s3a.endpoint: {s3_server.endpoint_url}
            fs.s3a.endpoint.region: us-east-1
            fs.s3a.access.key: testing
            fs.s3a.secret.key: {secret}
            fs.s3a.path.style.access: true
            fs.s3a.aws.credentials.provider: org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider
            """
        ),
    )
    s3_server.proxy.reset()
    storage = round_trip(path)
    assert storage.fs.bucket == bucket and storage.fs.path_style is True

    listed = s3_server.client().list_objects_v2(Bucket=bucket)
    assert {o["Key"] for o in listed.get("Contents", [])} == expected_files("/seatunnel/checkpoint/")
    # path-style addressing: every request went to /<bucket>/..., none to <bucket>.host
    paths = [p for _method, p, _outcome in s3_server.proxy.requests]
    assert paths and all(p.startswith(f"/{bucket}") for p in paths)

    out = validate_output(path, capsys)
    plugin = out["storage"]["plugin-config"]
    assert plugin["fs.s3a.secret.key"] == "***"
    assert plugin["fs.s3a.access.key"] == "testing"
    assert plugin["fs.s3a.aws.credentials.provider"].endswith("SimpleAWSCredentialsProvider")
    assert secret not in json.dumps(out)

    # the CLI reads the same storage
    assert main(["list", "--config", path, "--job-id", JOB, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["pipeline"], r["checkpoint"]) for r in rows] == [(1, 2), (1, 3), (2, 3)]
    assert rows[0]["location"] == f"s3://{bucket}/seatunnel/checkpoint/{JOB}/pipeline-1/chk-00000000000000000002"


# ---- OSS (protocol-level server; checks V1 signatures) ---------------------------------------
def test_oss_from_seatunnel_yaml(tmp_path, capsys):
    from tests.servers.oss import OssServer

    access_key_id, secret = "oss-ak-" + uuid.uuid4().hex[:8], "oss-SeCrEt-" + uuid.uuid4().hex
    with OssServer(access_key_id, secret) as server:
        server.create_bucket("ckpt-oss")
        path = write_config(
            tmp_path,
            seatunnel_yaml(
                f"""\
                storage.type: oss
                oss.bucket: oss://ckpt-oss
                namespace: /seatunnel/checkpoint/
                fs.oss.endpoint: {server.endpoint}
                fs.oss.accessKeyId: {access_key_id}
                fs.oss.accessKeySecret: {secret}
                fs.oss.credentials.provider: org.apache.hadoop.fs.aliyun.oss.AliyunCredentialsProvider
                """
            ),
        )
        storage = round_trip(path)
        assert storage.fs.bucket == "ckpt-oss"
        assert set(server.keys("ckpt-oss")) == expected_files("/seatunnel/checkpoint/")

    out = validate_output(path, capsys)
    plugin = out["storage"]["plugin-config"]
    assert plugin["fs.oss.accessKeySecret"] == "***"
    assert plugin["fs.oss.accessKeyId"] == access_key_id
    assert secret not in json.dumps(out)


def test_oss_wrong_secret_fails_fast_without_leaking_it(tmp_path):
    from airflow_provider_seatunnel_ckpt.errors import CheckpointStorageError
    from tests.servers.oss import OssServer

    wrong = "oss-WrOnG-" + uuid.uuid4().hex
    with OssServer("oss-ak", "the-right-secret") as server:
        server.create_bucket("ckpt-oss")
        path = write_config(
            tmp_path,
            seatunnel_yaml(
                f"""\
                storage.type: oss
                oss.bucket: ckpt-oss
                fs.oss.endpoint: {server.endpoint}
                fs.oss.accessKeyId: oss-ak
                fs.oss.accessKeySecret: {wrong}
                """
            ),
        )
        storage = create_storage(load_config(path))
        with pytest.raises(CheckpointStorageError) as caught:
            storage.list_jobs()
        assert len(server.requests) == 1  # a 403 is permanent: no retries
    message = str(caught.value)
    assert "SignatureDoesNotMatch" in message and "ckpt-oss" in message
    assert wrong not in message


# ---- HDFS through WebHDFS ---------------------------------------------------------------------
def hdfs_files(server) -> set[str]:
    return {p.lstrip("/") for p in server.namespace.files()}


def test_hdfs_from_seatunnel_yaml(tmp_path, capsys):
    from tests.servers.webhdfs import WebHdfsServer

    with WebHdfsServer(required_user="seatunnel") as server:
        path = write_config(
            tmp_path,
            seatunnel_yaml(
                f"""\
                storage.type: hdfs
                fs.defaultFS: hdfs://127.0.0.1:8020
                namespace: /seatunnel/checkpoint/
                seatunnel.hadoop.dfs.namenode.http-address: 127.0.0.1:{server.port}
                hdfs.user: seatunnel
                """
            ),
        )
        storage = round_trip(path)
        assert storage.fs.urls == [server.url]
        assert hdfs_files(server) == expected_files("/seatunnel/checkpoint/")  # no temp files left
        assert {r.query.get("user.name") for r in server.requests(role="namenode")} == {"seatunnel"}

    out = validate_output(path, capsys)
    assert out["storage"]["plugin-config"]["fs.defaultFS"] == "hdfs://127.0.0.1:8020"


def test_hdfs_webhdfs_url_key(tmp_path):
    from tests.servers.webhdfs import WebHdfsServer

    with WebHdfsServer() as server:
        path = write_config(
            tmp_path,
            seatunnel_yaml(
                f"""\
                storage.type: hdfs
                fs.defaultFS: hdfs://namenode.example:8020
                webhdfs.url: {server.url}
                namespace: /ckpt/
                """
            ),
        )
        round_trip(path)
        assert hdfs_files(server) == expected_files("/ckpt/")


def test_hdfs_ha_name_service_with_the_first_name_node_standby(tmp_path, capsys):
    from tests.servers.webhdfs import Namespace, WebHdfsServer

    shared = Namespace()
    with WebHdfsServer(namespace=shared, standby=True) as nn1, WebHdfsServer(namespace=shared) as nn2:
        text = seatunnel_yaml(
            f"""\
            storage.type: hdfs
            fs.defaultFS: hdfs://usdp-bing
            seatunnel.hadoop.dfs.nameservices: usdp-bing
            seatunnel.hadoop.dfs.ha.namenodes.usdp-bing: nn1,nn2
            seatunnel.hadoop.dfs.namenode.rpc-address.usdp-bing.nn1: 127.0.0.1:8020
            seatunnel.hadoop.dfs.namenode.rpc-address.usdp-bing.nn2: 127.0.0.1:8021
            seatunnel.hadoop.dfs.namenode.http-address.usdp-bing.nn1: 127.0.0.1:{nn1.port}
            seatunnel.hadoop.dfs.namenode.http-address.usdp-bing.nn2: 127.0.0.1:{nn2.port}
            seatunnel.hadoop.dfs.client.failover.proxy.provider.usdp-bing: org.apache.hadoop.hdfs.server.namenode.ha.ConfiguredFailoverProxyProvider
            """
        )
        path = write_config(tmp_path, text)
        storage = round_trip(path)
        assert storage.fs.urls == [nn1.url, nn2.url]
        assert hdfs_files(nn2) == expected_files("/seatunnel/checkpoint/")
        assert nn1.requests(role="namenode"), "the standby was never asked"
        assert all(r.status == 403 and r.fault == "standby" for r in nn1.requests(role="namenode"))

        # fail over: nn1 becomes active, nn2 standby; the same storage keeps working
        nn1.standby, nn2.standby = False, True
        storage.store_checkpoint(PipelineState(job_id=JOB, pipeline_id=1, checkpoint_id=4, states=b"after failover"))
        fresh = create_storage(load_config(path))
        latest = fresh.get_latest_checkpoint_by_job_id_and_pipeline_id(JOB, 1)
        assert (latest.checkpoint_id, latest.states) == (4, b"after failover")
        assert any(r.status < 300 for r in nn1.requests(role="namenode"))

    assert validate_output(path, capsys)["storage"]["plugin-config"]["fs.defaultFS"] == "hdfs://usdp-bing"


# ---- local disk and memory --------------------------------------------------------------------
def test_local_from_seatunnel_yaml(tmp_path, capsys):
    namespace = f"{tmp_path}/checkpoint/"
    path = write_config(
        tmp_path,
        seatunnel_yaml(
            f"""\
            storage.type: hdfs
            fs.defaultFS: file:///
            namespace: {namespace}
            """
        ),
    )
    round_trip(path)
    on_disk = {str(p.relative_to("/")) for p in Path(namespace).rglob("*") if p.is_file()}
    assert on_disk == expected_files(namespace)
    assert validate_output(path, capsys)["storage"]["plugin-config"]["namespace"] == namespace


def test_deprecated_localfile_type_still_works_and_warns(tmp_path):
    namespace = f"{tmp_path}/legacy/"
    path = write_config(
        tmp_path,
        textwrap.dedent(
            f"""\
            seatunnel:
              engine:
                checkpoint:
                  storage:
                    type: localfile
                    max-retained: 2
                    plugin-config:
                      namespace: {namespace}
            """
        ),
    )
    config = load_config(path)
    assert any("'localfile' is deprecated" in w for w in config.warnings)
    round_trip(path)
    assert {str(p.relative_to("/")) for p in Path(namespace).rglob("*") if p.is_file()} == expected_files(namespace)


def test_memory_from_seatunnel_yaml(tmp_path):
    path = write_config(
        tmp_path,
        textwrap.dedent(
            """\
            checkpoint:
              storage:
                type: memory
                max-retained: 2
            """
        ),
    )
    try:
        storage = round_trip(path)
        assert isinstance(storage.fs, MemoryFileSystem)
        # another instance in the same process shares the store
        again = create_storage(load_config(path))
        assert again.get_latest_checkpoint_by_job_id_and_pipeline_id(JOB, 2).states == LARGE
    finally:
        MemoryFileSystem.clear_all()
