"""Columns read from json, parquet and orc files as the types of a SeaTunnel schema:
text through the text format's rules, floats into text with Java's digits, rows by field
name, lists element-wise, the rest by Arrow's cast."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ...java_text import java_float_text
from .text import _cast, _list_parts, from_text


def convert(col: pa.Array, target: pa.DataType, name: str, base64_bytes: bool = False) -> pa.Array:
    """``col`` as ``target``: text through :func:`from_text`; rows by field name (a json
    object read as a row becomes a map); lists element-wise; the rest by Arrow's cast."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    if col.type == target:
        return col
    if pa.types.is_null(col.type):
        return pa.nulls(len(col), target)
    if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        if not (pa.types.is_string(target) or pa.types.is_large_string(target)):
            return from_text(col, target, name, base64_bytes=base64_bytes, blank_is_null=False)
    if pa.types.is_floating(col.type) and (pa.types.is_string(target) or pa.types.is_large_string(target)):
        return _java_float_strings(col, target)
    if pa.types.is_struct(col.type) and pa.types.is_map(target):
        return _struct_to_map(col, target, name, base64_bytes)
    if pa.types.is_struct(col.type) and pa.types.is_struct(target):
        children = col.flatten()
        by_name = {field.name: child for field, child in zip(col.type, children)}
        converted = [
            convert(by_name[field.name], field.type, f"{name}.{field.name}", base64_bytes)
            if field.name in by_name
            else pa.nulls(len(col), field.type)
            for field in target
        ]
        return pa.StructArray.from_arrays(converted, fields=list(target), mask=col.is_null())
    if pa.types.is_timestamp(col.type) and pa.types.is_timestamp(target):
        return plain_timestamps(col).cast(target, safe=False) if target.tz is None else _cast(col, target, name)
    if (pa.types.is_list(col.type) or pa.types.is_large_list(col.type)) and pa.types.is_list(target):
        offsets, values = _list_parts(col)
        return pa.ListArray.from_arrays(
            offsets, convert(values, target.value_type, name, base64_bytes), mask=col.is_null()
        )
    return _cast(col, target, name)


def _java_float_strings(col: pa.Array, target: pa.DataType) -> pa.Array:
    """Floats as SeaTunnel's readers make text of them (String.valueOf: Float.toString,
    Double.toString): 1.0 and 4.7301637E37, where Arrow's cast writes 1 and 4.7301637e+37."""
    single = pa.types.is_float32(col.type)
    texts = [None if v is None else java_float_text(v, single=single) for v in col.to_pylist()]
    return pa.array(texts, target)


def plain_timestamps(col: pa.Array) -> pa.Array:
    """Timestamps as SeaTunnel's ``timestamp`` (ours: microseconds, no time zone): a
    zoned one as its UTC wall-clock time, finer units truncated to microseconds."""
    if not pa.types.is_timestamp(col.type) or (col.type.unit == "us" and col.type.tz is None):
        return col
    return col.view(pa.timestamp(col.type.unit)).cast(pa.timestamp("us"), safe=False)


def _struct_to_map(col: pa.StructArray, target: pa.MapType, name: str, base64_bytes: bool) -> pa.Array:
    """A json object read as a row (pyarrow infers one field per key) as a map: the
    keys with a value, in field order."""
    n, children = len(col), col.flatten()
    names = [field.name for field in col.type]
    if not names:
        valid = np.zeros((n, 0), dtype=bool)
    else:
        valid = np.stack([np.asarray(child.is_valid(), dtype=bool) for child in children], axis=1)
    offsets = np.concatenate([[0], np.cumsum(valid.sum(axis=1))]).astype(np.int32)
    rows, fields = np.nonzero(valid)
    keys = convert(
        pa.array(np.array(names, dtype=object)[fields] if len(fields) else [], pa.string()), target.key_type, name
    )
    if names:
        items_all = pa.concat_arrays([convert(child, target.item_type, name, base64_bytes) for child in children])
        items = items_all.take(pa.array(fields.astype(np.int64) * n + rows, pa.int64()))
    else:
        items = pa.array([], target.item_type)
    return pa.MapArray.from_arrays(pa.array(offsets), keys, items, mask=col.is_null())
