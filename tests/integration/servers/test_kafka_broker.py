"""The real Kafka broker (tests/servers/kafka_broker.py) is real and usable from Python."""

from __future__ import annotations

import uuid
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def _topic(kafka: Any, partitions: int = 1, replication: int = 1) -> str:
    name = f"smoke-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    admin.create_topics([NewTopic(name, partitions, replication)])[name].result(timeout=30)
    return name


def _read_all(kafka: Any, topic: str, isolation: str, expected_at_least: int = 0) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": kafka.bootstrap_servers,
            "group.id": f"g-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": isolation,
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    values: list[bytes] = []
    try:
        for _ in range(200):
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                if message.error().code() == KafkaError._PARTITION_EOF and len(values) >= expected_at_least:
                    break
                continue
            values.append(message.value())
    finally:
        consumer.close()
    return values


def test_produce_and_consume(kafka_broker: Any) -> None:
    topic = _topic(kafka_broker)
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap_servers, "acks": "all"})
    for i in range(20):
        producer.produce(topic, key=str(i).encode(), value=f"v{i}".encode())
    assert producer.flush(30) == 0
    assert _read_all(kafka_broker, topic, "read_uncommitted", 20) == [f"v{i}".encode() for i in range(20)]


def test_aborted_transaction_is_invisible_to_read_committed(kafka_broker: Any) -> None:
    topic = _topic(kafka_broker)
    producer = Producer(
        {"bootstrap.servers": kafka_broker.bootstrap_servers, "transactional.id": f"tx-{uuid.uuid4().hex[:8]}"}
    )
    producer.init_transactions(30)
    for batch, commit in (("a", True), ("b", False), ("c", True)):
        producer.begin_transaction()
        for i in range(3):
            producer.produce(topic, value=f"{batch}{i}".encode())
        producer.flush(30)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
    committed = [b"a0", b"a1", b"a2", b"c0", b"c1", b"c2"]
    assert _read_all(kafka_broker, topic, "read_committed", 6) == committed
    # the aborted records are in the log: a read_uncommitted consumer gets them
    uncommitted = _read_all(kafka_broker, topic, "read_uncommitted", 9)
    assert uncommitted == [b"a0", b"a1", b"a2", b"b0", b"b1", b"b2", b"c0", b"c1", b"c2"]


def test_kafka_python_client_sees_the_broker(kafka_broker: Any) -> None:
    """kafka-python (the sink's EndTxn path) talks to the same broker."""
    from kafka import KafkaConsumer, KafkaProducer

    topic = _topic(kafka_broker)
    producer = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap_servers)
    producer.send(topic, b"hello").get(timeout=30)
    producer.close()
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=kafka_broker.bootstrap_servers,
        auto_offset_reset="earliest",
        consumer_timeout_ms=30_000,
    )
    try:
        assert next(iter(consumer)).value == b"hello"
    finally:
        consumer.close()


def test_three_brokers_survive_losing_one(kafka_brokers_3: Any) -> None:
    kafka = kafka_brokers_3
    topic = _topic(kafka, replication=3)
    config = {"bootstrap.servers": kafka.bootstrap_servers, "acks": "all", "message.timeout.ms": 60_000}
    producer = Producer(config)
    producer.produce(topic, value=b"before")
    assert producer.flush(30) == 0
    kafka.kill_node(3)
    try:
        producer.produce(topic, value=b"after")
        assert producer.flush(60) == 0
        assert _read_all(kafka, topic, "read_committed", 2) == [b"before", b"after"]
    finally:
        kafka.start_node(3)
        kafka.wait_ready([3])
    metadata = AdminClient({"bootstrap.servers": kafka.bootstrap_servers}).list_topics(timeout=10)
    assert set(metadata.brokers) == {1, 2, 3}


def test_a_cluster_id_that_starts_with_a_dash_formats(tmp_path: Any) -> None:
    """A random cluster id is base64: one in 64 starts with "-", which the format tool's
    argument parser once took for an option (a CI run failed on it)."""
    from tests.servers.kafka_broker import KafkaBroker

    broker = KafkaBroker(workdir=tmp_path)
    broker.cluster_id = "-" + broker.cluster_id[1:]
    broker._format(1)

    meta = (tmp_path / "node-1" / "data" / "meta.properties").read_text()
    assert f"cluster.id={broker.cluster_id}" in meta
