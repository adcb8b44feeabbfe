"""Fixtures for the engine's integration suite: real Spark, real protocol servers.

* ``spark_env``: the environment every Spark process runs with (loopback only);
* ``workspace``: a per-test directory with helpers to write seatunnel.yaml and job
  files and to run ``seatunnel-ckpt run`` as a subprocess (see ``support.Workspace``);
* ``standalone``: a Spark standalone master and one worker on 127.0.0.1 (started once,
  killed at the end of the session);
* ``s3_bucket`` (on the session's ``s3_server``, tests/conftest.py) / ``webhdfs_server`` /
  ``oss_server``: the storage test servers, in this process, reached by drivers and
  executors over loopback; ``*_plugin_config`` build the seatunnel.yaml ``plugin-config``
  a user would write for them.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.workspace import StandaloneCluster, Workspace, spark_environment, start_standalone_cluster

S3_REGION = "us-east-1"
OSS_ACCESS_KEY_ID = "engine-ak"
#: distinctive, so the secrets test can look for it anywhere
OSS_ACCESS_KEY_SECRET = "OsS-SeCrEt-" + uuid.uuid4().hex
S3_SECRET_KEY = "S3-SeCrEt-" + uuid.uuid4().hex


@pytest.fixture(scope="session")
def spark_env() -> dict[str, str]:
    env = spark_environment()
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"  # for anything the test process itself starts
    return env


@pytest.fixture
def workspace(tmp_path: Path, spark_env: dict[str, str]) -> Workspace:
    return Workspace(tmp_path, spark_env)


@pytest.fixture(scope="session")
def standalone(tmp_path_factory: pytest.TempPathFactory, spark_env: dict[str, str]) -> Iterator[StandaloneCluster]:
    cluster = start_standalone_cluster(tmp_path_factory.mktemp("standalone"), spark_env)
    try:
        yield cluster
    finally:
        cluster.stop()


# ---- storage servers --------------------------------------------------------------------------
@pytest.fixture
def s3_bucket(s3_server: Any) -> Iterator[str]:
    """A fresh bucket; the fault proxy forwards everything again afterwards."""
    bucket = s3_server.create_bucket(f"engine-{uuid.uuid4().hex[:12]}")
    s3_server.proxy.reset()
    yield bucket
    s3_server.proxy.reset()


def s3_options(server: Any, secret: str = S3_SECRET_KEY) -> dict[str, str]:
    """The fs.s3a.* keys for the test S3 (through the fault proxy)."""
    return {
        "fs.s3a.endpoint": server.endpoint_url,
        "fs.s3a.endpoint.region": S3_REGION,
        "fs.s3a.access.key": "engine-access-key",
        "fs.s3a.secret.key": secret,
        "fs.s3a.path.style.access": "true",
        "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
    }


@pytest.fixture
def s3_plugin_config(s3_server: Any, s3_bucket: str) -> dict[str, str]:
    return {
        "storage.type": "s3",
        "s3.bucket": f"s3a://{s3_bucket}",
        "namespace": "/seatunnel/checkpoint/",
        **s3_options(s3_server),
    }


@pytest.fixture
def webhdfs_server() -> Iterator[Any]:
    from tests.servers.webhdfs import WebHdfsServer

    with WebHdfsServer() as server:
        yield server


def webhdfs_plugin_config(server: Any) -> dict[str, str]:
    # As a SeaTunnel user writes it: the RPC address plus the name node's HTTP address.
    return {
        "storage.type": "hdfs",
        "fs.defaultFS": "hdfs://127.0.0.1:8020",
        "seatunnel.hadoop.dfs.namenode.http-address": f"127.0.0.1:{server.port}",
        "namespace": "/seatunnel/checkpoint/",
    }


@pytest.fixture(scope="session")
def oss_server() -> Iterator[Any]:
    from tests.servers.oss import OssServer

    with OssServer(OSS_ACCESS_KEY_ID, OSS_ACCESS_KEY_SECRET) as server:
        yield server


@pytest.fixture
def oss_plugin_config(oss_server: Any) -> Iterator[dict[str, str]]:
    bucket = f"engine-{uuid.uuid4().hex[:12]}"
    oss_server.create_bucket(bucket)
    yield {
        "storage.type": "oss",
        "oss.bucket": f"oss://{bucket}",
        "fs.oss.endpoint": oss_server.endpoint,
        "fs.oss.accessKeyId": OSS_ACCESS_KEY_ID,
        "fs.oss.accessKeySecret": OSS_ACCESS_KEY_SECRET,
        "fs.oss.credentials.provider": "org.apache.hadoop.fs.aliyun.oss.AliyunCredentialsProvider",
        "namespace": "/seatunnel/checkpoint/",
    }
    oss_server.clear_faults()


PluginConfig = Callable[..., dict[str, str]]
