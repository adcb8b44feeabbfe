"""The Kafka sink (at least once) on the real broker (Apache Kafka 4.1, KRaft, the session's
``kafka_broker``): values encoded in bulk, keys by partition_key_fields, every record
acknowledged at the barrier, and a run through ``seatunnel-ckpt run`` with a driver kill
that delivers every id at least once."""

from __future__ import annotations

import json
import time
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.connectors import load_sink
from airflow_provider_seatunnel_ckpt.errors import ConfigError
from tests.servers.kafka_records import consume, read_ids
from tests.support.kafka import new_topic
from tests.support.workspace import Workspace

pytestmark = pytest.mark.timeout(300)


def sink_of(kafka: Any, topic: str, **options: Any) -> Any:
    """The Kafka sink writing to ``topic`` of ``kafka`` (AT_LEAST_ONCE unless ``options`` say)."""
    return load_sink(
        {"plugin_name": "Kafka", "bootstrap.servers": kafka.bootstrap_servers, "topic": topic, **options}, "sink[0]"
    )


def test_rows_become_json_records_keyed_by_the_key_fields(kafka_broker: Any) -> None:
    topic = new_topic(kafka_broker)
    sink = sink_of(kafka_broker, topic, partition_key_fields=["user"], semantics="AT_LEAST_ONCE")
    sink.preflight()
    writer = sink.create_writer("job", 0, 0)
    for start in (0, 500):
        ids = np.arange(start, start + 500)
        writer.write(pa.record_batch({"id": ids, "user": [f"u{i % 7}" for i in ids], "score": ids / 2}))
    assert writer.prepare_commit(1) is None
    messages = consume(kafka_broker, topic, 3)
    rows = [json.loads(m.value()) for m in messages]
    assert sorted(r["id"] for r in rows) == list(range(1000))
    assert rows[0] == {"id": rows[0]["id"], "user": f"u{rows[0]['id'] % 7}", "score": rows[0]["id"] / 2}
    partitions_of_key: dict[bytes, set[int]] = {}
    for message in messages:
        partitions_of_key.setdefault(message.key(), set()).add(message.partition())
    assert set(partitions_of_key) == {json.dumps({"user": f"u{i}"}, separators=(",", ":")).encode() for i in range(7)}
    assert all(len(p) == 1 for p in partitions_of_key.values())
    sink.close()


def test_text_format_and_a_fixed_partition(kafka_broker: Any) -> None:
    topic = new_topic(kafka_broker, 2)
    sink = load_sink(
        {
            "plugin_name": "Kafka",
            "bootstrap.servers": kafka_broker.bootstrap_servers,
            "topic": topic,
            "format": "text",
            "field_delimiter": "|",
            "partition": 1,
        }
    )
    writer = sink.create_writer("job", 0, 0)
    writer.write(pa.record_batch({"id": [1, 2], "name": ["a", None]}))
    writer.prepare_commit(1)
    assert [(m.partition(), m.value()) for m in consume(kafka_broker, topic, 2)] == [(1, b"1|a"), (1, b"2|")]
    sink.close()


def test_a_full_producer_queue_loses_and_repeats_no_record(kafka_broker: Any) -> None:
    """librdkafka's queue holds 100 records here: writing 5,000 keyed ones fills it again
    and again, and each refused record is produced again once deliveries made room."""
    topic = new_topic(kafka_broker)
    sink = sink_of(
        kafka_broker, topic, partition_key_fields=["id"], **{"kafka.config": {"queue.buffering.max.messages": 100}}
    )
    writer = sink.create_writer("job", 0, 0)
    writer.write(pa.record_batch({"id": np.arange(5_000)}))
    writer.prepare_commit(1)
    messages = consume(kafka_broker, topic, 3)
    assert sorted(json.loads(m.value())["id"] for m in messages) == list(range(5_000))
    assert all(json.loads(m.key()) == json.loads(m.value()) for m in messages)
    sink.close()


def test_bad_sink_options(kafka_broker: Any) -> None:
    base = {"plugin_name": "Kafka", "bootstrap.servers": kafka_broker.bootstrap_servers, "topic": "missing"}
    with pytest.raises(ConfigError, match=r"^sink\[0\]\.topic: no topic 'missing'"):
        load_sink(base, "sink[0]").preflight()
    sink = load_sink({**base, "partition_key_fields": ["nope"]}, "sink[0]")
    with pytest.raises(ConfigError, match=r"^sink\[0\]\.partition_key_fields: no column 'nope'"):
        sink.create_writer("job", 0, 0).write(pa.record_batch({"id": [1]}))


def sequence_to_kafka_through_a_driver_kill(
    workspace: Workspace, cluster: Any, topic: str, rows: int, semantics: str
) -> str:
    """Run Sequence -> Kafka, SIGKILL the driver inside an epoch after a few checkpoints,
    restore the latest; returns both runs' stderr, for a failing assertion to show."""
    config = workspace.write_config(interval=500)
    job = workspace.write_job(
        {"plugin_name": "Sequence", "rows": rows, "rows_per_second": 20_000, "batch_size": 2_500},
        {
            "plugin_name": "Kafka",
            "bootstrap.servers": cluster.bootstrap_servers,
            "topic": topic,
            "semantics": semantics,
        },
    )
    name = f"to-kafka-{semantics.lower()}"
    with workspace.start(job, config, name) as driver:
        assert driver.wait_for(r"checkpoint [3-9] \(checkpoint\) completed", 180), driver.stderr()
        time.sleep(0.25)  # half an interval: the epoch after the checkpoint is being written
        driver.kill()
        killed = driver.stderr()
    rerun = workspace.run(job, config, name, "--restore", "latest")
    assert rerun.returncode == 0, rerun.explain()
    return f"killed run:\n{killed}\nrestored run:\n{rerun.stderr}"


@pytest.mark.slow
def test_sequence_to_kafka_at_least_once_through_a_driver_kill(workspace: Workspace, kafka_broker: Any) -> None:
    topic = new_topic(kafka_broker, 4)
    rows = 100_000  # 5 s of input at 20,000 a second: checkpoints 3 to 9 fall inside it
    sequence_to_kafka_through_a_driver_kill(workspace, kafka_broker, topic, rows, "AT_LEAST_ONCE")
    ids = np.array(read_ids(kafka_broker, topic, 4))
    assert np.array_equal(np.unique(ids), np.arange(rows)), "some ids never reached Kafka"
    assert len(ids) >= rows  # the epochs after the restored checkpoint were written again
