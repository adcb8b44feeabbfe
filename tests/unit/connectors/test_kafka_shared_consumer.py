"""The one consumer of a subtask's Kafka partitions (connectors/kafka/shared_consumer.py),
on a stand-in for librdkafka's consumer: assignment, waits, pausing. The real broker's
cases are in tests/integration/kafka/test_kafka_source.py."""

from __future__ import annotations

from collections import deque
from typing import Any

import pytest

from airflow_provider_seatunnel_ckpt.connectors import load_source
from airflow_provider_seatunnel_ckpt.connectors.kafka.shared_consumer import SharedConsumer
from airflow_provider_seatunnel_ckpt.errors import ConnectorError

pytest.importorskip("confluent_kafka")


class Record:
    def __init__(self, topic: str | None, partition: int | None, offset: int, error: Any = None):
        self._where, self._offset, self._error = (topic, partition), offset, error

    def topic(self) -> str | None:
        return self._where[0]

    def partition(self) -> int | None:
        return self._where[1]

    def offset(self) -> int:
        return self._offset

    def error(self) -> Any:
        return self._error


class FakeConsumer:
    """Hands out what ``queue`` holds; records every call that matters."""

    def __init__(self) -> None:
        self.queue: deque[Record] = deque()
        self.calls: list[tuple[str, Any]] = []

    def incremental_assign(self, partitions: list[Any]) -> None:
        self.calls.append(("assign", [(tp.topic, tp.partition, tp.offset) for tp in partitions]))

    def incremental_unassign(self, partitions: list[Any]) -> None:
        self.calls.append(("unassign", [(tp.topic, tp.partition) for tp in partitions]))

    def pause(self, partitions: list[Any]) -> None:
        self.calls.append(("pause", sorted((tp.topic, tp.partition) for tp in partitions)))

    def resume(self, partitions: list[Any]) -> None:
        self.calls.append(("resume", sorted((tp.topic, tp.partition) for tp in partitions)))

    def consume(self, num_messages: int, timeout: float) -> list[Record]:
        self.calls.append(("consume", timeout))
        return [self.queue.popleft() for _ in range(min(num_messages, len(self.queue)))]

    def close(self) -> None:
        self.calls.append(("close", None))


def shared() -> tuple[SharedConsumer, list[FakeConsumer]]:
    made: list[FakeConsumer] = []

    def make() -> FakeConsumer:
        made.append(FakeConsumer())
        return made[-1]

    return SharedConsumer(make, lambda: "Kafka at test", 0.05), made


def test_partitions_added_together_are_assigned_in_one_call_at_the_first_read() -> None:
    pool, made = shared()
    for partition in range(500):
        pool.add(("t", partition), 10 * partition, 100)
    (consumer,) = made
    assert consumer.calls == []
    pool.take(("t", 0), 100)
    assert consumer.calls[0] == ("assign", [("t", p, 10 * p) for p in range(500)])
    assert [name for name, _ in consumer.calls].count("assign") == 1
    pool.add(("u", 0), 7, 100)  # discovered later: joins the same consumer
    pool.take(("u", 0), 100)
    assert ("assign", [("u", 0, 7)]) in consumer.calls and len(made) == 1


def test_an_idle_round_waits_once_not_once_per_partition() -> None:
    pool, made = shared()
    for partition in range(100):
        pool.add(("t", partition), 0, 100)
    for _ in range(3):  # three rounds of every reader finding nothing
        for partition in range(100):
            assert pool.take(("t", partition), 100) == []
    waits = [timeout for name, timeout in made[0].calls if name == "consume" and timeout > 0]
    assert len(waits) == 2  # the second and the third round each waited once


def test_records_go_to_their_partition_in_order_and_a_full_one_is_paused_until_taken() -> None:
    pool, made = shared()
    pool.add(("t", 0), 0, 3)
    pool.add(("t", 1), 0, 3)
    consumer = made[0]
    consumer.queue.extend([Record("t", 1, o) for o in range(4)] + [Record("t", 0, 0)])
    assert pool.take(("t", 0), 3) == []  # one fetch of 3 brought only partition 1's
    assert consumer.calls[-1] == ("pause", [("t", 1)])  # a batch of 3 waiting: fetch no more
    assert [r.offset() for r in pool.take(("t", 0), 3)] == [0]
    assert [r.offset() for r in pool.take(("t", 1), 3)] == [0, 1, 2]
    assert consumer.calls[-1] == ("resume", [("t", 1)])
    assert [r.offset() for r in pool.take(("t", 1), 3)] == [3]


def test_a_removed_partition_is_unassigned_and_its_late_records_dropped() -> None:
    pool, made = shared()
    pool.add(("t", 0), 0, 10)
    pool.add(("t", 1), 0, 10)
    pool.take(("t", 0), 10)
    pool.remove(("t", 1))
    consumer = made[0]
    assert consumer.calls[-1] == ("unassign", [("t", 1)])
    consumer.queue.extend([Record("t", 1, 0), Record("t", 0, 0)])
    assert [r.offset() for r in pool.take(("t", 0), 10)] == [0]
    assert pool.partitions == [("t", 0)]
    pool.add(("t", 2), 0, 10)
    pool.remove(("t", 2))  # never assigned: nothing to unassign
    assert ("unassign", [("t", 2)]) not in consumer.calls
    pool.close()
    assert consumer.calls[-1] == ("close", None) and pool.consumer is None


def test_an_error_of_no_partition_fails_the_read_and_a_partition_is_read_once() -> None:
    pool, made = shared()
    pool.add(("t", 0), 0, 10)
    with pytest.raises(ValueError, match="read twice"):
        pool.add(("t", 0), 5, 10)
    made[0].queue.append(Record(None, -1, -1, error="all brokers down"))
    with pytest.raises(ConnectorError, match="Kafka at test: reading failed: all brokers down"):
        pool.take(("t", 0), 10)


def test_the_tables_of_a_table_list_share_one_consumer_but_patterns_keep_their_own() -> None:
    source = load_source(
        {
            "plugin_name": "Kafka",
            "bootstrap.servers": "127.0.0.1:9",
            "table_list": [
                {"topic": "a", "format": "text"},
                {"topic": "b", "format": "text"},
                {"topic": "c.*", "pattern": True, "format": "text"},
                {"topic": "d", "format": "text", "consumer.group": "other"},
            ],
        }
    )
    a, b, c, d = source.sources
    assert b.shared_consumer() is a.shared_consumer()
    assert c.shared_consumer() is not a.shared_consumer()
    assert d.shared_consumer() is not a.shared_consumer()
    source.close()
