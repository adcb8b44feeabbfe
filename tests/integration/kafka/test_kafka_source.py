"""The Kafka source on the real broker (Apache Kafka 4.1, KRaft, the session's
``kafka_broker``), without Spark: offsets resolved once per start mode, partitions read to their
bounded end, a reader resumed from its position, record formats, and bad input."""

from __future__ import annotations

import itertools
import json
import time
import uuid
from typing import Any

import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.connectors import load_source
from airflow_provider_seatunnel_ckpt.connectors.api import ReaderContext
from airflow_provider_seatunnel_ckpt.errors import ConfigError, ConnectorError

pytestmark = pytest.mark.timeout(120)

_names = itertools.count()
SCHEMA = {"fields": {"id": "bigint", "name": "string", "score": "double"}}


def unique(kind: str) -> str:
    """A topic name no other suite of the session uses on the shared broker."""
    return f"{kind}-{next(_names)}-{uuid.uuid4().hex[:8]}"


def topic_with(cluster: Any, rows: int, partitions: int = 3) -> str:
    name = unique("src")
    cluster.create_topic(name, partitions)
    cluster.produce_json(name, ({"id": i, "name": f"n{i}", "score": i / 2} for i in range(rows)), partitions)
    return name


def source(cluster: Any, topic: str, **options: Any) -> Any:
    entry = {
        "plugin_name": "Kafka",
        "bootstrap.servers": cluster.bootstrap_servers,
        "topic": topic,
        "format": "json",
        "schema": SCHEMA,
        "stop_mode": "end_offsets_at_start",
        "start_mode": "earliest",
        **options,
    }
    src = load_source(entry, "source[0]")
    src.preflight()
    return src


def read_all(src: Any, splits: list, positions: dict | None = None, context: ReaderContext | None = None) -> dict:
    """split id -> (rows read, final position)"""
    out = {}
    for split in splits:
        reader = src.create_reader(split, (positions or {}).get(split.split_id), context or ReaderContext(0, 1, 1000))
        batches = []
        while (batch := reader.read_batch()) is not None:
            batches.append(batch)
        out[split.split_id] = (pa.Table.from_batches(batches, schema=src.produced_schema()), reader.position())
        reader.close()
    return out


def ids_of(result: dict) -> list[int]:
    return sorted(i for table, _ in result.values() for i in table.column("id").to_pylist())


def test_bounded_read_of_every_partition(kafka_broker: Any) -> None:
    topic = topic_with(kafka_broker, 3000)
    src = source(kafka_broker, topic)
    splits = src.splits(2)
    assert [s.split_id for s in splits] == [f"{topic}-0", f"{topic}-1", f"{topic}-2"]
    assert all(s.spec["start"] == 0 and s.spec["stop"] == 1000 for s in splits)
    result = read_all(src, splits)
    assert ids_of(result) == list(range(3000))
    first = result[f"{topic}-0"][0]
    assert first.schema == src.produced_schema() and first.column("name")[0].as_py() == "n0"
    assert {pos["offset"] for _, pos in result.values()} == {1000}


def test_records_produced_after_the_start_are_not_read_in_bounded_mode(kafka_broker: Any) -> None:
    topic = topic_with(kafka_broker, 300)
    src = source(kafka_broker, topic)
    splits = src.splits(1)  # end offsets fixed here, at the job's first start
    kafka_broker.produce_json(topic, ({"id": i} for i in range(300, 600)), 3)
    assert ids_of(read_all(src, splits)) == list(range(300))


def test_a_reader_resumes_at_its_position(kafka_broker: Any) -> None:
    topic = topic_with(kafka_broker, 900)
    src = source(kafka_broker, topic, batch_size=100)
    split = src.splits(1)[0]
    reader = src.create_reader(split, None, ReaderContext(0, 1, 65_536))
    first = reader.read_batch()
    while first.num_rows == 0:
        first = reader.read_batch()
    position = reader.position()
    reader.close()
    assert first.num_rows <= 100 and position == {"offset": first.num_rows, "skipped": 0}
    rest = read_all(src, [split], {split.split_id: position})
    seen = first.column("id").to_pylist() + rest[split.split_id][0].column("id").to_pylist()
    assert sorted(seen) == list(range(0, 900, 3)) and len(seen) == 300


