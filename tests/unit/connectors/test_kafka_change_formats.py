"""SeaTunnel's change-data formats on Kafka (connectors/kafka/change_formats.py): the rules
of each reader, Debezium's value encodings, what the sink writes, and the options around
them. SeaTunnel's own records and expected results: tests/integration/kafka/test_seatunnel_change_formats.py."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.connectors import load_sink, load_source
from airflow_provider_seatunnel_ckpt.connectors.api import KINDS, ROW_KIND
from airflow_provider_seatunnel_ckpt.connectors.kafka.records import DecodeError, RecordDecoder
from airflow_provider_seatunnel_ckpt.connectors.seatunnel_types import parse_schema
from airflow_provider_seatunnel_ckpt.engine.routing import bind_schemas, load_sinks, load_sources, load_transforms
from airflow_provider_seatunnel_ckpt.errors import ConfigError
from airflow_provider_seatunnel_ckpt.jobfile.job import load_job

SCHEMA = parse_schema({"fields": {"id": "int", "name": "string", "weight": "string"}})
KAFKA = {"plugin_name": "Kafka", "bootstrap.servers": "127.0.0.1:9", "topic": "t"}


class Message:
    def __init__(self, value: Any):
        self._value = value if isinstance(value, bytes) or value is None else json.dumps(value).encode()

    def value(self) -> bytes | None:
        return self._value


def changes(fmt: str, *records: Any, schema: pa.Schema = SCHEMA, **kwargs: Any) -> list[tuple[str, dict]]:
    batch = RecordDecoder(fmt, schema, ",", skip_errors=False, **kwargs).decode([Message(r) for r in records]).batch
    return [(KINDS[row.pop(ROW_KIND)], row) for row in batch.to_pylist()]


def test_canal_updates_take_unchanged_fields_from_the_new_row_and_ddl_gives_nothing() -> None:
    assert changes(
        "canal_json",
        {"type": "CREATE", "data": None, "sql": "CREATE TABLE products (...)"},
        {"type": "INSERT", "data": [{"id": "1", "name": "a", "weight": "1.5"}, {"id": "2", "name": "b"}]},
        {"type": "UPDATE", "data": [{"id": "1", "name": "a2", "weight": "2.5"}], "old": [{"weight": "1.5"}]},
        {"type": "DELETE", "data": [{"id": "2", "name": "b", "weight": None}]},
    ) == [
        ("INSERT", {"id": 1, "name": "a", "weight": "1.5"}),
        ("INSERT", {"id": 2, "name": "b", "weight": None}),
        ("UPDATE_BEFORE", {"id": 1, "name": "a2", "weight": "1.5"}),
        ("UPDATE_AFTER", {"id": 1, "name": "a2", "weight": "2.5"}),
        ("DELETE", {"id": 2, "name": "b", "weight": None}),
    ]


def test_maxwell_and_ogg_rows() -> None:
    assert changes(
        "maxwell_json",
        {"type": "update", "data": {"id": 7, "name": "n", "weight": "2"}, "old": {"weight": "1", "name": None}},
    ) == [
        ("UPDATE_BEFORE", {"id": 7, "name": None, "weight": "1"}),
        ("UPDATE_AFTER", {"id": 7, "name": "n", "weight": "2"}),
    ]
    assert changes(
        "ogg_json",
        {"op_type": "I", "after": {"id": 1, "weight": 3.140000104904175}},
        {"op_type": "D", "before": {"id": 1}},
    ) == [
        ("INSERT", {"id": 1, "name": None, "weight": "3.140000104904175"}),
        ("DELETE", {"id": 1, "name": None, "weight": None}),
    ]


@pytest.mark.parametrize(
    "fmt, record, words",
    [
        ("canal_json", {"type": "TRUNCATE", "data": []}, "unknown type 'TRUNCATE'"),
        ("canal_json", {"type": "INSERT", "data": None}, "a INSERT record without data"),
        ("canal_json", {"type": "UPDATE", "data": [{"id": 1}], "old": []}, "an old entry per data row"),
        ("ogg_json", {"op_type": "U", "after": {"id": 1}}, "REPLICA IDENTITY to FULL"),
        ("debezium_json", {"before": None, "after": {"id": 1}, "op": "c"}, "debezium_record_include_schema: false"),
        ("maxwell_json", {"type": "insert", "data": {"id": "x"}}, "id"),
        ("maxwell_json", [1, 2], "expected a JSON object"),
        ("ogg_json", b"{not json", "not JSON"),
    ],
)
def test_a_record_a_format_cannot_read_is_an_error_naming_why_and_where(fmt: str, record: Any, words: str) -> None:
    readable = {
        "canal_json": {"type": "INSERT", "data": [{"id": 1}]},
        "ogg_json": {"op_type": "I", "after": {"id": 1}},
        "maxwell_json": {"type": "insert", "data": {"id": 1}},
        "debezium_json": {"payload": {"op": "d", "before": {}}},
    }
    with pytest.raises(DecodeError) as err:
        changes(fmt, readable[fmt], record)
    assert err.value.index == 1 and words in err.value.problem


def test_a_tombstone_gives_no_row() -> None:
    """Debezium writes one after every delete; SeaTunnel's readers pass over it."""
    assert changes("debezium_json", None, {"payload": {"op": "d", "before": {"id": 4}}}) == [
        ("DELETE", {"id": 4, "name": None, "weight": None})
    ]


