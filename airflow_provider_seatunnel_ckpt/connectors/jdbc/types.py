"""Column types between PostgreSQL and Arrow.

Reading: the ADBC driver maps most types itself. Three need a hand:

* ``numeric(p, s)`` arrives as an opaque extension over text; it becomes
  ``decimal128(p, s)`` (``decimal256`` above 38 digits). An unconstrained ``numeric``
  has no Arrow type (its scale varies per row): cast it in the query.
* ``json``/``jsonb`` arrive as Arrow's canonical extension type; it is replaced by its
  storage (``string``), which every Arrow consumer (parquet, csv, DuckDB, Python
  transforms) understands. ``uuid`` arrives as one too (16 bytes); it becomes a string,
  the canonical form PostgreSQL prints, as SeaTunnel's Jdbc source reads it.
* PostGIS's ``geometry`` and ``geography`` become ``string``, the hex EWKB PostgreSQL
  prints for them, and ``xml`` its text: what SeaTunnel's Jdbc source reads for them
  (a string column, the value's text form), so a SeaTunnel job writes the same rows.
* anything else opaque (``inet``, ``point``, a user-defined type...) has no Arrow type:
  :func:`read_plan` reports it, naming the column and a cast that fixes it.

Writing: :func:`pg_type` gives the column type the sink creates a table with.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

_OPAQUE = "arrow.opaque"
_UNWRAP = ("arrow.json",)
_UUID = "arrow.uuid"


@dataclass(frozen=True)
class ReadPlan:
    schema: pa.Schema
    #: column index -> function turning the driver's array into ``schema``'s type
    converters: dict[int, Callable[[pa.Array], pa.Array]]
    problems: tuple[str, ...] = ()

    def apply(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        if not self.converters and batch.schema.equals(self.schema, check_metadata=True):
            return batch
        columns = list(batch.columns)
        for index, convert in self.converters.items():
            columns[index] = convert(columns[index])
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)


def _hex_text(array: pa.Array) -> pa.Array:
    """PostGIS's binary form (EWKB) as its text form: the same bytes in upper-case hex."""
    return pa.array([None if b is None else b.hex().upper() for b in array.storage.to_pylist()], pa.string())


def _uuid_text(array: pa.Array) -> pa.Array:
    storage = array.storage if isinstance(array, pa.ExtensionArray) else array
    return pa.array([None if b is None else str(uuid.UUID(bytes=b)) for b in storage.to_pylist()], pa.string())


def _utf8_text(array: pa.Array) -> pa.Array:
    return pc.cast(array.storage, pa.string())  # xml's binary form is its text (the client's UTF-8)


#: opaque types read as their text form (typname -> converter of the binary storage)
_AS_TEXT: dict[str, Callable[[pa.Array], pa.Array]] = {
    "geometry": _hex_text,
    "geography": _hex_text,
    "xml": _utf8_text,
}


def _pg_type_name(field: pa.Field) -> str:
    meta = field.metadata or {}
    for key in (b"ADBC:postgresql:typname", b"POSTGRESQL:type"):
        if key in meta:
            return meta[key].decode("utf-8", "replace")
    extension = getattr(field.type, "type_name", None)
    return str(extension or field.type)


def _numeric_type(field: pa.Field) -> pa.DataType | None:
    raw = (field.metadata or {}).get(b"POSTGRESQL:typmod")
    typmod = int(raw) if raw is not None else -1
    if typmod < 4:
        return None
    precision, scale = ((typmod - 4) >> 16) & 0xFFFF, (typmod - 4) & 0xFFFF
    return pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)


def read_plan(schema: pa.Schema) -> ReadPlan:
    fields, converters, problems = [], {}, []
    for index, field in enumerate(schema):
        kind = getattr(field.type, "extension_name", None)
        if kind is None:
            fields.append(field.remove_metadata())
            continue
        if kind == _UUID:
            converters[index] = _uuid_text
            fields.append(pa.field(field.name, pa.string(), field.nullable))
            continue
        if kind in _UNWRAP:
            storage = field.type.storage_type
            converters[index] = lambda array: array.storage if isinstance(array, pa.ExtensionArray) else array
            fields.append(pa.field(field.name, storage, field.nullable))
            continue
        type_name = _pg_type_name(field)
        if kind == _OPAQUE and type_name in _AS_TEXT:
            converters[index] = _AS_TEXT[type_name]
            fields.append(pa.field(field.name, pa.string(), field.nullable))
            continue
        if kind == _OPAQUE and type_name == "numeric":
            target = _numeric_type(field)
            if target is not None:
                converters[index] = lambda array, t=target: pc.cast(array.storage, t)
                fields.append(pa.field(field.name, target, field.nullable))
                continue
            problems.append(
                f"column {field.name!r} is numeric without precision and scale, which has no Arrow type; "
                f"cast it in the query, e.g. {field.name}::numeric(38, 10) or {field.name}::text"
            )
        else:
            problems.append(
                f"column {field.name!r} has PostgreSQL type {type_name}, which has no Arrow type; "
                f"cast it in the query, e.g. {field.name}::text"
            )
        fields.append(pa.field(field.name, pa.null()))
    return ReadPlan(pa.schema(fields), converters, tuple(problems))


def pg_type(arrow_type: pa.DataType) -> str | None:
    """The PostgreSQL column type for an Arrow type, or None when there is none."""
    t = arrow_type
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_uint8(t):
        return "smallint"
    if pa.types.is_int32(t) or pa.types.is_uint16(t):
        return "integer"
    if pa.types.is_int64(t) or pa.types.is_uint32(t):
        return "bigint"
    if pa.types.is_uint64(t):
        return "numeric(20, 0)"
    if pa.types.is_float16(t) or pa.types.is_float32(t):
        return "real"
    if pa.types.is_float64(t):
        return "double precision"
    if pa.types.is_decimal(t):
        return f"numeric({t.precision}, {t.scale})"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "text"
    if (
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_fixed_size_binary(t)
        or pa.types.is_binary_view(t)
    ):
        return "bytea"
    if pa.types.is_date(t):
        return "date"
    if pa.types.is_timestamp(t):
        return "timestamp with time zone" if t.tz else "timestamp without time zone"
    if pa.types.is_time(t):
        return "time without time zone"
    if pa.types.is_duration(t) or pa.types.is_interval(t):
        return "interval"
    return None