@pytest.mark.parametrize("mode", ["earliest", "latest", "group_offsets", "specific_offsets"])
def test_start_modes(kafka_broker: Any, mode: str) -> None:
    topic = topic_with(kafka_broker, 600, partitions=2)
    options: dict[str, Any] = {"start_mode": mode, "stop_mode": "unbounded"}
    if mode == "specific_offsets":
        options["start_mode.offsets"] = {f"{topic}-1": 250}
    if mode == "group_offsets":
        from confluent_kafka import Consumer, TopicPartition

        options["consumer.group"] = group = f"g-{topic}"
        consumer = Consumer(kafka_broker.config(**{"group.id": group}))
        consumer.commit(offsets=[TopicPartition(topic, 0, 120)], asynchronous=False)
        consumer.close()
    starts = {s.split_id: s.spec["start"] for s in source(kafka_broker, topic, **options).splits(1)}
    expected = {"earliest": [0, 0], "latest": [300, 300], "group_offsets": [120, 0], "specific_offsets": [0, 250]}[mode]
    assert starts == {f"{topic}-0": expected[0], f"{topic}-1": expected[1]}


def test_unbounded_reader_returns_empty_batches_then_new_records(kafka_broker: Any) -> None:
    topic = topic_with(kafka_broker, 0, partitions=1)
    src = source(kafka_broker, topic, stop_mode="unbounded")
    reader = src.create_reader(src.splits(1)[0], None, ReaderContext(0, 1, 1000))
    assert reader.read_batch().num_rows == 0  # no record within the short wait: an empty batch
    kafka_broker.produce_json(topic, ({"id": i} for i in range(50)), 1)
    got: list[int] = []
    deadline = time.monotonic() + 20
    while len(got) < 50 and time.monotonic() < deadline:
        got += reader.read_batch().column("id").to_pylist()
    reader.close()
    assert got == list(range(50))


def test_a_pattern_reads_every_matching_topic(kafka_broker: Any) -> None:
    a, b = topic_with(kafka_broker, 30, 1), topic_with(kafka_broker, 30, 2)
    src = source(kafka_broker, f"({a}|{b})", pattern=True)
    assert [s.split_id for s in src.splits(1)] == [f"{a}-0", f"{b}-0", f"{b}-1"]


def test_malformed_json_fails_naming_the_record_or_is_skipped_and_counted(kafka_broker: Any) -> None:
    name = unique("bad")
    kafka_broker.create_topic(name, 1)
    values = [json.dumps({"id": i}).encode() for i in range(10)]
    values[4] = b"{not json"
    values[7] = b'{"id": "seven"}'
    kafka_broker.produce(name, values, partition_of=lambda i: 0)
    failing = source(kafka_broker, name)
    with pytest.raises(ConfigError) as err:
        read_all(failing, failing.splits(1))
    assert err.value.key == "source[0].format"
    assert (
        f"record 4 of {name}-0 is not valid json" in err.value.problem
        and "format_error_handle_way" in err.value.problem
    )
    skipping = source(kafka_broker, name, format_error_handle_way="skip")
    result = read_all(skipping, skipping.splits(1))
    assert ids_of(result) == [0, 1, 2, 3, 5, 6, 8, 9]
    assert result[f"{name}-0"][1] == {"offset": 10, "skipped": 2}


def test_text_and_raw_formats(kafka_broker: Any) -> None:
    name = unique("text")
    kafka_broker.create_topic(name, 1)
    kafka_broker.produce(name, [b"1|ann", b"2|bob"], keys=[b"k1", b"k2"], partition_of=lambda i: 0)
    text = source(
        kafka_broker, name, format="text", field_delimiter="|", schema={"fields": {"id": "int", "name": "string"}}
    )
    assert [t.to_pylist() for t, _ in read_all(text, text.splits(1)).values()] == [
        [{"id": 1, "name": "ann"}, {"id": 2, "name": "bob"}]
    ]
    plain = source(kafka_broker, name, format="text", schema=None)
    assert [t.column("content").to_pylist() for t, _ in read_all(plain, plain.splits(1)).values()] == [
        ["1|ann", "2|bob"]
    ]
    raw = source(kafka_broker, name, format="raw", schema=None)
    ((table, _),) = read_all(raw, raw.splits(1)).values()
    assert table.column("key").to_pylist() == [b"k1", b"k2"] and table.column("offset").to_pylist() == [0, 1]
    assert table.column("topic").to_pylist() == [name, name] and table.column("value")[1].as_py() == b"2|bob"


