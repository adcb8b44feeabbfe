"""The Kafka sink's EXACTLY_ONCE promise on a real broker (Apache Kafka 4.1, KRaft, the
session's ``kafka_broker``), read back by real ``isolation.level=read_committed``
consumers that count every id. librdkafka's mock cluster (still under tests/chaos) serves
every record whatever the isolation level and never aborts a transaction when a new
producer claims its id: what these tests check is the broker's own answer."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.engine.routing import preflight as routing_preflight
from airflow_provider_seatunnel_ckpt.errors import ConfigError, ConnectorError
from tests.servers.kafka_records import read_ids
from tests.support.kafka import exactly_once_sink, new_topic
from tests.support.workspace import Workspace

pytestmark = pytest.mark.timeout(300)


def prepared_epoch(broker: Any, topic: str, subtask: int, ids: range) -> dict[str, Any]:
    """A subtask's epoch written and prepared (its transaction left open), its writer gone."""
    writer = exactly_once_sink(broker, topic).create_writer("job", subtask, 0)
    writer.open(0)
    writer.write(pa.record_batch({"id": np.arange(ids.start, ids.stop)}))
    info = writer.prepare_commit(1)
    writer.close()  # a prepared transaction outlives its writer
    return info


def test_an_epoch_stays_invisible_to_read_committed_until_the_driver_commits_it(kafka_broker: Any) -> None:
    topic = new_topic(kafka_broker)
    info = prepared_epoch(kafka_broker, topic, 0, range(1000))
    assert read_ids(kafka_broker, topic, 3, "read_uncommitted") == list(range(1000))  # in the log
    assert read_ids(kafka_broker, topic, 3) == []  # and hidden by the open transaction
    committer = exactly_once_sink(kafka_broker, topic).create_committer("job")  # another client: the driver
    committer.commit([info])
    assert read_ids(kafka_broker, topic, 3) == list(range(1000))
    committer.commit([info])  # a restore commits the restored checkpoint's transactions again
    assert read_ids(kafka_broker, topic, 3) == list(range(1000))
    committer.cleanup([info])


def test_a_fenced_drivers_transaction_is_aborted_and_its_late_commit_refused_by_the_broker(kafka_broker: Any) -> None:
    """A new attempt's writer claims the transactional id (InitProducerId): the broker bumps
    the producer epoch and aborts the open transaction; the old driver's commit, naming the
    old epoch, is refused, and no record of the aborted epoch ever becomes visible."""
    topic = new_topic(kafka_broker)
    zombie = prepared_epoch(kafka_broker, topic, 0, range(0, 100))
    claimant = exactly_once_sink(kafka_broker, topic).create_writer("job", 0, 0)
    claimant.open(0)  # the same subtask and epoch: the same transactional id
    claimant.write(pa.record_batch({"id": np.arange(100, 150)}))
    claimed = claimant.prepare_commit(1)
    claimant.close()
    assert claimed["transactional_id"] == zombie["transactional_id"]
    assert claimed["producer_id"] == zombie["producer_id"]
    assert claimed["producer_epoch"] > zombie["producer_epoch"], (zombie, claimed)

    committer = exactly_once_sink(kafka_broker, topic).create_committer("job")
    with pytest.raises(ConnectorError) as refused:
        committer.commit([zombie])
    message = str(refused.value)
    assert zombie["transactional_id"] in message and "\n" not in message
    assert any(name in message for name in ("ProducerFenced", "InvalidProducerEpoch")), message
    assert read_ids(kafka_broker, topic, 3) == []  # the zombie's 100 records were aborted

    committer.commit([claimed])
    assert read_ids(kafka_broker, topic, 3) == list(range(100, 150))


def test_the_drivers_check_on_a_new_cluster_waits_for_its_transaction_coordinator() -> None:
    """A new cluster creates its transaction log on the first FindCoordinator and answers
    CoordinatorNotAvailable until it is ready: the driver's check (before Spark starts)
    asks again instead of refusing the job. Its own broker: the session's is warm."""
    from tests.servers.kafka_broker import KafkaBroker

    with KafkaBroker(nodes=1) as fresh:
        topic = new_topic(fresh)
        sink = exactly_once_sink(fresh, topic)
        sink.preflight()
        sink.close()


