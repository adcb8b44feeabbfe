"""Chaos, the Kafka sink's EXACTLY_ONCE protocol: a Sequence of 300,000 ids written to 4
partitions of librdkafka's mock cluster in a transaction per epoch and subtask, under
executor-worker kills and driver SIGKILLs with reruns (``--restore latest``).

The mock serves open and aborted transactions to every reader, so what a
``read_committed`` reader would see is computed from the log's COMMIT and ABORT markers
(``read_committed_values``) and every id is counted in that view: each must be there
exactly once. That the broker hides open transactions and aborts fenced ones is Kafka's
part, which the mock does not do (docs/kafka.md); instead the sink's transaction audit
must show that no transactional id was claimed while its transaction waited, prepared,
for the driver's commit."""

from __future__ import annotations

import json
import random
import time
from typing import Any

import pytest

from airflow_provider_seatunnel_ckpt.connectors.kafka.transactions import AUDIT_ENV
from tests.integration.engine.support import Workspace, tally
from tests.integration.kafka.test_kafka_sink import consume_all
from tests.servers.kafka import claimed_while_prepared, read_committed_values

from .conftest import ChaosRecord
from .runs import chaos_runs

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

ROWS = 300_000
PARTITIONS = 4


def test_protocol_sequence_to_kafka_exactly_once_under_kills(
    workspace: Workspace, kafka_cluster: Any, chaos: tuple[random.Random, ChaosRecord]
) -> None:
    rng, record = chaos
    started = time.monotonic()
    kafka_cluster.create_topic("chaos-sink", PARTITIONS)
    source = {"plugin_name": "Sequence", "rows": ROWS, "rows_per_second": 30_000, "batch_size": 2_000}
    sink = {
        "plugin_name": "Kafka",
        "bootstrap.servers": kafka_cluster.bootstrap_servers,
        "topic": "chaos-sink",
        "semantics": "EXACTLY_ONCE",
    }
    job = workspace.write_job(source, sink)
    config = workspace.write_config(interval=500, tolerable_failure=10)
    audit = workspace.root / "transactions.jsonl"
    workspace.env[AUDIT_ENV] = str(audit)
    chaos_runs(workspace, record, rng, job, config, "chaos-kafka-sink")
    record.elapsed_s = time.monotonic() - started
    visible = read_committed_values(kafka_cluster.bootstrap_servers, "chaos-sink", PARTITIONS)
    result = tally([json.loads(value)["id"] for value in visible], ROWS)
    record.rows, record.lost, record.duplicated = result.rows, result.lost, result.duplicated
    assert result.exactly_once, f"seed {record.seed}: {result}; kill points: {record.kill_points}"
    assert len(record.kill_points) >= 4, record.kill_points
    # how many records the kills left in open or aborted transactions depends on where they landed
    record.notes.append(f"{len(consume_all(kafka_cluster, 'chaos-sink', PARTITIONS)):,} records in the log")
    # What the mock cannot show: no transactional id was claimed while its transaction
    # waited, prepared, for the driver's commit (a real broker would have aborted it).
    hazards, commits = claimed_while_prepared(audit)
    assert commits > 0 and not hazards, f"{commits} commits checked; claimed while prepared: {hazards[:5]}"
