"""A source column that is not text, written as the JSON SeaTunnel reads the path from:
SeaTunnel hands JsonPath the Java value of a ``row``, ``array`` or ``map`` column, which
Jackson writes with its JavaTimeModule. So a row is the array of its fields (``$[0]`` is
its first field), dates and times are arrays (``[2023,10,29]``), bytes base64 and floats
as Java prints them."""

from __future__ import annotations

import base64
import json
from typing import Any

import pyarrow as pa

from ...connectors.java_text import float_json, java_decimal_text, java_float_text, json_string
from ...connectors.seatunnel_types import type_name
from ...errors import ConfigError


def check_source(kind: pa.DataType, key: str, column: str, top: bool = True) -> None:
    """Refuse, when the job is checked, a source column :func:`source_json` cannot write
    as SeaTunnel does (``top``: the column itself, else a value nested in it)."""
    if top and (
        pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_binary(kind)
        or pa.types.is_large_binary(kind)
    ):
        return
    if pa.types.is_dictionary(kind) and top:
        return check_source(kind.value_type, key, column, top)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        return check_source(kind.value_type, key, column, False)
    if pa.types.is_map(kind):
        key_type = kind.key_type
        if not (
            pa.types.is_string(key_type)
            or pa.types.is_large_string(key_type)
            or pa.types.is_integer(key_type)
            or pa.types.is_boolean(key_type)
            or pa.types.is_floating(key_type)
            or pa.types.is_decimal(key_type)
        ):
            raise ConfigError(key, f"{column} is a map keyed by {type_name(key_type)}: not supported here")
        return check_source(kind.item_type, key, column, False)
    if pa.types.is_struct(kind):
        if not top:
            raise ConfigError(
                key, f"{column} holds a nested row: SeaTunnel writes it as a Java bean; not supported here"
            )
        for field in kind:
            check_source(field.type, key, column, False)
        return
    if top:
        raise ConfigError(
            key, f"{column} is {type_name(kind)}: JsonPath reads string, bytes, row, array or map columns"
        )
    if pa.types.is_timestamp(kind) and kind.tz is not None:
        raise ConfigError(key, f"{column} holds timestamps with a time zone: not supported here")
    if not (
        pa.types.is_null(kind)
        or pa.types.is_boolean(kind)
        or pa.types.is_integer(kind)
        or pa.types.is_floating(kind)
        or pa.types.is_decimal(kind)
        or pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_binary(kind)
        or pa.types.is_large_binary(kind)
        or pa.types.is_date(kind)
        or pa.types.is_time(kind)
        or pa.types.is_timestamp(kind)
    ):
        raise ConfigError(key, f"{column} holds {kind}: not supported here")


def _time_parts(hour: int, minute: int, second: int, nanos: int) -> list[int]:
    parts = [hour, minute]
    if second > 0 or nanos > 0:
        parts.append(second)
        if nanos > 0:
            parts.append(nanos)
    return parts


def source_json(value: Any, kind: pa.DataType) -> str:
    """Jackson's text of SeaTunnel's Java value of an Arrow ``kind`` (JavaTimeModule:
    dates and times as arrays, nanoseconds last)."""
    if value is None:
        return "null"
    if pa.types.is_boolean(kind):
        return "true" if value else "false"
    if pa.types.is_integer(kind):
        return str(value)
    if pa.types.is_floating(kind):
        return float_json(float(value), single=kind.bit_width == 32)
    if pa.types.is_decimal(kind):
        return java_decimal_text(value)
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return json_string(value)
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        return '"' + base64.b64encode(value).decode("ascii") + '"'
    if pa.types.is_date(kind):
        return json.dumps([value.year, value.month, value.day])
    if pa.types.is_time(kind):
        return json.dumps(_time_parts(value.hour, value.minute, value.second, value.microsecond * 1000))
    if pa.types.is_timestamp(kind):
        return json.dumps(
            [value.year, value.month, value.day]
            + _time_parts(value.hour, value.minute, value.second, value.microsecond * 1000)
        )
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        return "[" + ",".join(source_json(v, kind.value_type) for v in value) + "]"
    if pa.types.is_map(kind):
        entries = dict(value)  # a Java map keeps one entry per key
        return (
            "{"
            + ",".join(
                f"{json_string(_key_text(k, kind.key_type))}:{source_json(v, kind.item_type)}"
                for k, v in entries.items()
            )
            + "}"
        )
    if pa.types.is_struct(kind):  # the top-level row: its fields, as an array
        return "[" + ",".join(source_json(value.get(f.name), f.type) for f in kind) + "]"
    return "null" if pa.types.is_null(kind) else json_string(str(value))


def _key_text(key: Any, kind: pa.DataType) -> str:
    if pa.types.is_boolean(kind):
        return "true" if key else "false"
    if pa.types.is_floating(kind):
        return java_float_text(float(key), single=kind.bit_width == 32)
    if pa.types.is_decimal(kind):
        return java_decimal_text(key)
    return str(key)
