"""Chaos, the Kafka sink's EXACTLY_ONCE protocol: a Sequence of 300,000 ids written to 4
partitions of a real broker (Apache Kafka 4.1, the session's ``kafka_broker``) in a
transaction per epoch and subtask, under executor-worker kills and driver SIGKILLs with
reruns (``--restore latest``). A real ``isolation.level=read_committed`` consumer counts
every id: each must be there exactly once.

The broker hides open transactions and aborts one whose id a new producer claims, so a
claim of a prepared transaction would show as lost ids or a failed commit. The sink's
transaction audit is checked too: it names the claim (no transactional id may be claimed
while its transaction waits, prepared, for the driver's commit)."""

from __future__ import annotations

import random
import time
from typing import Any

import pytest

from airflow_provider_seatunnel_ckpt.connectors.kafka.transactions import AUDIT_ENV
from tests.servers.kafka import claimed_while_prepared
from tests.servers.kafka_records import read_ids
from tests.support.chaos import ChaosRecord, chaos_runs
from tests.support.kafka import new_topic, sequence_to_kafka
from tests.support.workspace import Workspace, tally

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

ROWS = 300_000
PARTITIONS = 4


def test_sequence_to_kafka_every_id_once_for_read_committed_under_kills(
    workspace: Workspace, kafka_broker: Any, chaos: tuple[random.Random, ChaosRecord]
) -> None:
    rng, record = chaos
    started = time.monotonic()
    topic = new_topic(kafka_broker, PARTITIONS)
    job = sequence_to_kafka(workspace, kafka_broker, topic, ROWS, rows_per_second=30_000, batch_size=2_000)
    config = workspace.write_config(interval=500, tolerable_failure=10)
    audit = workspace.root / "transactions.jsonl"
    workspace.env[AUDIT_ENV] = str(audit)
    chaos_runs(workspace, record, rng, job, config, "chaos-kafka-sink")
    record.elapsed_s = time.monotonic() - started
    result = tally(read_ids(kafka_broker, topic, PARTITIONS), ROWS)
    record.rows, record.lost, record.duplicated = result.rows, result.lost, result.duplicated
    assert result.exactly_once, f"seed {record.seed}: {result}; kill points: {record.kill_points}"
    assert len(record.kill_points) >= 4, record.kill_points
    # how many records the kills left in open or aborted transactions depends on where they landed
    in_log = len(read_ids(kafka_broker, topic, PARTITIONS, "read_uncommitted"))
    record.notes.append(f"{in_log:,} records in the log (aborted ones included)")
    # Which claim it was, should one abort a prepared transaction (the count above fails
    # or a commit fails the run; this names the transactional id and when).
    hazards, commits = claimed_while_prepared(audit)
    assert commits > 0 and not hazards, f"{commits} commits checked; claimed while prepared: {hazards[:5]}"