@pytest.fixture
def own_broker() -> Iterator[Any]:
    """A broker of the test's own, for a test that restarts it (the session's is shared)."""
    from tests.servers.kafka_broker import KafkaBroker

    with KafkaBroker(nodes=1) as broker:
        yield broker


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_every_id_once_for_read_committed_through_four_driver_kills_and_a_broker_restart(
    workspace: Workspace, own_broker: Any
) -> None:
    """Sequence -> Kafka EXACTLY_ONCE, 4 partitions. Run 1: the broker is SIGKILLed and
    restarted inside an epoch (producers, the transaction coordinator and the driver's
    commits wait for it), then the driver is killed inside an epoch after two more
    checkpoints; runs 2 to 4 are each killed inside an epoch after a checkpoint they
    completed; run 5 finishes. A read_committed consumer then counts every id."""
    # 60 s of rows: the source reads on while the broker restarts, which took 30 s at a load
    # of 15 (at 10,000 rows/s the job then ran out of rows before the driver could be killed)
    broker, rows = own_broker, 240_000
    topic = new_topic(broker, 4)
    config = workspace.write_config(interval=500, tolerable_failure=10)
    job = workspace.write_job(
        {"plugin_name": "Sequence", "rows": rows, "rows_per_second": 4_000, "batch_size": 2_000},
        {
            "plugin_name": "Kafka",
            "bootstrap.servers": broker.bootstrap_servers,
            "topic": topic,
            "semantics": "EXACTLY_ONCE",
        },
    )
    name, logs, kills = "kafka-kills", [], []
    with workspace.start(job, config, name) as driver:
        assert driver.wait_for(r"checkpoint 2 \(checkpoint\) completed", 180), driver.stderr()
        time.sleep(0.25)  # inside the next epoch
        before = len(driver.stderr())
        broker.kill_node(1)
        broker.start_node(1)
        broker.wait_ready()
        assert driver.wait_for_completed(driver.completed() + 2, 180), driver.stderr()
        time.sleep(0.25)
        driver.kill()
        kills.append("run 1, after a broker restart")
        logs.append(driver.stderr())
        # the run's producers and commits met the restart (librdkafka's or the committer's words)
        assert re.search(r"Disconnected|retrying", logs[0][before:]), logs[0]
    for run in range(2, 5):
        with workspace.start(job, config, name, "--restore", "latest") as driver:
            assert driver.wait_for(r"checkpoint \d+ \(checkpoint\) completed", 180), driver.stderr()
            time.sleep(0.25)
            assert driver.poll() is None, driver.stderr()
            driver.kill()
            kills.append(f"run {run}")
            logs.append(driver.stderr())
    result = workspace.run(job, config, name, "--restore", "latest")
    assert result.returncode == 0, result.explain()
    assert len(kills) == 4, kills
    ids = np.array(read_ids(broker, topic, 4))
    assert np.array_equal(ids, np.arange(rows)), (
        f"{len(ids)} ids read by read_committed, {len(np.unique(ids))} distinct, of {rows}\n"
        + "\n".join(logs + [result.stderr])
    )


def test_a_transaction_timeout_above_the_brokers_ceiling_is_refused_by_the_drivers_check(kafka_broker: Any) -> None:
    """The broker refuses a producer whose transaction.timeout.ms exceeds its
    transaction.max.timeout.ms (900000 by default): on an executor, after Spark started.
    The driver's check initialises a transactional id with the sink's timeout, so the
    broker's own answer comes first, in one line naming the option."""
    topic = new_topic(kafka_broker)
    sink = exactly_once_sink(kafka_broker, topic, **{"kafka.config": {"transaction.timeout.ms": 3_600_000}})
    try:
        with pytest.raises(ConfigError) as refused:
            routing_preflight(sink)
    finally:
        sink.close()
    assert refused.value.key == "sink[0].kafka.config.transaction.timeout.ms"
    assert "3600000 ms is more than the brokers" in str(refused.value) and "\n" not in str(refused.value)
    fine = exactly_once_sink(kafka_broker, topic, **{"kafka.config": {"transaction.timeout.ms": 900_000}})
    try:
        routing_preflight(fine)  # the ceiling itself is accepted
    finally:
        fine.close()


