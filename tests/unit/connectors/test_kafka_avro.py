"""SeaTunnel's avro format on Kafka (connectors/kafka/avro_format.py): the schema it derives
from a row type, the bytes of a datum, and what it refuses. SeaTunnel's own avro jobs:
tests/integration/kafka/test_seatunnel_change_formats.py."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.connectors import load_sink, load_source
from airflow_provider_seatunnel_ckpt.connectors.kafka.avro_format import AvroCodec, avro_schema
from airflow_provider_seatunnel_ckpt.connectors.kafka.records import DecodeError, RecordDecoder
from airflow_provider_seatunnel_ckpt.connectors.seatunnel_types import parse_schema
from airflow_provider_seatunnel_ckpt.errors import ConfigError, ConnectorError

KAFKA = {"plugin_name": "Kafka", "bootstrap.servers": "127.0.0.1:9", "topic": "t", "format": "avro"}


class Message:
    def __init__(self, value: bytes | None):
        self._value = value

    def value(self) -> bytes | None:
        return self._value


def test_the_schema_is_seatunnels() -> None:
    schema = parse_schema(
        {
            "fields": {
                "id": "bigint",
                "small": "tinyint",
                "price": "decimal(10, 2)",
                "at": "timestamp",
                "day": "date",
                "tags": "map<string, int>",
                "nested": {"n": "array<string>"},
            }
        }
    )
    assert avro_schema(schema) == {
        "type": "record",
        "name": "SeaTunnelRecord",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "small", "type": "int"},
            {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
            {"name": "at", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
            {"name": "day", "type": {"type": "int", "logicalType": "date"}},
            {"name": "tags", "type": {"type": "map", "values": "int"}},
            {
                "name": "nested",
                "type": {
                    "type": "record",
                    "name": "nested",
                    "fields": [{"name": "n", "type": {"type": "array", "items": "string"}}],
                },
            },
        ],
    }
    with pytest.raises(ConfigError, match="column 't' is time64"):
        avro_schema(parse_schema({"fields": {"t": "time"}}))


def test_a_datum_is_avros_binary_encoding_and_reads_back() -> None:
    codec = AvroCodec(parse_schema({"fields": {"id": "bigint", "s": "string"}}))
    # the Avro spec: long 1 is the zig-zag varint 0x02, "ab" its length 2 (0x04) and bytes
    assert codec.encode(pa.record_batch({"id": pa.array([1, -1], pa.int64()), "s": ["ab", ""]})) == [
        b"\x02\x04ab",
        b"\x01\x00",
    ]
    schema = parse_schema(
        {
            "fields": {
                "m": "map<string, smallint>",
                "d": "decimal(2, 1)",
                "at": "timestamp",
                "day": "date",
                "r": {"x": "int"},
            }
        }
    )
    row = {
        "m": [("k", 1)],
        "d": decimal.Decimal("1.1"),
        "at": dt.datetime(2024, 1, 2, 3, 4, 5, 6000),
        "day": dt.date(2024, 1, 2),
        "r": {"x": 7},
    }
    codec = AvroCodec(schema)
    [value] = codec.encode(pa.RecordBatch.from_pylist([row], schema=schema))
    assert codec.decode_one(value) == row


def test_a_null_cannot_be_written_and_a_bad_record_names_its_position() -> None:
    codec = AvroCodec(parse_schema({"fields": {"id": "bigint", "s": "string"}}))
    with pytest.raises(ConnectorError, match="column 's' is null"):
        codec.encode(pa.record_batch({"id": pa.array([1], pa.int64()), "s": pa.array([None], pa.string())}))
    decoder = RecordDecoder("avro", parse_schema({"fields": {"id": "bigint", "s": "string"}}), ",", skip_errors=False)
    with pytest.raises(DecodeError) as err:
        decoder.decode([Message(b"\x02\x04ab"), Message(b"\x02\x40")])
    assert err.value.index == 1 and "avro" in err.value.problem
    with pytest.raises(DecodeError, match="bytes left"):
        decoder.decode([Message(b"\x02\x04abX")])
    skipping = RecordDecoder("avro", parse_schema({"fields": {"id": "bigint"}}), ",", skip_errors=True)
    decoded = skipping.decode([Message(b"\x02"), Message(None), Message(b"\x04")])
    assert decoded.batch.column("id").to_pylist() == [1, 2] and decoded.skipped == [1]


def test_the_connectors_take_avro_with_a_schema() -> None:
    assert load_source({**KAFKA, "schema": {"fields": {"id": "int"}}}).format == "avro"
    assert load_sink(KAFKA).format == "avro"
    with pytest.raises(ConfigError, match=r"schema.*is required for format avro"):
        load_source(KAFKA)