def test_debezium_values_as_its_json_converter_writes_them() -> None:
    schema = parse_schema(
        {
            "fields": {
                "d": "date",
                "t": "time",
                "ts": "timestamp",
                "ts2": "timestamp",
                "dec": "decimal(10, 2)",
                "b": "bytes",
                "small": "tinyint",
                "bits": "tinyint",
                "flag": "boolean",
            }
        }
    )
    after = {
        "d": 19109,
        "t": 52200000000,
        "ts": 1651069800000,
        "ts2": "2023-04-27T03:08:40Z",
        "dec": base64.b64encode((12345).to_bytes(3, "big", signed=True)).decode(),
        "b": base64.b64encode(b"hi").decode(),
        "small": 300,
        "bits": "VVVVVVVVVVU=",
        "flag": True,
    }
    [(kind, row)] = changes(
        "debezium_json", {"before": None, "after": after, "op": "r"}, schema=schema, debezium_schema_included=False
    )
    assert kind == "INSERT" and row == {
        "d": dt.date(2022, 4, 27),
        "t": dt.time(14, 30),
        "ts": dt.datetime(2022, 4, 27, 14, 30),
        "ts2": dt.datetime(2023, 4, 27, 3, 8, 40),
        "dec": decimal.Decimal("123.45"),
        "b": b"hi",
        "small": 44,  # Java's (byte) 300
        "bits": 0,  # Jackson's intValue() of a text, as SeaTunnel reads Debezium's bit(64)
        "flag": True,
    }


def test_kafka_connect_records_are_inserts_without_a_kind_column() -> None:
    decoder = RecordDecoder("compatible_kafka_connect_json", SCHEMA, ",", skip_errors=False)
    batch = decoder.decode([Message({"schema": {}, "payload": [{"id": 1}, {"id": 2, "name": "x"}]})]).batch
    assert decoder.change_rows == () and batch.schema == SCHEMA and batch.column("id").to_pylist() == [1, 2]


def test_the_source_skips_what_seatunnel_ignores_by_default_and_says_what_it_reads() -> None:
    schema = {"fields": {"id": "int"}}
    canal = load_source({**KAFKA, "format": "canal_json", "schema": schema})
    assert canal.decoder.skip_errors and canal.change_rows == ("UPDATE_BEFORE", "UPDATE_AFTER", "DELETE")
    assert canal.produced_schema().names == ["id", ROW_KIND]
    strict = load_source({**KAFKA, "format": "canal_json", "schema": schema, "format_error_handle_way": "fail"})
    assert not strict.decoder.skip_errors
    connect = load_source(
        {**KAFKA, "format": "COMPATIBLE_KAFKA_CONNECT_JSON", "schema": schema, "value_converter_schema_enabled": False}
    )
    assert not connect.decoder.skip_errors and connect.change_rows == ()
    with pytest.raises(ConfigError, match=r"schema.*is required for format maxwell_json"):
        load_source({**KAFKA, "format": "maxwell_json"})


@pytest.mark.parametrize(
    "env, options, stop",
    [
        ('job.mode = "BATCH"', "", "end_offsets_at_start"),
        ('job.mode = "STREAMING"', "", "unbounded"),
        ("parallelism = 1", "", "unbounded"),  # no job.mode: this project's default, as before
        ('job.mode = "BATCH"', "stop_mode = unbounded", "unbounded"),
    ],
)
def test_a_batch_job_reads_kafka_to_the_end_offsets_of_its_start(
    tmp_path: Path, env: str, options: str, stop: str
) -> None:
    path = tmp_path / "job.conf"
    path.write_text(
        f'env {{ {env} }}\nsource {{ Kafka {{ bootstrap.servers = "127.0.0.1:9", topic = t, format = text\n'
        f" {options} }} }}\n"
        "sink { Console {} }\n"
    )
    [source] = load_sources(load_job(path).sources)
    assert source.stop_mode == stop


