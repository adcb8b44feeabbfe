"""Records for a test, produced into the mock cluster or the real broker alike (anything
with ``config(**extra)``, librdkafka's settings to reach it, gets ``ProducesRecords``),
and read back by real consumers of either isolation level (``consume``, ``read_ids``)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any


class ProducesRecords:
    """``produce`` and ``produce_json`` through a confluent-kafka producer, every record
    acknowledged (``acks=all``) before they return."""

    def config(self, **extra: Any) -> dict[str, Any]:
        raise NotImplementedError

    def produce(
        self,
        topic: str,
        values: Iterable[bytes],
        keys: Iterable[bytes] | None = None,
        partition_of: Any = None,
        timestamp_ms: int | None = None,
    ) -> int:
        """Produce ``values`` (optionally with ``keys``; ``partition_of(index)`` picks a
        partition); returns how many, after every one was acknowledged."""
        from confluent_kafka import Producer

        producer = Producer(
            self.config(
                **{
                    "linger.ms": 5,
                    "batch.num.messages": 10_000,
                    "queue.buffering.max.messages": 1_000_000,
                    "acks": "all",
                }
            )
        )
        failures: list[Any] = []

        def delivered(err: Any, _msg: Any) -> None:
            if err is not None:
                failures.append(err)

        count = 0
        key_list = list(keys) if keys is not None else None
        for index, value in enumerate(values):
            extra: dict[str, Any] = {}
            if key_list is not None:
                extra["key"] = key_list[index]
            if partition_of is not None:
                extra["partition"] = partition_of(index)
            if timestamp_ms is not None:
                extra["timestamp"] = timestamp_ms
            while True:
                try:
                    producer.produce(topic, value, on_delivery=delivered, **extra)
                    break
                except BufferError:
                    producer.poll(0.05)
            count += 1
            if count % 10_000 == 0:
                producer.poll(0)
        producer.flush(60)
        if failures:
            raise RuntimeError(f"{len(failures)} records not acknowledged, e.g. {failures[0]}")
        return count

    def produce_json(self, topic: str, rows: Iterable[dict[str, Any]], partitions: int, **kwargs: Any) -> int:
        """Each row as a JSON value, partition ``id % partitions``."""
        rows = list(rows)
        return self.produce(
            topic,
            (json.dumps(r, separators=(",", ":")).encode() for r in rows),
            partition_of=lambda i: rows[i]["id"] % partitions,
            **kwargs,
        )


def consume(kafka: Any, topic: str, partitions: int, isolation: str = "read_committed") -> list[Any]:
    """Every message a consumer of ``isolation`` reads from offset 0 of each partition to
    its end (for read_committed, the last stable offset: an open transaction hides the
    rest, as it does from any reader), in the order it read them."""
    import uuid

    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer(
        kafka.config(
            **{
                "group.id": f"count-{uuid.uuid4().hex}",
                "isolation.level": isolation,
                "enable.partition.eof": True,
                "enable.auto.commit": False,
            }
        )
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    messages: list[Any] = []
    at_end: set[int] = set()
    try:
        while len(at_end) < partitions:
            for message in consumer.consume(10_000, timeout=1):
                error = message.error()
                if error is None:
                    messages.append(message)
                elif error.code() == KafkaError._PARTITION_EOF:
                    at_end.add(message.partition())
                else:
                    raise AssertionError(f"consuming {topic}: {error}")
    finally:
        consumer.close()
    return messages


def read_ids(kafka: Any, topic: str, partitions: int, isolation: str = "read_committed") -> list[int]:
    """The ``id`` of every JSON record ``consume`` reads, sorted: exactly-once checks count them."""
    return sorted(json.loads(m.value())["id"] for m in consume(kafka, topic, partitions, isolation))
