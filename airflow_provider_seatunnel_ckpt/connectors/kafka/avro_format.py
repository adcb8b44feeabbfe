"""Kafka record values in Avro (``format = avro``), as SeaTunnel writes and reads them.

Each record value is one Avro binary datum: no schema registry, no container header, no
schema id. Writer and reader both derive the schema from the row type, as SeaTunnel's
``SeaTunnelRowTypeToAvroSchemaConverter`` does: a record ``SeaTunnelRecord`` of the
columns in order, no field nullable; ``tinyint``/``smallint``/``int`` as ``int``,
``bigint`` as ``long``, ``decimal(p, s)`` as ``bytes`` with the decimal logical type,
``timestamp`` as ``long`` ``local-timestamp-millis``, ``date`` as ``int`` ``date``, a nested
row as a record named by its column, maps and arrays of those. So a topic SeaTunnel wrote
reads here and the other way round, when both sides declare the same ``schema``. A null
value cannot be written (SeaTunnel's schema has no nullable field either): the job fails
naming the column. Types Avro cannot hold here (``time``) are refused when the job loads.

The codec is fastavro's (the ``avro`` extra).
"""

from __future__ import annotations

import io
from typing import Any

import pyarrow as pa

from ...errors import ConfigError, ConnectorError

RECORD = "SeaTunnelRecord"


def avro_schema(schema: pa.Schema, key: str = "schema") -> dict[str, Any]:
    """SeaTunnel's Avro schema of a row type."""
    return {"type": "record", "name": RECORD, "fields": [_field(f.name, f.type, key) for f in schema]}


def _field(name: str, kind: pa.DataType, key: str) -> dict[str, Any]:
    return {"name": name, "type": _type(name, kind, key)}


def _type(name: str, kind: pa.DataType, key: str) -> Any:
    simple = {
        pa.string(): "string",
        pa.large_string(): "string",
        pa.binary(): "bytes",
        pa.large_binary(): "bytes",
        pa.int8(): "int",
        pa.int16(): "int",
        pa.int32(): "int",
        pa.int64(): "long",
        pa.float32(): "float",
        pa.float64(): "double",
        pa.bool_(): "boolean",
        pa.null(): "null",
    }
    if kind in simple:
        return simple[kind]
    if pa.types.is_decimal(kind):
        return {"type": "bytes", "logicalType": "decimal", "precision": kind.precision, "scale": kind.scale}
    if pa.types.is_timestamp(kind):
        return {"type": "long", "logicalType": "local-timestamp-millis"}
    if pa.types.is_date(kind):
        return {"type": "int", "logicalType": "date"}
    if pa.types.is_map(kind):
        return {"type": "map", "values": _type(name, kind.item_type, key)}
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return {"type": "array", "items": _type(name, kind.value_type, key)}
    if pa.types.is_struct(kind):
        return {"type": "record", "name": name, "fields": [_field(f.name, f.type, key) for f in kind]}
    raise ConfigError(key, f"column {name!r} is {kind}, which SeaTunnel's avro format cannot hold")


def _to_avro(value: Any, kind: pa.DataType) -> Any:
    """An Arrow row value as fastavro writes it (maps come as (key, value) pairs)."""
    if value is None:
        return None
    if pa.types.is_map(kind):
        return {k: _to_avro(v, kind.item_type) for k, v in value}
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return [_to_avro(v, kind.value_type) for v in value]
    if pa.types.is_struct(kind):
        return {f.name: _to_avro(value.get(f.name), f.type) for f in kind}
    return value


def _from_avro(value: Any, kind: pa.DataType) -> Any:
    """A value fastavro read, as Arrow builds ``kind`` from Python values."""
    if value is None:
        return None
    if pa.types.is_map(kind):
        return [(k, _from_avro(v, kind.item_type)) for k, v in value.items()]
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return [_from_avro(v, kind.value_type) for v in value]
    if pa.types.is_struct(kind):
        return {f.name: _from_avro(value.get(f.name), f.type) for f in kind}
    return value


class AvroCodec:
    """Encodes rows of ``schema`` to Avro datums and decodes them back."""

    def __init__(self, schema: pa.Schema, key: str = "schema"):
        from fastavro import parse_schema

        self.schema = schema
        self.parsed = parse_schema(avro_schema(schema, key))

    def encode(self, batch: pa.RecordBatch) -> list[bytes]:
        from fastavro import schemaless_writer

        values = []
        for row in batch.to_pylist():
            buffer = io.BytesIO()
            record = {f.name: _to_avro(row[f.name], f.type) for f in self.schema}
            try:
                schemaless_writer(buffer, self.parsed, record)
            except (ValueError, TypeError) as err:
                empty = [name for name, value in record.items() if value is None]
                why = (
                    f"column {empty[0]!r} is null, and SeaTunnel's avro schema has no nullable field" if empty else err
                )
                raise ConnectorError(f"Kafka sink: a row cannot be written as avro: {why}") from None
            values.append(buffer.getvalue())
        return values

    def decode_one(self, value: bytes) -> dict[str, Any]:
        """One record's row; ``ValueError`` when it is no datum of the schema."""
        from fastavro import schemaless_reader

        stream = io.BytesIO(value)
        try:
            record = schemaless_reader(stream, self.parsed, None)
        except (ValueError, TypeError, EOFError, IndexError, UnicodeDecodeError, KeyError) as err:
            raise ValueError(f"not an avro datum of the schema: {err}") from None
        if stream.tell() != len(value):
            raise ValueError(f"{len(value) - stream.tell()} bytes left after the avro datum")
        return {f.name: _from_avro(record.get(f.name), f.type) for f in self.schema}