def encode(fmt: str, rows: list[dict], kinds: list[int] | None) -> list[dict]:
    sink = load_sink({**KAFKA, "format": fmt})
    batch = pa.RecordBatch.from_pylist(rows, schema=pa.schema([("id", pa.int32()), ("name", pa.string())]))
    if kinds is not None:
        batch = batch.append_column(ROW_KIND, pa.array(kinds, pa.int8()))
    return [json.loads(v) for v in sink.encode(batch)[0]]


def test_the_sink_writes_every_change_as_an_insert_or_a_delete() -> None:
    rows = [{"id": 1, "name": "a"}, {"id": 1, "name": "a"}, {"id": 1, "name": "b"}, {"id": 2, "name": None}]
    kinds = [0, 1, 2, 3]
    assert encode("debezium_json", rows, kinds) == [
        {"before": None, "after": rows[0], "op": "c"},
        {"before": rows[1], "after": None, "op": "d"},
        {"before": None, "after": rows[2], "op": "c"},
        {"before": rows[3], "after": None, "op": "d"},
    ]
    for fmt in ("canal_json", "maxwell_json", "ogg_json"):
        assert [v["type"] for v in encode(fmt, rows, kinds)] == ["INSERT", "DELETE", "INSERT", "DELETE"]
        assert encode(fmt, rows[:1], None) == [{"data": rows[0], "type": "INSERT"}]


def _bound(text: str, tmp_path: Path) -> None:
    path = tmp_path / "job.conf"
    path.write_text(text)
    job = load_job(path)
    sources = load_sources(job.sources)
    sinks = load_sinks(job, sources)
    for sink, schema in zip(sinks, bind_schemas(job.graph, sources, load_transforms(job.transforms), sinks)):
        sink.accepts(schema)


SOURCE = (
    'source { Kafka { bootstrap.servers = "127.0.0.1:9", topic = t, format = canal_json, '
    "schema = { fields { id = int } } } }\n"
)


def test_change_rows_need_a_jdbc_sinks_primary_keys_and_a_change_format_on_kafka(tmp_path: Path) -> None:
    jdbc = 'Jdbc { url = "jdbc:postgresql://127.0.0.1:9/db", user = u, password = p, table = t'
    with pytest.raises(ConfigError, match=r"^sink\[0\]\.primary_keys: is required to apply change rows"):
        _bound(SOURCE + f"sink {{ {jdbc} }} }}\n", tmp_path)
    _bound(SOURCE + f"sink {{ {jdbc}, primary_keys = [id] }} }}\n", tmp_path)
    with pytest.raises(ConfigError, match=r"sink\[0\].*change rows"):
        _bound(SOURCE + 'sink { Kafka { bootstrap.servers = "127.0.0.1:9", topic = o, format = json } }\n', tmp_path)
    _bound(
        SOURCE + 'sink { Kafka { bootstrap.servers = "127.0.0.1:9", topic = o, format = debezium_json } }\n', tmp_path
    )


def test_a_table_list_is_one_table_per_topic_with_its_own_format() -> None:
    source = load_source(
        {
            **{k: v for k, v in KAFKA.items() if k != "topic"},
            "consumer.group": "g",
            "table_list": [
                {"topic": "^ogg.*", "pattern": "true", "format": "ogg_json", "schema": {"fields": {"id": "int"}}},
                {"topic": "plain", "format": "json", "schema": {"fields": {"id": "int", "name": "string"}}},
            ],
        }
    )
    assert source.table_names == ["^ogg.*", "plain"]
    ogg, plain = source.sources
    assert (ogg.format, ogg.pattern, ogg.group) == ("ogg_json", True, "g") and plain.format == "json"
    assert source.change_rows == ("UPDATE_BEFORE", "UPDATE_AFTER", "DELETE")
    with pytest.raises(ConfigError, match=r"^source\[0\]\.table_list\[1\]\.topic: is required"):
        load_source({**KAFKA, "table_list": [{"topic": "a", "format": "text"}, {"format": "text"}]})
    with pytest.raises(ConfigError, match=r"^source\[0\]\.table_list\[0\]\.format: 'protobuf' is not one of"):
        load_source({**KAFKA, "table_list": [{"topic": "a", "format": "protobuf"}]})
