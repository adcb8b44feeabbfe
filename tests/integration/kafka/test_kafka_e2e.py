"""Kafka -> Sql -> File through ``seatunnel-ckpt run`` on the real broker (Apache Kafka 4.1,
KRaft, the session's ``kafka_broker``): a bounded run ends by itself with every record
once; an unbounded run keeps up with a live producer, stops with a savepoint on request
and continues from it."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest

from airflow_provider_seatunnel_ckpt.engine.driver import STOP_REQUEST
from tests.support.workspace import Workspace, open_storage, read_output, tally

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]

PARTITIONS = 6
SCHEMA = {"fields": {"id": "bigint", "name": "string", "score": "double"}}


def kafka_source(cluster: Any, topic: str, **options: Any) -> dict[str, Any]:
    return {
        "plugin_name": "Kafka",
        "bootstrap.servers": cluster.bootstrap_servers,
        "topic": topic,
        "consumer.group": f"e2e-{topic}",
        "start_mode": "earliest",
        "format": "json",
        "schema": SCHEMA,
        **options,
    }


def produce(cluster: Any, topic: str, ids: range) -> None:
    cluster.produce_json(topic, ({"id": i, "name": f"n{i}", "score": i / 4} for i in ids), PARTITIONS)


def test_bounded_kafka_sql_file_ends_with_every_record_once(workspace: Workspace, kafka_broker: Any) -> None:
    topic = f"bounded-{uuid.uuid4().hex[:8]}"  # unique on the shared broker
    kafka_broker.create_topic(topic, PARTITIONS)
    produce(kafka_broker, topic, range(60_000))
    config = workspace.write_config(interval=500)
    job = workspace.write_job(
        kafka_source(kafka_broker, topic, stop_mode="end_offsets_at_start", batch_size=2_500),
        transforms=[
            {
                "plugin_name": "Sql",
                "query": "select id, upper(name) as name, score * 2 as twice from events where id % 3 <> 0",
            }
        ],
    )
    result = workspace.run(job, config, "kafka-bounded")
    assert result.returncode == 0, result.explain()
    assert "job kafka-bounded finished: final checkpoint" in result.stderr, result.explain()
    assert "2 subtasks, 6 splits" in result.stderr, result.explain()
    table = read_output(f"file://{workspace.output}/")
    counted = tally(table.column("id").combine_chunks(), [i for i in range(60_000) if i % 3])
    assert counted.exactly_once, counted
    row = table.filter(table.column("id").to_numpy() == 7).to_pylist()[0]
    assert row == {"id": 7, "name": "N7", "twice": 3.5}
    # the completed checkpoints' offsets were committed to the consumer group (monitoring)
    assert committed_offsets(kafka_broker, topic) == [10_000] * PARTITIONS


def committed_offsets(cluster: Any, topic: str) -> list[int]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(cluster.config(**{"group.id": f"e2e-{topic}"}))
    try:
        found = consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10)
        return [tp.offset for tp in found]
    finally:
        consumer.close()


def test_unbounded_keeps_up_with_a_producer_and_stops_with_a_savepoint(workspace: Workspace, kafka_broker: Any) -> None:
    topic = f"live-{uuid.uuid4().hex[:8]}"
    kafka_broker.create_topic(topic, PARTITIONS)
    config = workspace.write_config(interval=500)
    # a pattern: a topic created while the job is stopped joins it at the restore
    job = workspace.write_job(kafka_source(kafka_broker, f"{topic}(-later)?", pattern=True), name="live")
    storage = open_storage(config)

    def produce_live(ids: range, seconds: float) -> threading.Thread:
        step = max(len(ids) // int(seconds * 10), 1)

        def run() -> None:
            for start in range(ids.start, ids.stop, step):
                produce(kafka_broker, topic, range(start, min(start + step, ids.stop)))
                time.sleep(0.1)

        thread = threading.Thread(target=run)
        thread.start()
        return thread

    def committed() -> Any:
        return read_output(f"file://{workspace.output}/", columns=["id"]).column("id").combine_chunks()

    def caught_up(count: int, within: float) -> float:
        started = time.monotonic()
        while time.monotonic() - started < within:
            if len(committed()) >= count:
                return time.monotonic() - started
            time.sleep(0.25)
        raise AssertionError(f"{len(committed())} of {count} records committed {within} s after the producer stopped")

    def stop_with_savepoint(driver: Any) -> None:
        storage.write_document("live", STOP_REQUEST, {"requested_ms": int(time.time() * 1000), "by": "test"})
        result = driver.wait(120)
        assert result.returncode == 0 and "job live stopped with savepoint" in result.stderr, result.explain()

    with workspace.start(job, config, "live") as driver:
        assert driver.wait_for(r"checkpoint \d+ \(checkpoint\) completed", 180), driver.stderr()
        produce_live(range(0, 60_000), seconds=6).join()  # 10,000 records/s while the job runs
        lag = caught_up(60_000, within=20)
        stop_with_savepoint(driver)
    assert tally(committed(), 60_000).exactly_once

    produce(kafka_broker, topic, range(60_000, 90_000))  # while the job is stopped
    kafka_broker.create_topic(f"{topic}-later", 2)
    kafka_broker.produce_json(
        f"{topic}-later", ({"id": i, "name": f"n{i}", "score": 0} for i in range(90_000, 95_000)), 2
    )
    with workspace.start(job, config, "live", "--restore", "latest") as driver:
        assert driver.wait_for(r"checkpoint \d+ \(checkpoint\) completed", 180), driver.stderr()
        assert f"2 new splits since the stored plan: {topic}-later-0, {topic}-later-1" in driver.stderr()
        caught_up(95_000, within=30)
        stop_with_savepoint(driver)
    counted = tally(committed(), 95_000)
    assert counted.exactly_once, counted
    assert lag < 20