def test_bad_options_name_the_key() -> None:
    base = {"plugin_name": "Kafka", "bootstrap.servers": "127.0.0.1:1", "topic": "t", "schema": SCHEMA}
    cases = [
        ({"start_mode": "newest"}, "source[0].start_mode", "is not one of"),
        ({"start_mode": "specific_offsets"}, "source[0].start_mode.offsets", "is required"),
        (
            {"start_mode": "specific_offsets", "start_mode.offsets": {"t-x": 1}},
            "source[0].start_mode.offsets.t-x",
            "expected",
        ),
        ({"schema": None}, "source[0].schema", "is required for format json"),
        ({"schema": {"fields": {"a": "integer"}}}, "source[0].schema.fields.a", "unknown type 'integer'"),
        ({"topic": ["a", "b"], "pattern": True}, "source[0].topic", "one regular expression"),
        ({"topic": "(", "pattern": "true"}, "source[0].topic", "not a regular expression"),
        ({"format_error_handle_way": "ignore"}, "source[0].format_error_handle_way", "is not one of"),
        ({"kafka.config": ["x"]}, "source[0].kafka.config", "expected a mapping"),
        ({"poll.timeout": 5}, "source[0].poll.timeout", "unknown option for Kafka"),
        ({"partition-discovery.interval-millis": -5}, "source[0].partition-discovery.interval-millis", ">= -1"),
        ({"partition-discovery.interval-millis": "often"}, "source[0].partition-discovery.interval-millis", "integer"),
    ]
    for extra, key, problem in cases:
        with pytest.raises(ConfigError) as err:
            load_source({**base, **extra}, "source[0]")
        assert err.value.key == key and problem in err.value.problem, (extra, err.value)


def test_an_unknown_topic_and_an_unreachable_broker(kafka_broker: Any) -> None:
    with pytest.raises(ConfigError, match=r"^source\[0\]\.topic: no topic 'nope' at Kafka at 127\.0\.0\.1"):
        source(kafka_broker, "nope")
    started = time.monotonic()
    with pytest.raises(ConnectorError) as err:
        load_source(
            {
                "plugin_name": "Kafka",
                "bootstrap.servers": "127.0.0.1:9",
                "topic": "t",
                "schema": SCHEMA,
                "connection_check_timeout_sec": 2,
                "kafka.config": {"sasl.password": "s3cret"},
            }
        ).preflight()
    assert time.monotonic() - started < 10
    assert "Kafka at 127.0.0.1:9: no answer within 2 s" in str(err.value) and "s3cret" not in str(err.value)


def test_a_restore_discovers_partitions_created_since_the_plan(kafka_broker: Any) -> None:
    first = topic_with(kafka_broker, 30, 2)
    pattern = f"{first}(-later)?"
    src = source(kafka_broker, pattern, pattern=True, stop_mode="unbounded")
    known = src.splits(1)
    assert src.discover_splits(known) == []
    kafka_broker.create_topic(f"{first}-later", 3)
    found = src.discover_splits(known)
    assert [(s.split_id, s.spec["start"], s.spec["stop"]) for s in found] == [
        (f"{first}-later-{p}", 0, None) for p in range(3)
    ]
    bounded = source(kafka_broker, pattern, pattern=True)
    assert bounded.discover_splits(known) == []  # a bounded job keeps what it started with


def test_live_discovery_is_on_only_with_an_interval_in_unbounded_mode() -> None:
    base = {"plugin_name": "Kafka", "bootstrap.servers": "127.0.0.1:1", "topic": "t", "schema": SCHEMA}
    interval = "partition-discovery.interval-millis"
    assert load_source(base).discovery_interval_s is None  # SeaTunnel's default: -1, off
    assert load_source({**base, interval: 0}).discovery_interval_s is None
    assert load_source({**base, interval: 2500}).discovery_interval_s == 2.5
    assert load_source({**base, interval: 2500, "stop_mode": "end_offsets_at_start"}).discovery_interval_s is None


