"""Change-data formats of Kafka record values, as SeaTunnel reads and writes them.

Reading (``format`` of the Kafka source): each record of ``canal_json``, ``maxwell_json``,
``ogg_json``, ``debezium_json`` or ``compatible_kafka_connect_json`` becomes zero or more
change rows (``connectors/api.py``'s row-kind column), typed by the source's ``schema``
with SeaTunnel's JSON rules (``seatunnel_types.convert_value``). Writing (``format`` of
the Kafka sink, :func:`encoding_sql`): each change as an insert or a delete of one row,
as SeaTunnel's serializers write them.

The record shapes, the rows each gives and the error handling (``skip`` by default, as
SeaTunnel's readers ignore parse errors): docs/kafka.md, "Change formats".
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from ...errors import ConfigError
from ..api import DELETE, INSERT, KIND_FIELD, KINDS, UPDATE_AFTER, UPDATE_BEFORE
from ..seatunnel_types import convert_value

#: the source formats of this module (lower case, as a ``str`` option returns its choices)
SOURCE_FORMATS = ("canal_json", "debezium_json", "maxwell_json", "ogg_json", "compatible_kafka_connect_json")
#: the formats whose SeaTunnel reader drops what it cannot read (ignoreParseErrors)
LENIENT_FORMATS = ("canal_json", "debezium_json", "maxwell_json", "ogg_json")
SINK_FORMATS = ("canal_json", "debezium_json", "maxwell_json", "ogg_json")

Change = tuple[int, Mapping[str, Any]]  # (kind code, the row's JSON object)


class ChangeRecordError(ValueError):
    """A record the format cannot read; the message says why."""


class ChangeDecoder:
    """One source's change format: record values -> change rows of ``schema``."""

    def __init__(self, fmt: str, schema: pa.Schema, debezium_schema_included: bool = True):
        self.format = fmt
        self.data_schema = schema
        #: Kafka Connect's records are inserts only: their batches need no kind column
        self.change_rows = () if fmt == "compatible_kafka_connect_json" else KINDS[1:]
        self.schema = schema.append(KIND_FIELD) if self.change_rows else schema
        self._changes: Callable[[Any], list[Change]] = {
            "canal_json": _canal,
            "maxwell_json": _maxwell,
            "ogg_json": _ogg,
            "debezium_json": (lambda doc: _debezium(doc.get("payload") if debezium_schema_included else doc)),
            "compatible_kafka_connect_json": _kafka_connect,
        }[fmt]
        self._convert = _debezium_value if fmt == "debezium_json" else convert_value

    def rows(self, value: bytes) -> list[tuple[int, dict[str, Any]]]:
        """The change rows of one record value (kind code, {column: Python value}). A
        record without a value (a tombstone, which Debezium writes after a delete) has
        none, as in SeaTunnel."""
        if not value:
            return []
        try:
            document = json.loads(value)
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise ChangeRecordError(f"not JSON: {err}") from None
        if not isinstance(document, dict):
            raise ChangeRecordError(f"expected a JSON object, got {type(document).__name__}")
        rows = []
        for kind, data in self._changes(document):
            if not isinstance(data, Mapping):
                raise ChangeRecordError(f"a {KINDS[kind]} row is {json.dumps(data)}, not a JSON object")
            try:
                rows.append((kind, {f.name: self._convert(data.get(f.name), f.type, f.name) for f in self.data_schema}))
            except ConfigError as err:
                raise ChangeRecordError(f"{err.key}: {err.problem}") from None
        return rows

    def batch(self, rows: Sequence[tuple[int, dict[str, Any]]]) -> pa.RecordBatch:
        columns = [pa.array([row[f.name] for _, row in rows], type=f.type) for f in self.data_schema]
        if self.change_rows:
            columns.append(pa.array([kind for kind, _ in rows], type=pa.int8()))
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)


def _field(document: Mapping[str, Any], name: str) -> Any:
    if name not in document:
        raise ChangeRecordError(f"no {name!r} field")
    return document[name]


def _with_unchanged(old: Mapping[str, Any], new: Mapping[str, Any], named: set[str]) -> dict[str, Any]:
    """The row before an update: Canal and Maxwell list only the fields that changed in
    ``old``; SeaTunnel fills a field no ``old`` object names from the new row."""
    if not isinstance(old, Mapping) or not isinstance(new, Mapping):
        raise ChangeRecordError("an update's old and new rows must be JSON objects")
    return {**{k: v for k, v in new.items() if k not in named}, **old}


def _canal(doc: Mapping[str, Any]) -> list[Change]:
    op = str(_field(doc, "type"))
    data = doc.get("data")
    if data is None:
        if op in ("QUERY", "CREATE", "ALTER"):  # DDL: nothing to emit
            return []
        raise ChangeRecordError(f"a {op} record without data")
    if not isinstance(data, list):
        raise ChangeRecordError("data must be a list of rows")
    if op == "INSERT":
        return [(INSERT, row) for row in data]
    if op == "DELETE":
        return [(DELETE, row) for row in data]
    if op == "UPDATE":
        old = doc.get("old")
        if not isinstance(old, list) or len(old) < len(data):
            raise ChangeRecordError("an UPDATE needs an old entry per data row")
        # SeaTunnel asks whether *any* old entry names the field (Jackson's findValue)
        named = {key for entry in old if isinstance(entry, Mapping) for key in entry}
        changes: list[Change] = []
        for before, after in zip(old, data):
            changes += [(UPDATE_BEFORE, _with_unchanged(before, after, named)), (UPDATE_AFTER, after)]
        return changes
    raise ChangeRecordError(f"unknown type {op!r}")