@pytest.mark.slow
def test_a_transaction_timeout_shorter_than_a_checkpoint_refuses_the_job_before_any_record(
    workspace: Workspace, kafka_broker: Any
) -> None:
    """An epoch's transaction stays open for up to checkpoint.interval + checkpoint.timeout;
    a broker that aborts it sooner would lose its records. The run stops before Spark
    starts, in one line, and nothing reaches the topic."""
    topic = new_topic(kafka_broker)
    config = workspace.write_config(interval=2_000, timeout=30_000)
    job = workspace.write_job(
        {"plugin_name": "Sequence", "rows": 1_000},
        {
            "plugin_name": "Kafka",
            "bootstrap.servers": kafka_broker.bootstrap_servers,
            "topic": topic,
            "semantics": "EXACTLY_ONCE",
            "kafka.config": {"transaction.timeout.ms": "20000"},
        },
    )
    result = workspace.run(job, config, "short-transactions")
    assert result.returncode == 2, result.explain()
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines == [
        "error: sink[0].kafka.config.transaction.timeout.ms: 20000 ms is shorter than an epoch's transaction "
        "stays open with EXACTLY_ONCE: checkpoint.interval (2000 ms) + checkpoint.timeout (30000 ms) = 32000 ms, "
        "after which the broker would abort it before the driver commits it; raise it (the default is 900000) "
        "or lower checkpoint.interval / checkpoint.timeout"
    ], result.explain()
    assert read_ids(kafka_broker, topic, 3, "read_uncommitted") == []
    assert not (workspace.checkpoints / "short-transactions").exists()


def test_an_epoch_without_records_is_not_prepared_before_the_attempts_lingering_ids_are_fenced(
    kafka_broker: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the four-kills test under load: a run whose subtasks wrote nothing before
    their checkpoint completed (a slow start) acknowledged it before fencing what the run
    before left open after the restored checkpoint. The next restore starts above those
    ids and never fences them: they held every read_committed reader back for
    transaction.timeout.ms (132,000 ids unseen). An empty epoch now waits for the fence."""
    from airflow_provider_seatunnel_ckpt.connectors.kafka import exactly_once

    topic = new_topic(kafka_broker)
    left_open = exactly_once_sink(kafka_broker, topic)
    left_open.run_attempt = 1
    leftover = left_open.create_writer("job", 0, 0)
    leftover.open(5)  # run 1's epoch after checkpoint 5, killed before its barrier
    leftover.write(pa.record_batch({"id": np.arange(0, 100)}))
    leftover.prepare_commit(6)
    fenced: list[str] = []
    real_fence = exactly_once.fence_lingering

    def slow_fence(*args: Any) -> int:
        time.sleep(1.0)  # a broker answering ConcurrentTransactions for a while
        count = real_fence(*args)
        fenced.append("done")
        return count

    monkeypatch.setattr(exactly_once, "fence_lingering", slow_fence)
    run_2 = exactly_once_sink(kafka_broker, topic)
    run_2.run_attempt = 2
    writer = run_2.create_writer("job", 0, 0)
    writer.open(5)  # run 2 restores checkpoint 5
    assert writer.prepare_commit(7) is None  # no record in this epoch
    assert fenced == ["done"], "the empty epoch was acknowledged before the lingering ids were fenced"
    writer.close()
    later = run_2.create_writer("job", 0, 0)
    later.open(7)
    later.write(pa.record_batch({"id": np.arange(100, 110)}))
    run_2.create_committer("job").commit([later.prepare_commit(8)])
    later.close()
    assert read_ids(kafka_broker, topic, 3) == list(range(100, 110))  # nothing holds the readers back