def test_a_topic_created_a_moment_ago_is_planned_and_discovered_not_refused(kafka_broker: Any) -> None:
    """Found when this suite moved to the real broker: a topic is in the cluster's metadata
    as soon as the controller created it, but its partitions' leaders answer offset
    requests a moment later ("Not leader for partition"). The plan of a job started right
    after the topic was made, and a restore's discovery of a topic created meanwhile,
    failed the run on that answer; they wait for the leaders (within
    connection_check_timeout_sec). Eight fresh topics each way: the window is short (without the wait, 2 runs in 3 failed)."""
    for _ in range(8):
        fresh = unique("fresh")
        kafka_broker.create_topic(fresh, 3)
        assert [s.spec["start"] for s in source(kafka_broker, fresh).splits(1)] == [0, 0, 0]
    first = topic_with(kafka_broker, 3, 1)
    src = source(kafka_broker, f"{first}(-later-.*)?", pattern=True, stop_mode="unbounded")
    known = src.splits(1)
    for n in range(8):
        kafka_broker.create_topic(f"{first}-later-{n}", 3)
        found = src.discover_splits(known)
        assert [s.split_id for s in found] == [f"{first}-later-{n}-{p}" for p in range(3)]
        known += found


def test_a_bounded_read_of_a_transactional_topic_skips_aborted_records_and_ends(kafka_broker: Any) -> None:
    """The source reads as ``read_committed`` (librdkafka's default; the mock ignored it):
    an aborted transaction's records are never read, and the bounded end, taken at the
    start past the transactions' markers, is still reached (no record sits at the offset
    just before it: a COMMIT marker does)."""
    from confluent_kafka import Producer

    name = unique("txn")
    kafka_broker.create_topic(name, 1)
    producer = Producer(kafka_broker.config(**{"transactional.id": f"writer-{name}"}))
    producer.init_transactions(30)
    for ids, commit in ((range(0, 10), True), (range(10, 20), False), (range(20, 30), True)):
        producer.begin_transaction()
        for i in ids:
            producer.produce(name, json.dumps({"id": i}).encode(), partition=0)
        producer.flush(30)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
    src = source(kafka_broker, name)
    (split,) = src.splits(1)
    assert split.spec["stop"] == 33  # 30 records and 3 markers
    result = read_all(src, [split])
    assert ids_of(result) == [*range(0, 10), *range(20, 30)]
    assert result[split.split_id][1] == {"offset": 33, "skipped": 0}


def reader_consumers(monkeypatch: Any) -> list[dict[str, Any]]:
    """The settings of every consumer made for reading partitions from now on (the ones
    with end-of-partition events; plan, discovery and commits make others)."""
    from airflow_provider_seatunnel_ckpt.connectors.kafka.client import KafkaTarget

    made: list[dict[str, Any]] = []
    real = KafkaTarget.consumer

    def counting(self: KafkaTarget, **settings: Any) -> Any:
        if settings.get("enable.partition.eof"):
            made.append(settings)
        return real(self, **settings)

    monkeypatch.setattr(KafkaTarget, "consumer", counting)
    return made


def read_together(src: Any, splits: list, context: ReaderContext, rounds: int | None = None) -> dict:
    """As the engine reads a source whose splits are read together: a reader per split,
    then a batch from each in turn; a reader that ends is closed. ``rounds``: stop after
    that many (the open readers stay open). split id -> [ids], position"""
    readers = {split.split_id: src.create_reader(split, None, context) for split in splits}
    ids: dict[str, list[int]] = {split_id: [] for split_id in readers}
    positions: dict[str, Any] = {}
    done = 0
    while readers and (rounds is None or done < rounds):
        for split_id, reader in list(readers.items()):
            batch = reader.read_batch()
            if batch is None:
                positions[split_id] = reader.position()
                reader.close()
                del readers[split_id]
            else:
                ids[split_id] += batch.column("id").to_pylist()
        done += 1
    for split_id, reader in readers.items():
        positions[split_id] = reader.position()
    return {"ids": ids, "positions": positions, "open": readers}


