"""Chaos, exactly-once, from Kafka: 1,000,000 JSON records on 6 partitions of
librdkafka's mock cluster (the Kafka protocol over loopback), read in bounded mode
through a ``Sql`` transform into parquet, under executor-worker kills and driver
SIGKILLs with reruns (``--restore latest``). The partitions' offsets are the source's
checkpointed positions; every id of the output is counted."""

from __future__ import annotations

import random
import time
from typing import Any

import pytest

from tests.integration.engine.support import Workspace, read_output, tally

from .conftest import ChaosRecord
from .runs import chaos_runs

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

RECORDS = 1_000_000
PARTITIONS = 6
THROTTLE = {"plugin_name": "Python", "function": "tests.chaos.throttle:rows_30k"}


def test_kafka_sql_file_under_kills(workspace: Workspace, kafka_cluster: Any, chaos: tuple[random.Random, ChaosRecord]) -> None:
    rng, record = chaos
    started = time.monotonic()
    kafka_cluster.create_topic("chaos-events", PARTITIONS)
    # small records: the mock keeps about 5 MB per partition and drops older records
    kafka_cluster.produce_json("chaos-events", ({"id": i, "s": i % 100} for i in range(RECORDS)), PARTITIONS)
    assert kafka_cluster.low_watermarks("chaos-events", PARTITIONS) == [0] * PARTITIONS
    source = {"plugin_name": "Kafka", "bootstrap.servers": kafka_cluster.bootstrap_servers, "topic": "chaos-events",
              "consumer.group": "chaos", "start_mode": "earliest", "stop_mode": "end_offsets_at_start",
              "format": "json", "schema": {"fields": {"id": "bigint", "s": "int"}},
              "batch_size": 5_000}
    sql = {"plugin_name": "Sql", "query": "select id, s * 10 as score10 from events"}
    job = workspace.write_job(source, transforms=[THROTTLE, sql])
    config = workspace.write_config(interval=500, tolerable_failure=10)
    chaos_runs(workspace, record, rng, job, config, "chaos-kafka")
    record.elapsed_s = time.monotonic() - started
    table = read_output(f"file://{workspace.output}/", columns=["id", "score10"])
    result = tally(table.column("id").combine_chunks(), RECORDS)
    record.rows, record.lost, record.duplicated = result.rows, result.lost, result.duplicated
    assert result.exactly_once, f"seed {record.seed}: {result}; kill points: {record.kill_points}"
    ids, score10 = table.column("id").to_numpy(), table.column("score10").to_numpy()
    assert (score10 == (ids % 100) * 10).all(), "the Sql transform's column is wrong on some rows"
    assert len(record.kill_points) >= 4, record.kill_points
