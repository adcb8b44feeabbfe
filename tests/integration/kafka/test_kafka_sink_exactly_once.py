"""The Kafka sink's EXACTLY_ONCE protocol against librdkafka's mock cluster.

The mock serves every record whatever the isolation level and does not abort a
transaction when a new producer claims its id, so these tests check the protocol, as
their names say: a transaction per epoch, left open at the barrier, committed by another
client (the driver) from the producer id and epoch kept in the checkpoint, refused when
the broker no longer holds it open, aborted when the epoch ends unprepared. What a
``read_committed`` reader sees is computed from the log's own transaction markers
(``read_committed_values``), and a run with a driver kill must show every id exactly
once in that view. The end-to-end exactly-once proof of the Kafka path is the source's
(test_kafka_e2e.py)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.connectors import load_sink
from airflow_provider_seatunnel_ckpt.connectors.kafka import exactly_once
from airflow_provider_seatunnel_ckpt.errors import ConfigError, ConnectorError
from tests.integration.kafka.test_kafka_sink import (
    new_topic,
)
from tests.servers.kafka import claimed_while_prepared, read_committed_values

pytestmark = pytest.mark.timeout(300)


def exactly_once_sink(cluster: Any, topic: str, **extra: Any) -> Any:
    return load_sink(
        {
            "plugin_name": "Kafka",
            "bootstrap.servers": cluster.bootstrap_servers,
            "topic": topic,
            "semantics": "EXACTLY_ONCE",
            **extra,
        },
        "sink[0]",
    )


def committed_ids(cluster: Any, topic: str, partitions: int = 3) -> list[int]:
    return sorted(json.loads(v)["id"] for v in read_committed_values(cluster.bootstrap_servers, topic, partitions))


def test_protocol_an_epoch_is_one_transaction_the_driver_commits_after_the_checkpoint(kafka_cluster: Any) -> None:
    topic = new_topic(kafka_cluster)
    sink = exactly_once_sink(kafka_cluster, topic, transaction_prefix="orders")
    writer = sink.create_writer("job", 2, 0)
    writer.open(7)
    writer.write(pa.record_batch({"id": np.arange(0, 600)}))
    writer.write(pa.record_batch({"id": np.arange(600, 1000)}))
    info = writer.prepare_commit(8)
    writer.close()  # a prepared transaction outlives its writer
    assert info["transactional_id"] == "orders-job-2-7"  # the job id keeps two jobs apart
    assert info["producer_id"] >= 0 and info["producer_epoch"] >= 0
    assert committed_ids(kafka_cluster, topic) == []  # flushed, not visible
    committer = exactly_once_sink(kafka_cluster, topic).create_committer("job")  # another client: the driver
    committer.commit([info])
    assert committed_ids(kafka_cluster, topic) == list(range(1000))
    committer.commit([info])  # a restore commits the restored checkpoint's transactions again
    assert committed_ids(kafka_cluster, topic) == list(range(1000))
    committer.cleanup([info])


def test_protocol_a_transaction_the_broker_no_longer_holds_fails_the_commit_loudly(kafka_cluster: Any) -> None:
    topic = new_topic(kafka_cluster)
    sink = exactly_once_sink(kafka_cluster, topic)
    infos = []
    for subtask in (0, 1):
        writer = sink.create_writer("job", subtask, 0)
        writer.open(0)
        writer.write(pa.record_batch({"id": np.arange(subtask * 10, subtask * 10 + 10)}))
        infos.append(writer.prepare_commit(1))
    stale = {**infos[0], "producer_epoch": infos[0]["producer_epoch"] + 1}  # as after a newer producer claimed the id
    with pytest.raises(ConnectorError) as raised:
        sink.create_committer("job").commit([stale, infos[1]])
    message = str(raised.value)
    assert "committing transaction 'seatunnel-ckpt-job-0-0'" in message and "InvalidProducerEpoch" in message
    assert "\n" not in message
    assert committed_ids(kafka_cluster, topic) == list(range(10, 20))  # the checkpoint's other transaction committed


def test_protocol_an_epoch_that_ends_unprepared_is_aborted_and_an_empty_one_makes_none(kafka_cluster: Any) -> None:
    topic = new_topic(kafka_cluster)
    sink = exactly_once_sink(kafka_cluster, topic)
    writer = sink.create_writer("job", 0, 0)
    writer.open(3)
    writer.write(pa.record_batch({"id": np.arange(50)}))
    writer.close()  # the attempt ended inside the epoch: its rows are read again elsewhere
    empty = sink.create_writer("job", 0, 0)
    empty.open(4)
    assert empty.prepare_commit(5) is None
    committed = sink.create_writer("job", 0, 0)
    committed.open(3)  # the same id again: a new producer fences the old one
    committed.write(pa.record_batch({"id": np.arange(50, 60)}))
    sink.create_committer("job").commit([committed.prepare_commit(4)])
    assert committed_ids(kafka_cluster, topic) == list(range(50, 60))


def test_protocol_lingering_transactions_are_fenced_upwards_until_an_unused_id(monkeypatch: pytest.MonkeyPatch) -> None:
    """The probing rule, with a fake coordinator: the mock always answers epoch 0."""
    claimed: list[str] = []
    epochs = {"p-1-5": 2, "p-1-6": 1}

    class Coordinators:
        def __init__(self, target: Any) -> None:
            pass

        def fence(self, transactional_id: str, timeout_ms: int) -> int:
            claimed.append(transactional_id)
            return epochs.get(transactional_id, 0)

        def close(self) -> None:
            pass

    monkeypatch.setattr(exactly_once, "TransactionCoordinators", Coordinators)
    sink = load_sink(
        {
            "plugin_name": "Kafka",
            "bootstrap.servers": "127.0.0.1:1",
            "topic": "t",
            "semantics": "EXACTLY_ONCE",
            "transaction_prefix": "p",
        },
        "sink[0]",
    )
    assert exactly_once.fence_lingering(sink, "p", 1, 4) == 2
    assert claimed == ["p-1-5", "p-1-6", "p-1-7"]


def test_protocol_the_next_epochs_producer_is_initialised_ahead_and_a_wrong_guess_discarded(
    kafka_cluster: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[str] = []
    real_start = exactly_once.start_transaction
    monkeypatch.setattr(
        exactly_once, "start_transaction", lambda sink, name: started.append(name) or real_start(sink, name)
    )
    monkeypatch.setattr(exactly_once, "fence_lingering", lambda *args: started.append("fence") or 0)
    topic = new_topic(kafka_cluster)
    sink = exactly_once_sink(kafka_cluster, topic, transaction_prefix="ahead")
    infos = []
    for after in (0, 1, 3):  # checkpoint 2 never reached this subtask: the guess "ahead-0-2" is wrong
        writer = sink.create_writer("job", 0, 0)
        writer.open(after)
        writer.write(pa.record_batch({"id": np.arange(after * 10, after * 10 + 10)}))
        infos.append(writer.prepare_commit(after + 1))
        writer.close()
    sink.close()
    assert started == ["fence", "ahead-job-0-0", "ahead-job-0-1", "ahead-job-0-2", "ahead-job-0-3", "ahead-job-0-4"]
    assert [i["transactional_id"] for i in infos] == ["ahead-job-0-0", "ahead-job-0-1", "ahead-job-0-3"]
    sink.create_committer("job").commit(infos)
    assert committed_ids(kafka_cluster, topic) == [*range(0, 10), *range(10, 20), *range(30, 40)]


def test_bad_exactly_once_options() -> None:
    base = {"plugin_name": "Kafka", "bootstrap.servers": "127.0.0.1:1", "topic": "t", "semantics": "EXACTLY_ONCE"}
    with pytest.raises(ConfigError, match=r"^sink\[0\]\.kafka\.config: transactional\.id is chosen by the sink"):
        load_sink({**base, "kafka.config": {"transactional.id": "mine"}}, "sink[0]")
    with pytest.raises(ConfigError, match=r"^sink\[0\]\.transaction_prefix: expected a non-empty string"):
        load_sink({**base, "transaction_prefix": " "}, "sink[0]")


def test_the_audit_check_finds_a_claim_between_prepare_and_commit(tmp_path: Any) -> None:
    """The chaos test's audit check (claimed_while_prepared) on hand-written logs."""

    def check(*events: tuple[str, str, float]) -> tuple[list[str], int]:
        log = tmp_path / f"audit-{len(list(tmp_path.iterdir()))}.jsonl"
        log.write_text("".join(json.dumps({"event": e, "id": i, "at": t, "process": 1}) + "\n" for e, i, t in events))
        return claimed_while_prepared(log)

    assert check(("start", "p-0-1", 1.0), ("prepare", "p-0-1", 2.0), ("commit", "p-0-1", 3.0)) == ([], 1)
    hazards, _ = check(
        ("start", "p-0-1", 1.0), ("prepare", "p-0-1", 2.0), ("fence", "p-0-1", 2.5), ("commit", "p-0-1", 3.0)
    )
    assert len(hazards) == 1 and hazards[0].startswith("p-0-1: claimed at 2.500")
    # an epoch prepared, never committed, claimed again by the next run, prepared and committed: fine
    assert check(
        ("start", "p-0-1", 1.0),
        ("prepare", "p-0-1", 2.0),
        ("start", "p-0-1", 5.0),
        ("prepare", "p-0-1", 6.0),
        ("commit", "p-0-1", 7.0),
    ) == ([], 1)


