"""Fitting the job's batches to an existing table's schema, with one clear error.

A table sink writes a batch into a table whose schema may have been made by another
job, another engine or an earlier run. Widening casts are safe and done silently (an
``int32`` column into a ``long`` one, ``float`` into ``double``, ``string`` into
``large_string``, nanosecond into microsecond timestamps when no value loses precision);
anything else (a changed type, a column the table lacks, a missing non-nullable column)
is a ``ConfigError`` that names the column and both types, raised before any data file is
written.
"""

from __future__ import annotations

import pyarrow as pa

from ...errors import ConfigError

_INTEGERS = (pa.int8(), pa.int16(), pa.int32(), pa.int64())


def storable_schema(schema: pa.Schema, fixed_binary: bool = True) -> pa.Schema:
    """The schema a new table is created with: nanosecond timestamps as microseconds
    (Iceberg v2 and Delta store microseconds), unsigned integers as the next wider signed
    type, fixed-size binary as binary unless the format has it (``fixed_binary``); no
    metadata."""
    fields = []
    for f in schema:
        kind = f.type
        if pa.types.is_fixed_size_binary(kind) and not fixed_binary:
            kind = pa.binary()
        elif pa.types.is_timestamp(kind) and kind.unit == "ns":
            kind = pa.timestamp("us", tz=kind.tz)
        elif pa.types.is_unsigned_integer(kind):
            kind = {8: pa.int16(), 16: pa.int32(), 32: pa.int64()}.get(kind.bit_width, kind)
        fields.append(pa.field(f.name, kind, f.nullable))
    return pa.schema(fields)


def _widens(source: pa.DataType, target: pa.DataType) -> bool:
    if source.equals(target):
        return True
    if source in _INTEGERS and target in _INTEGERS:
        return source.bit_width <= target.bit_width
    if pa.types.is_unsigned_integer(source) and target in _INTEGERS:
        return source.bit_width < target.bit_width
    if pa.types.is_floating(source) and pa.types.is_floating(target):
        return source.bit_width <= target.bit_width
    string_like = (pa.types.is_string, pa.types.is_large_string, pa.types.is_string_view)
    if any(t(source) for t in string_like) and any(t(target) for t in string_like):
        return True
    binary_like = (pa.types.is_binary, pa.types.is_large_binary, pa.types.is_fixed_size_binary)
    if any(t(source) for t in binary_like) and (pa.types.is_binary(target) or pa.types.is_large_binary(target)):
        return True
    if pa.types.is_timestamp(source) and pa.types.is_timestamp(target):
        return (source.tz is None) == (target.tz is None)
    if pa.types.is_date(source) and pa.types.is_date(target):
        return True
    if pa.types.is_decimal(source) and pa.types.is_decimal(target):
        return source.scale == target.scale and source.precision <= target.precision
    # nested types: a table format names and flags the children its own way (Iceberg's
    # map is map<key, value> with a required key), so only the children's types count
    if pa.types.is_map(source) and pa.types.is_map(target):
        return _widens(source.key_type, target.key_type) and _widens(source.item_type, target.item_type)
    list_like = (pa.types.is_list, pa.types.is_large_list)
    if any(t(source) for t in list_like) and any(t(target) for t in list_like):
        return _widens(source.value_type, target.value_type)
    if pa.types.is_struct(source) and pa.types.is_struct(target):
        return [f.name for f in source] == [f.name for f in target] and all(
            _widens(a.type, b.type) for a, b in zip(source, target)
        )
    return False


def _shown(kind: pa.DataType) -> str:
    """A type as users think of it: Arrow's large variants are an encoding detail."""
    return str(kind).replace("large_string", "string").replace("large_binary", "binary")


def check_compatible(source: pa.Schema, target: pa.Schema, table: str, key: str = "table") -> None:
    """Raise ``ConfigError(key, ...)`` unless every batch of ``source`` fits ``target``."""
    names = set(target.names)
    for f in source:
        if f.name not in names:
            raise ConfigError(
                key,
                f"{table} has no column {f.name!r} (columns: {', '.join(target.names)}); "
                "the job's output must use the table's column names",
            )
        wanted = target.field(f.name).type
        if not _widens(f.type, wanted):
            raise ConfigError(
                key,
                f"column {f.name!r} is {_shown(f.type)} in the job's output but {_shown(wanted)} in {table}: "
                "the types are incompatible (the table's schema is not changed by a job)",
            )
    for f in target:
        if f.name not in source.names and not f.nullable:
            raise ConfigError(
                key, f"{table} requires column {f.name!r} ({_shown(f.type)}), which the job's output lacks"
            )


def conform(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """``batch`` with the columns, order and types of ``target`` (missing nullable columns
    as nulls); ``check_compatible`` said it fits. A value that does not fit (a timestamp
    with nanoseconds) raises pyarrow's error."""
    if batch.schema.equals(target):
        return batch
    columns = []
    for f in target:
        if f.name in batch.schema.names:
            column = batch.column(f.name)
            columns.append(column if column.type.equals(f.type) else column.cast(f.type, safe=True))
        else:
            columns.append(pa.nulls(batch.num_rows, f.type))
    return pa.RecordBatch.from_arrays(columns, schema=target)
