"""Kafka record values -> Arrow batches, in bulk (``format``: ``json``, ``text``, ``raw``).

``json``: the values of a poll are joined into one newline-delimited buffer and parsed by
Arrow's JSON reader in one call, typed by ``schema``: no Python object per record.
``text``: ``field_delimiter``-separated values, parsed by Arrow's CSV reader. ``raw``:
the records' keys, values and coordinates as they come. ``avro``: :mod:`.avro_format`;
the change formats: :mod:`.change_formats`. A record the format cannot decode is failed
or skipped by ``format_error_handle_way``.

The formats' columns and error handling: docs/kafka.md, "Options".
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.json as pajson

from ...errors import ConfigError
from ..seatunnel_types import convert_value, has_map
from .avro_format import AvroCodec
from .change_formats import SOURCE_FORMATS, ChangeDecoder

FORMATS = ("json", "text", "raw", "avro", *SOURCE_FORMATS)
ERROR_WAYS = ("fail", "skip")

RAW_SCHEMA = pa.schema(
    [
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("timestamp", pa.int64()),
    ]
)
TEXT_SCHEMA = pa.schema([pa.field("content", pa.string())])


class DecodeError(Exception):
    """A record the format cannot decode; ``index`` is its position in the poll."""

    def __init__(self, index: int, problem: str):
        super().__init__(problem)
        self.index = index
        self.problem = problem


@dataclass
class Decoded:
    batch: pa.RecordBatch
    #: positions (in the poll) of the records dropped by format_error_handle_way: skip
    skipped: list[int]


class RecordDecoder:
    """Decodes the records of one poll; ``schema`` is what every batch has."""

    #: the change kinds its batches may carry (``Source.change_rows``)
    change_rows: tuple[str, ...] = ()

    def __init__(
        self,
        fmt: str,
        schema: pa.Schema | None,
        delimiter: str,
        skip_errors: bool,
        debezium_schema_included: bool = True,
    ):
        self.format = fmt
        self.skip_errors = skip_errors
        self.delimiter = delimiter
        #: the formats read record by record (a record may hold several rows, or none)
        self._each: ChangeDecoder | _AvroRecords | None = None
        if fmt in (*SOURCE_FORMATS, "avro"):
            if schema is None:
                raise ConfigError("schema", f"is required for format {fmt} (the columns and their types)")
            self._each = _AvroRecords(schema) if fmt == "avro" else ChangeDecoder(fmt, schema, debezium_schema_included)
            self.schema = self._each.schema
            self.change_rows = self._each.change_rows
        elif fmt == "raw":
            self.schema = RAW_SCHEMA
        elif fmt == "json":
            if schema is None:
                raise ConfigError("schema", "is required for format json (the columns and their types)")
            self.schema = schema
        else:
            self.schema = schema or TEXT_SCHEMA
        # Arrow's JSON reader has no map conversion: those columns are decoded in Python
        self._map_fields = [f for f in self.schema if fmt == "json" and has_map(f.type)]

    def decode(self, messages: Sequence[Any]) -> Decoded:
        if self.format == "raw":
            return Decoded(_raw(messages), [])
        if self._each is not None:
            return self._decode_each(messages)
        values = [m.value() for m in messages]
        try:
            return Decoded(self._parse(values), [])
        except DecodeError:
            pass
        # Something in the poll is malformed: find it record by record (rare path).
        good, skipped = [], []
        for index, value in enumerate(values):
            try:
                self._parse([value])
            except DecodeError as err:
                if not self.skip_errors:
                    raise DecodeError(index, err.problem) from None
                skipped.append(index)
            else:
                good.append(value)
        return Decoded(self._parse(good), skipped)

    def _decode_each(self, messages: Sequence[Any]) -> Decoded:
        rows, skipped = [], []
        for index, message in enumerate(messages):
            try:
                rows += self._each.rows(message.value())
            except ValueError as err:  # ChangeRecordError, or a datum the avro schema cannot read
                if not self.skip_errors:
                    raise DecodeError(index, str(err)) from None
                skipped.append(index)
        return Decoded(self._each.batch(rows), skipped)

    def _parse(self, values: Sequence[bytes | None]) -> pa.RecordBatch:
        if not values:
            return empty_batch(self.schema)
        # Checked on the joined values, in C (a loop over the records was an eighth of a
        # worker's time reading JSON from Kafka); the loop only names the record at fault.
        joined = None if None in values else b"\n".join(values)
        if joined is None or joined.count(b"\n") != len(values) - 1 or b"\r" in joined:
            for index, value in enumerate(values):
                if value is None:
                    raise DecodeError(index, "the record has no value (a tombstone)")
                if b"\n" in value or b"\r" in value:
                    raise DecodeError(index, "the value holds a line break")
        if self.format == "text" and self.schema is TEXT_SCHEMA:
            return pa.RecordBatch.from_arrays(
                [pa.array([v.decode("utf-8", "replace") for v in values], pa.string())], schema=TEXT_SCHEMA
            )
        assert joined is not None  # a tombstone raised above
        buffer = joined + b"\n"
        try:
            if self.format == "json":
                mapped = {f.name for f in self._map_fields}
                table = pajson.read_json(
                    io.BytesIO(buffer),
                    read_options=pajson.ReadOptions(block_size=max(len(buffer), 1 << 20)),
                    parse_options=pajson.ParseOptions(
                        explicit_schema=pa.schema([f for f in self.schema if f.name not in mapped]),
                        unexpected_field_behavior="ignore",
                    ),
                )
                if mapped:
                    table = self._with_maps(table, values)
            else:
                table = pacsv.read_csv(
                    io.BytesIO(buffer),
                    read_options=pacsv.ReadOptions(
                        column_names=self.schema.names, block_size=max(len(buffer), 1 << 20)
                    ),
                    parse_options=pacsv.ParseOptions(delimiter=self.delimiter, quote_char=False),
                    convert_options=pacsv.ConvertOptions(column_types=self.schema, strings_can_be_null=True),
                )
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
            raise DecodeError(0, " ".join(str(err).split())) from None
        if table.num_rows != len(values):  # an empty line, or a value holding a delimiter row
            raise DecodeError(0, f"{len(values)} records decoded into {table.num_rows} rows")
        return table.select(self.schema.names).cast(self.schema).combine_chunks().to_batches()[0]

    def _with_maps(self, table: pa.Table, values: Sequence[bytes]) -> pa.Table:
        """The map columns of json records, decoded record by record (SeaTunnel's rules)."""
        records = [json.loads(value) for value in values]
        for field in self._map_fields:
            try:
                column = [convert_value(record.get(field.name), field.type, field.name) for record in records]
            except ConfigError as err:
                raise DecodeError(0, err.problem) from None
            table = table.append_column(field, pa.array(column, type=field.type))
        return table


class _AvroRecords:
    """``avro``: one row per record."""

    change_rows: tuple[str, ...] = ()

    def __init__(self, schema: pa.Schema):
        self.codec = AvroCodec(schema)
        self.schema = schema

    def rows(self, value: bytes | None) -> list[dict[str, Any]]:
        if value is None:
            raise ValueError("the record has no value (a tombstone)")
        return [self.codec.decode_one(value)]

    def batch(self, rows: Sequence[dict[str, Any]]) -> pa.RecordBatch:
        return pa.RecordBatch.from_pylist(list(rows), schema=self.schema)


def empty_batch(schema: pa.Schema) -> pa.RecordBatch:
    """No rows, ``schema``'s columns. Not ``RecordBatch.from_pylist([])``, which imports
    pandas (a second of a fresh worker's CPU) to make nothing: a poll that found no
    records, on every partition of a source at its end, returns one."""
    return pa.RecordBatch.from_arrays([pa.nulls(0, field.type) for field in schema], schema=schema)


def _raw(messages: Sequence[Any]) -> pa.RecordBatch:
    columns = [
        pa.array([m.key() for m in messages], pa.binary()),
        pa.array([m.value() for m in messages], pa.binary()),
        pa.array([m.topic() for m in messages], pa.string()),
        pa.array([m.partition() for m in messages], pa.int32()),
        pa.array([m.offset() for m in messages], pa.int64()),
        pa.array([m.timestamp()[1] for m in messages], pa.int64()),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=RAW_SCHEMA)