def test_two_exactly_once_sinks_of_one_job_never_share_a_transaction(kafka_cluster: Any) -> None:
    """Found by the connector contract suite: the transactional ids of a job's second Kafka
    sink were the first one's, so one sink's producer fenced the other's open transaction
    and that topic got nothing. Each sink is told apart by its place in the job (as Jdbc's
    transactions are), the first one keeping the ids earlier releases gave."""
    topics = [new_topic(kafka_cluster), new_topic(kafka_cluster)]
    sinks = [exactly_once_sink(kafka_cluster, topic) for topic in topics]
    sinks[1].instance = "sink[1]"
    writers = [sink.create_writer("job-two", 0, 0) for sink in sinks]
    for writer in writers:
        writer.open(0)
    for n, writer in enumerate(writers):  # interleaved, as a group writer feeds them
        writer.write(pa.record_batch({"id": np.arange(n * 100, n * 100 + 50)}))
    infos = [writer.prepare_commit(1) for writer in writers]
    for writer in writers:
        writer.close()
    assert infos[0]["transactional_id"] == "seatunnel-ckpt-job-two-0-0"  # the only sink's, as before
    assert infos[1]["transactional_id"] != infos[0]["transactional_id"]
    for sink, info in zip(sinks, infos):
        sink.create_committer("job-two").commit([info])
    assert [committed_ids(kafka_cluster, topic) for topic in topics] == [list(range(0, 50)), list(range(100, 150))]
