"""File source and sink against S3 (moto on 127.0.0.1), through filesystem_for_url."""

from __future__ import annotations

import uuid

import numpy as np
import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.connectors import load_sink, load_source
from airflow_provider_seatunnel_ckpt.connectors.api import ReaderContext, iter_batches

pytest.importorskip("moto")


@pytest.fixture(scope="module")
def s3():
    from tests.servers.s3 import S3Server

    with S3Server(proxy=True) as server:
        yield server


@pytest.fixture
def bucket(s3):
    return s3.create_bucket(f"conn-{uuid.uuid4().hex[:12]}")


def storage_options(s3) -> dict:
    return {
        "fs.s3a.endpoint": s3.endpoint_url,
        "fs.s3a.access.key": s3.access_key_id,
        "fs.s3a.secret.key": s3.secret_access_key,
        "fs.s3a.path.style.access": True,
        "fs.s3a.endpoint.region": s3.region,
    }


def test_sink_to_s3_then_source_with_range_reads(s3, bucket):
    options = storage_options(s3)
    sink = load_sink({"plugin_name": "File", "path": f"s3a://{bucket}/out/", **options}, "sink[0]")
    committer = sink.create_committer("s3job")
    writer = sink.create_writer("s3job", 0, 0)
    n = 120_000
    for start in range(0, n, 20_000):
        writer.write(
            pa.record_batch(
                {
                    "id": np.arange(start, start + 20_000, dtype=np.int64),
                    "v": np.random.default_rng(start).random(20_000),
                }
            )
        )
    info = writer.prepare_commit(1)

    def keys() -> list[str]:
        return sorted(o["Key"] for o in s3.client().list_objects_v2(Bucket=bucket).get("Contents", []))

    assert all(k.startswith("out/_staging/s3job/") for k in keys())
    committer.commit([info])
    committer.commit([info])
    committer.cleanup([info])
    assert keys() == ["out/part-efc5d734-00000-0-0000000001-0.parquet"]

    source = load_source({"plugin_name": "File", "path": f"s3://{bucket}/out", **options}, "source[0]")
    [split] = source.splits(1)
    assert split.split_id == "part-efc5d734-00000-0-0000000001-0.parquet"
    reader = source.create_reader(split, 100_000, ReaderContext(0, 1, batch_size=8192))
    assert [i for b in iter_batches(reader) for i in b.column("id").to_pylist()] == list(range(100_000, n))
    assert reader.file.bytes_read < reader.file.size / 2  # footer + last row group only
    s3.proxy.reset()
    reader = source.create_reader(split, None, ReaderContext(0, 1))
    assert sum(b.num_rows for b in iter_batches(reader)) == n
    ranged = [p for m, p, _ in s3.proxy.requests if m == "GET" and "/out/part-" in p]
    assert len(ranged) == reader.file.requests >= 2