def _maxwell(doc: Mapping[str, Any]) -> list[Change]:
    op = str(_field(doc, "type"))
    data = _field(doc, "data")
    if op == "insert":
        return [(INSERT, data)]
    if op == "delete":
        return [(DELETE, data)]
    if op == "update":
        old = _field(doc, "old")
        named = set(old) if isinstance(old, Mapping) else set()
        return [(UPDATE_BEFORE, _with_unchanged(old, data, named)), (UPDATE_AFTER, data)]
    raise ChangeRecordError(f"unknown type {op!r}")


def _before(doc: Mapping[str, Any], op: str) -> Any:
    before = doc.get("before")
    if before is None:
        raise ChangeRecordError(
            f"the before image of a {op} is null (for PostgreSQL, set the table's REPLICA IDENTITY to FULL)"
        )
    return before


def _images(doc: Mapping[str, Any], field: str, inserts: tuple[str, ...], update: str, delete: str) -> list[Change]:
    """A record of before and after images (ogg, debezium), its operation in ``field``."""
    op = str(_field(doc, field)).strip()
    if op in inserts:
        return [(INSERT, _field(doc, "after"))]
    if op == update:
        return [(UPDATE_BEFORE, _before(doc, "UPDATE")), (UPDATE_AFTER, _field(doc, "after"))]
    if op == delete:
        return [(DELETE, _before(doc, "DELETE"))]
    raise ChangeRecordError(f"unknown {field} {op!r}")


def _ogg(doc: Mapping[str, Any]) -> list[Change]:
    return _images(doc, "op_type", ("I",), "U", "D")


def _debezium(payload: Any) -> list[Change]:
    if not isinstance(payload, Mapping):
        raise ChangeRecordError(
            "no payload object (set debezium_record_include_schema: false for records "
            "without Kafka Connect's schema envelope)"
        )
    return _images(payload, "op", ("c", "r"), "u", "d")


def _kafka_connect(doc: Mapping[str, Any]) -> list[Change]:
    payload = _field(doc, "payload")
    rows = payload if isinstance(payload, list) else [payload]
    return [(INSERT, row) for row in rows if row is not None]


_EPOCH = dt.datetime(1970, 1, 1)


def _java_int(value: Any) -> int:
    """Jackson's ``intValue()``: a number's integer part, 0 for anything else (a text)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    return int(value)


def _debezium_value(value: Any, kind: pa.DataType, key: str) -> Any:
    """A value as Debezium's JSON converter writes it (SeaTunnel's ``DebeziumRowConverter``)."""
    if value is None:
        return None
    if pa.types.is_integer(kind):
        number = _java_int(value)
        bits = kind.bit_width
        return (number + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1))  # Java's narrowing cast
    if pa.types.is_boolean(kind):
        return value is True
    if pa.types.is_decimal(kind) and isinstance(value, str):
        unscaled = int.from_bytes(base64.b64decode(value), "big", signed=True)
        return decimal.Decimal(unscaled).scaleb(-kind.scale)
    if pa.types.is_date(kind) and isinstance(value, int):
        return (_EPOCH + dt.timedelta(days=value)).date()
    if pa.types.is_time(kind) and isinstance(value, int):
        return (_EPOCH + dt.timedelta(microseconds=value)).time()
    if pa.types.is_timestamp(kind):
        if isinstance(value, int):
            return _EPOCH + dt.timedelta(milliseconds=value)
        if isinstance(value, str) and value.endswith("Z"):
            return dt.datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ")
    if pa.types.is_struct(kind) and isinstance(value, Mapping):
        return {f.name: _debezium_value(value.get(f.name), f.type, f"{key}.{f.name}") for f in kind}
    if pa.types.is_list(kind) and isinstance(value, list):
        return [_debezium_value(v, kind.value_type, f"{key}[{i}]") for i, v in enumerate(value)]
    return convert_value(value, kind, key)


# ---- writing ------------------------------------------------------------------------------------
def encoding_sql(fmt: str, row_expression: str, kind_column: str | None) -> str:
    """The DuckDB expression of one record value: ``row_expression`` is the row as a
    struct, ``kind_column`` the quoted row-kind column (None: every row is an insert)."""
    deleted = f"{kind_column} IN ({UPDATE_BEFORE}, {DELETE})" if kind_column else "false"
    if fmt == "debezium_json":
        return (
            f"to_json(struct_pack(before := CASE WHEN {deleted} THEN {row_expression} END, "
            f"after := CASE WHEN {deleted} THEN NULL ELSE {row_expression} END, "
            f"op := CASE WHEN {deleted} THEN 'd' ELSE 'c' END))"
        )
    return (
        f"to_json(struct_pack(data := {row_expression}, type := CASE WHEN {deleted} THEN 'DELETE' ELSE 'INSERT' END))"
    )
