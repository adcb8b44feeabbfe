"""SeaTunnel's S3File, OssFile and HdfsFile against the test suite's servers (moto's S3,
the OSS protocol server in tests/servers, Hadoop's own MiniDFSCluster): a sink writes through its
two-phase commit with SeaTunnel's connection options, the same connector reads it back."""

from __future__ import annotations

import decimal
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.connectors import load_sink, load_source
from airflow_provider_seatunnel_ckpt.connectors.api import ReaderContext, iter_batches

from .conftest import OSS_ACCESS_KEY_ID, OSS_ACCESS_KEY_SECRET, S3_REGION, S3_SECRET_KEY

SCHEMA = {"fields": {"id": "bigint", "name": "string", "price": "decimal(10, 2)"}}
ROWS = [{"id": i, "name": f"n{i}", "price": decimal.Decimal(i) / 4} for i in range(50)]


def _s3(request: pytest.FixtureRequest) -> dict[str, Any]:
    server = request.getfixturevalue("s3_server")
    bucket = request.getfixturevalue("s3_bucket")
    return {
        "plugin_name": "S3File",
        "bucket": f"s3a://{bucket}",
        "fs.s3a.endpoint": server.endpoint_url,
        "fs.s3a.endpoint.region": S3_REGION,
        "fs.s3a.path.style.access": "true",
        "access_key": "engine-access-key",
        "secret_key": S3_SECRET_KEY,
    }


def _oss(request: pytest.FixtureRequest) -> dict[str, Any]:
    server = request.getfixturevalue("oss_server")
    bucket = f"seatunnel-{uuid.uuid4().hex[:12]}"
    server.create_bucket(bucket)
    return {
        "plugin_name": "OssFile",
        "bucket": f"oss://{bucket}",
        "endpoint": server.endpoint,
        "access_key": OSS_ACCESS_KEY_ID,
        "access_secret": OSS_ACCESS_KEY_SECRET,
    }


def _hdfs(request: pytest.FixtureRequest) -> dict[str, Any]:
    """Hadoop's own NameNode (MiniDFSCluster); its HA pair: tests/integration/hdfs."""
    cluster = request.getfixturevalue("hdfs_cluster")
    return {
        "plugin_name": "HdfsFile",
        "fs.defaultFS": cluster.fs_default,
        "hdfs_site_path": str(Path(cluster.conf_dir) / "hdfs-site.xml"),
    }


@pytest.mark.parametrize("connection", [_s3, _oss, _hdfs], ids=["S3File", "OssFile", "HdfsFile"])
@pytest.mark.parametrize("file_format", ["text", "parquet"])
def test_a_sink_writes_exactly_what_the_source_reads_back(
    request: pytest.FixtureRequest, connection: Callable[[pytest.FixtureRequest], dict[str, Any]], file_format: str
) -> None:
    path = f"/seatunnel-{uuid.uuid4().hex[:8]}/{file_format}"
    options = {**connection(request), "path": path, "file_format_type": file_format}
    sink = load_sink(options, "sink[0]")
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("price", pa.decimal128(10, 2))])
    writer = sink.create_writer("st-storage", 0, 0)
    writer.open(0)
    writer.write(pa.RecordBatch.from_pylist(ROWS, schema=schema))
    info = writer.prepare_commit(1)
    committer = sink.create_committer("st-storage")
    committer.commit([info])
    committer.commit([info])  # a replay after a restore publishes the same files again: no second copy
    source = load_source({**options, "schema": SCHEMA}, "source[0]")
    rows = [
        row
        for split in source.splits(1)
        for batch in iter_batches(source.create_reader(split, None, ReaderContext(0, 1)))
        for row in batch.to_pylist()
    ]
    assert sorted(rows, key=lambda r: r["id"]) == ROWS