def test_one_consumer_reads_every_partition_of_a_subtask(kafka_broker: Any, monkeypatch: Any) -> None:
    """Issue #51: a subtask's partitions are read through one consumer (before: one per
    partition, 120 here), each to its own bounded end, every record once."""
    topic = topic_with(kafka_broker, 2400, partitions=120)
    src = source(kafka_broker, topic)
    made = reader_consumers(monkeypatch)
    result = read_together(src, src.splits(1), ReaderContext(0, 1, 1000))
    assert len(made) == 1
    assert sorted(i for ids in result["ids"].values() for i in ids) == list(range(2400))
    assert all(result["positions"][f"{topic}-{p}"] == {"offset": 20, "skipped": 0} for p in range(120))
    assert all(sorted(result["ids"][f"{topic}-{p}"]) == list(range(p, 2400, 120)) for p in range(120))
    src.close()


def test_a_partition_with_a_full_batch_waiting_is_paused_and_resumed_without_loss(
    kafka_broker: Any, monkeypatch: Any
) -> None:
    """One partition read while the others' records pile up: theirs are paused at a full
    batch and resumed when their reader takes it; each record is read once, in order."""
    topic = topic_with(kafka_broker, 3000, partitions=3)
    src = source(kafka_broker, topic, batch_size=50, format="raw", schema=None)
    made = reader_consumers(monkeypatch)
    splits = src.splits(1)
    readers = [src.create_reader(split, None, ReaderContext(0, 1, 65_536)) for split in splits]
    offsets: list[list[int]] = [[], [], []]
    while (batch := readers[0].read_batch()) is not None:  # the others wait meanwhile
        offsets[0] += batch.column("offset").to_pylist()
    shared = readers[1].consumer
    assert shared is readers[2].consumer and shared is not None
    assert len(shared._paused) == 2  # both hold a full batch: no longer fetched
    for index in (1, 2):
        while (batch := readers[index].read_batch()) is not None:
            assert batch.num_rows <= 50
            offsets[index] += batch.column("offset").to_pylist()
    assert len(made) == 1
    assert offsets == [list(range(1000))] * 3  # each record once, in order
    for reader in readers:
        reader.close()
    src.close()


def test_discovered_partitions_join_the_running_consumer(kafka_broker: Any, monkeypatch: Any) -> None:
    first = topic_with(kafka_broker, 40, 4)
    src = source(kafka_broker, f"{first}(-later)?", pattern=True, stop_mode="unbounded")
    made = reader_consumers(monkeypatch)
    known = src.splits(1)
    context = ReaderContext(0, 1, 1000)
    readers = {split.split_id: src.create_reader(split, None, context) for split in known}
    got: dict[str, list[int]] = {split_id: [] for split_id in readers}

    def read_until(count: int) -> None:
        deadline = time.monotonic() + 30
        while sum(map(len, got.values())) < count and time.monotonic() < deadline:
            for split_id, reader in readers.items():
                got[split_id] += reader.read_batch().column("id").to_pylist()

    read_until(40)
    kafka_broker.create_topic(f"{first}-later", 3)
    found = src.discover_splits(known)
    assert [s.split_id for s in found] == [f"{first}-later-{p}" for p in range(3)]
    readers.update({split.split_id: src.create_reader(split, None, context) for split in found})
    got.update({split.split_id: [] for split in found})
    kafka_broker.produce_json(f"{first}-later", ({"id": i} for i in range(100, 130)), 3)
    kafka_broker.produce_json(first, ({"id": i} for i in range(200, 240)), 4)
    read_until(140)
    assert len(made) == 1  # the new partitions were assigned to the running consumer
    assert sorted(i for ids in got.values() for i in ids) == [*range(40), *range(100, 130), *range(200, 240)]
    assert sorted(readers[f"{first}-later-0"].consumer.partitions) == sorted(
        [(first, p) for p in range(4)] + [(f"{first}-later", p) for p in range(3)]
    )
    for reader in readers.values():
        reader.close()
    src.close()
