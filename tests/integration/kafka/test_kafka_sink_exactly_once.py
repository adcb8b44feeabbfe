"""The Kafka sink's EXACTLY_ONCE protocol on the real broker (Apache Kafka 4.1, KRaft, the
session's ``kafka_broker``), read back by real ``isolation.level=read_committed``
consumers: a transaction per epoch, committed by another client (the driver) from the
producer id and epoch kept in the checkpoint; a checkpoint whose transaction the broker no
longer holds (fenced by a newer producer of its id) fails its commit loudly and still
commits its others; an epoch that ends unprepared is aborted; an attempt fences, upwards,
the ids earlier attempts left open; the next epoch's producer is started ahead; two sinks
of a job never share an id. That an epoch is invisible until the driver commits it, and
that a fenced driver's late commit is refused, are test_kafka_real_broker.py's; the end to
end runs under kills are there and in tests/chaos."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.connectors import load_sink
from airflow_provider_seatunnel_ckpt.connectors.kafka import exactly_once
from airflow_provider_seatunnel_ckpt.errors import ConfigError, ConnectorError
from tests.servers.kafka import claimed_while_prepared
from tests.servers.kafka_records import read_ids
from tests.support.kafka import exactly_once_sink, new_topic

pytestmark = pytest.mark.timeout(300)


def test_a_checkpoint_with_a_fenced_transaction_fails_its_commit_loudly_and_commits_the_others(
    kafka_broker: Any,
) -> None:
    topic = new_topic(kafka_broker)
    sink = exactly_once_sink(kafka_broker, topic)
    infos = []
    for subtask in (0, 1):
        writer = sink.create_writer("job", subtask, 0)
        writer.open(0)
        writer.write(pa.record_batch({"id": np.arange(subtask * 10, subtask * 10 + 10)}))
        infos.append(writer.prepare_commit(1))
    # a newer producer claims subtask 0's id: the broker aborts its transaction
    exactly_once.start_transaction(sink, infos[0]["transactional_id"]).discard()
    with pytest.raises(ConnectorError) as raised:
        sink.create_committer("job").commit(infos)
    message = str(raised.value)
    assert "committing transaction 'seatunnel-ckpt-job-0-0'" in message and "\n" not in message
    assert any(name in message for name in ("ProducerFenced", "InvalidProducerEpoch")), message
    assert read_ids(kafka_broker, topic, 3) == list(range(10, 20))  # the checkpoint's other transaction committed
    sink.close()


def test_an_epoch_that_ends_unprepared_is_aborted_and_an_empty_one_makes_none(kafka_broker: Any) -> None:
    topic = new_topic(kafka_broker)
    sink = exactly_once_sink(kafka_broker, topic)
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
    assert read_ids(kafka_broker, topic, 3) == list(range(50, 60))


def test_an_attempt_fences_upwards_the_ids_earlier_attempts_left_open(kafka_broker: Any) -> None:
    """Two attempts of subtask 1 died with their epochs after checkpoints 5 and 6 prepared,
    never committed; the next one restores checkpoint 4 and claims the ids upwards from 5
    until one never used: the broker aborts both, so they hold no read_committed reader
    back (the exact probe order for made-up histories is test_kafka_zombie.py's)."""
    topic = new_topic(kafka_broker)
    one_partition = {"partition": 0}  # so a transaction left open would hide every later record
    for after, ids in ((5, range(0, 10)), (6, range(10, 20))):
        crashed = exactly_once_sink(kafka_broker, topic, **one_partition)
        writer = crashed.create_writer("job", 1, 0)
        writer.open(after)
        writer.write(pa.record_batch({"id": np.arange(ids.start, ids.stop)}))
        writer.prepare_commit(after + 1)  # left open: the attempt died before its checkpoint completed
    assert read_ids(kafka_broker, topic, 3, "read_uncommitted") == list(range(20))
    restored = exactly_once_sink(kafka_broker, topic, **one_partition)
    writer = restored.create_writer("job", 1, 0)
    writer.open(4)
    writer.write(pa.record_batch({"id": np.arange(100, 110)}))
    restored.create_committer("job").commit([writer.prepare_commit(5)])
    restored.close()
    assert read_ids(kafka_broker, topic, 3) == list(range(100, 110))


def test_the_next_epochs_producer_is_initialised_ahead_and_a_wrong_guess_discarded(
    kafka_broker: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[str] = []
    real_start = exactly_once.start_transaction
    monkeypatch.setattr(
        exactly_once, "start_transaction", lambda sink, name: started.append(name) or real_start(sink, name)
    )
    real_fence = exactly_once.fence_lingering
    monkeypatch.setattr(exactly_once, "fence_lingering", lambda *args: started.append("fence") or real_fence(*args))
    topic = new_topic(kafka_broker)
    sink = exactly_once_sink(kafka_broker, topic, transaction_prefix="ahead")
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
    assert read_ids(kafka_broker, topic, 3) == [*range(0, 10), *range(10, 20), *range(30, 40)]


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


def test_two_exactly_once_sinks_of_one_job_never_share_a_transaction(kafka_broker: Any) -> None:
    """Found by the connector contract suite: the transactional ids of a job's second Kafka
    sink were the first one's, so one sink's producer fenced the other's open transaction
    and that topic got nothing. Each sink is told apart by its place in the job (as Jdbc's
    transactions are), the first one keeping the ids earlier releases gave."""
    topics = [new_topic(kafka_broker), new_topic(kafka_broker)]
    sinks = [exactly_once_sink(kafka_broker, topic) for topic in topics]
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
    assert [read_ids(kafka_broker, topic, 3) for topic in topics] == [list(range(0, 50)), list(range(100, 150))]


def test_the_restore_fences_every_open_transaction_of_the_sinks_earlier_runs_the_brokers_list(
    kafka_broker: Any,
) -> None:
    """The ids the probes never reach: run 1 left the epoch after checkpoint 2 open (an
    attempt whose restarted first producer failed to claim it, then the driver died) and
    run 2 restores checkpoint 6, so its probes start at 6. The restore's cleanup asks the
    brokers for their open transactions (ListTransactions) and fences the ones of this
    sink's ids from this run or earlier ones; a later run's (this driver was taken over)
    and another job's stay open. Found by the chaos job with every sink: a read_committed
    reader stalled behind such a transaction until transaction.timeout.ms."""
    topic = new_topic(kafka_broker)
    one_partition = {"partition": 0}  # so a transaction left open hides every later record

    def left_open(job_id: str, run_attempt: int, after: int, ids: range) -> Any:
        crashed = exactly_once_sink(kafka_broker, topic, **one_partition)
        crashed.run_attempt = run_attempt
        writer = crashed.create_writer(job_id, 0, 0)
        writer.open(after)
        writer.write(pa.record_batch({"id": np.arange(ids.start, ids.stop)}))
        return writer.prepare_commit(after + 1)  # the attempt died here: the transaction stays open

    assert left_open("job-listed", 1, 2, range(0, 10))["transactional_id"] == "seatunnel-ckpt-job-listed-0-2-r1"
    restored = exactly_once_sink(kafka_broker, topic, **one_partition)
    restored.run_attempt = 2
    restored.create_committer("job-listed").cleanup([])  # what a restore of checkpoint 6 runs
    writer = restored.create_writer("job-listed", 0, 0)
    writer.open(6)
    writer.write(pa.record_batch({"id": np.arange(100, 110)}))
    restored.create_committer("job-listed").commit([writer.prepare_commit(7)])
    writer.close()
    assert read_ids(kafka_broker, topic, 3) == list(range(100, 110))

    later_run = left_open("job-listed", 3, 7, range(200, 210))
    other_job = left_open("job-listed-2", 1, 0, range(300, 310))
    restored.create_committer("job-listed").cleanup([])  # run 2 ends after run 3 claimed the job
    restored.close()
    for info in (later_run, other_job):  # still open: their owners can commit them
        exactly_once_sink(kafka_broker, topic).create_committer("any").commit([info])
    assert read_ids(kafka_broker, topic, 3) == [*range(100, 110), *range(200, 210), *range(300, 310)]
