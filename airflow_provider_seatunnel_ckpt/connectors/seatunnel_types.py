"""SeaTunnel's column types and ``schema`` blocks as Arrow types and schemas, and values
written in a job file (or a JSON record) as Python values of those types
(:func:`convert_value`, SeaTunnel's JSON rules).

SeaTunnel writes a type as text (``int``, ``decimal(30, 8)``, ``array<string>``,
``map<string, array<int>>``) or, for a nested row, as an object (``{a = int, b = string}``,
also as the text ``"{a = int, b = string}"`` inside a generic). A table's columns come in
one of two forms::

    schema { fields { id = bigint, name = string, c_row = { a = int } } }
    schema { columns = [ {name = id, type = bigint, nullable = false}, ... ] }

Names are matched case-insensitively with spaces ignored, as SeaTunnel does; ``long``,
``short`` and ``byte`` are its aliases. Arrow has no type without a scale, so ``decimal``
needs ``(precision, scale)`` as in SeaTunnel. Vector types are not supported.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ..errors import ConfigError

_SIMPLE = {
    "string": pa.string(),
    "boolean": pa.bool_(),
    "tinyint": pa.int8(),
    "smallint": pa.int16(),
    "int": pa.int32(),
    "bigint": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "bytes": pa.binary(),
    "date": pa.date32(),
    "time": pa.time64("us"),
    "timestamp": pa.timestamp("us"),
    "null": pa.null(),
    # SeaTunnel's aliases
    "long": pa.int64(),
    "short": pa.int16(),
    "byte": pa.int8(),
}
_DECIMAL = re.compile(r"decimal\((\d+),(\d+)\)")
KNOWN = (
    "string, boolean, tinyint, smallint, int, bigint, float, double, decimal(p, s), bytes, date, time, "
    "timestamp, null, array<T>, map<K, V>, {field = type, ...}"
)


def seatunnel_type(spec: Any, key: str) -> pa.DataType:
    """One SeaTunnel type (text, or a mapping for a nested row) as an Arrow type."""
    if isinstance(spec, Mapping):
        return pa.struct(_fields(spec, key))
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError(key, f"expected a type name ({KNOWN}), got {spec!r}")
    text = re.sub(r"\s+", "", spec).lower()
    if text in _SIMPLE:
        return _SIMPLE[text]
    if match := _DECIMAL.fullmatch(text):
        precision, scale = int(match[1]), int(match[2])
        if not 1 <= precision <= 38 or scale > precision:
            raise ConfigError(key, f"decimal({precision}, {scale}): precision must be 1..38 and scale <= precision")
        return pa.decimal128(precision, scale)
    if text == "decimal":
        raise ConfigError(key, "decimal needs its precision and scale, e.g. decimal(10, 2)")
    if text.startswith("array<") and text.endswith(">"):
        return pa.list_(seatunnel_type(_original(spec, 1), key))
    if text.startswith("map<") and text.endswith(">"):
        inner = _original(spec, 1)
        comma = _top_level_comma(inner)
        if comma is not None:
            return pa.map_(seatunnel_type(inner[:comma], key), seatunnel_type(inner[comma + 1 :], key))
    if text.startswith("{") and text.endswith("}"):
        return pa.struct(_fields(_row_text(spec.strip()[1:-1], key), key))
    raise ConfigError(key, f"unknown type {spec!r}; known types: {KNOWN}")


def _original(spec: str, tail: int) -> str:
    """The inside of ``array<...>`` / ``map<...>`` with its original spelling (field
    names in a nested row keep their case)."""
    stripped = spec.strip()
    start = stripped.index("<") + 1
    return stripped[start : len(stripped) - tail]


def _top_level_comma(text: str, separators: str = ",") -> int | None:
    depth = 0
    for index, char in enumerate(text):
        if char in "<({":
            depth += 1
        elif char in ">)}":
            depth -= 1
        elif char in separators and depth == 0:
            return index
    return None


def _row_text(body: str, key: str) -> dict[str, str]:
    """``a = int, b = map<string, int>`` (or ``a: int``, one per line) -> {"a": "int", ...}."""
    fields: dict[str, str] = {}
    rest = body
    while rest.strip():
        comma = _top_level_comma(rest, ",\n")
        item, rest = (rest, "") if comma is None else (rest[:comma], rest[comma + 1 :])
        if not item.strip():
            continue
        match = re.fullmatch(r"\s*([^=:]+?)\s*[=:]\s*(.+?)\s*", item, flags=re.S)
        if match is None:
            raise ConfigError(key, f"expected 'name = type' in a row type, got {item.strip()!r}")
        name, kind = match.groups()
        fields[name.strip().strip('"')] = kind.strip().strip('"')
    return fields


def _fields(spec: Mapping[str, Any], key: str) -> list[pa.Field]:
    if not spec:
        raise ConfigError(key, "a row type needs at least one field")
    return [pa.field(str(name), seatunnel_type(kind, f"{key}.{name}")) for name, kind in spec.items()]


def has_map(kind: pa.DataType) -> bool:
    """A map anywhere in ``kind`` (Arrow's JSON reader cannot read one)."""
    if pa.types.is_map(kind):
        return True
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return has_map(kind.value_type)
    if pa.types.is_struct(kind):
        return any(has_map(f.type) for f in kind)
    return False


@dataclass(frozen=True)
class Column:
    """A column of a ``schema`` block; ``length`` and ``default`` as SeaTunnel's columns
    form gives them (None in the fields form)."""

    name: str
    type: pa.DataType
    nullable: bool = True
    length: int | None = None
    scale: int | None = None
    default: Any = None


def parse_columns(value: Any, key: str = "schema") -> list[Column]:
    """A ``schema`` block (either form) as its columns, in order."""
    if not isinstance(value, Mapping):
        raise ConfigError(key, "expected {fields {column = type, ...}} or {columns = [{name, type}, ...]}")
    fields, columns = value.get("fields"), value.get("columns")
    if fields is not None and columns is not None:
        raise ConfigError(key, "has both fields and columns; use one of them")
    if fields is not None:
        if not isinstance(fields, Mapping) or not fields:
            raise ConfigError(f"{key}.fields", "expected a mapping of column name to type with at least one column")
        return [Column(str(name), seatunnel_type(kind, f"{key}.fields.{name}")) for name, kind in fields.items()]
    if columns is not None:
        if not isinstance(columns, list) or not columns:
            raise ConfigError(f"{key}.columns", "expected a list of {name, type} with at least one column")
        result = []
        for index, column in enumerate(columns):
            where = f"{key}.columns[{index}]"
            if not isinstance(column, Mapping) or "name" not in column or "type" not in column:
                raise ConfigError(where, "expected a mapping with name and type")
            result.append(
                Column(
                    str(column["name"]),
                    seatunnel_type(column["type"], f"{where}.type"),
                    nullable=column.get("nullable", True) not in (False, "false"),
                    length=int(column.get("columnLength", 0) or 0),
                    scale=None if column.get("columnScale") is None else int(column["columnScale"]),
                    default=column.get("defaultValue"),
                )
            )
        return result
    raise ConfigError(key, "needs fields {column = type, ...} or columns = [{name, type}, ...]")


def parse_schema(value: Any, key: str = "schema") -> pa.Schema:
    """A ``schema`` block (either form) as an Arrow schema."""
    return pa.schema([pa.field(c.name, c.type, nullable=c.nullable) for c in parse_columns(value, key)])


def type_name(arrow_type: pa.DataType) -> str:
    """An Arrow type in SeaTunnel's spelling, for messages."""
    for name, known in _SIMPLE.items():
        if arrow_type == known and name not in ("long", "short", "byte"):
            return name
    if pa.types.is_decimal(arrow_type):
        return f"decimal({arrow_type.precision}, {arrow_type.scale})"
    if pa.types.is_list(arrow_type):
        return f"array<{type_name(arrow_type.value_type)}>"
    if pa.types.is_map(arrow_type):
        return f"map<{type_name(arrow_type.key_type)}, {type_name(arrow_type.item_type)}>"
    if pa.types.is_struct(arrow_type):
        return "{" + ", ".join(f"{f.name} = {type_name(f.type)}" for f in arrow_type) + "}"
    return str(arrow_type)


# ---- values -------------------------------------------------------------------------------
_DATE_FORMATS = ("%Y-%m-%d", "%Y年%m月%d日", "%Y/%m/%d", "%Y.%m.%d", "%Y%m%d")
_TIMESTAMP_FORMATS = (
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%dT%H:%M:%S",
    "%Y/%m/%d %H:%M:%S",
    "%Y.%m.%d %H:%M:%S",
    "%Y年%m月%d日 %H时%M分%S秒",
    "%Y%m%d%H%M%S",
)


def convert_value(value: Any, kind: pa.DataType, key: str) -> Any:
    """A job file's value (``rows``, ``defaultValue``, Assert's ``equals_to``) as the Python
    value of an Arrow ``kind``, by SeaTunnel's JSON rules: numbers and booleans also from
    text, bytes from base64, dates and times from text in SeaTunnel's formats, a row from
    a list (by position) or a mapping (by name)."""
    if value is None:
        return None
    try:
        if pa.types.is_string(kind):
            return (
                value
                if isinstance(value, str)
                else json.dumps(value)
                if isinstance(value, (list, dict))
                else _text(value)
            )
        if pa.types.is_boolean(kind):
            return value if isinstance(value, bool) else str(value).strip().lower() == "true"
        if pa.types.is_integer(kind):
            return int(str(value).strip()) if not isinstance(value, int) else value
        if pa.types.is_floating(kind):
            return float(value)
        if pa.types.is_decimal(kind):
            return decimal.Decimal(str(value).strip())
        if pa.types.is_binary(kind):
            return base64.b64decode(str(value)) if not isinstance(value, bytes) else value
        if pa.types.is_date(kind):
            return _parse_time(str(value).strip(), _DATE_FORMATS).date()
        if pa.types.is_time(kind):
            return dt.time.fromisoformat(str(value).strip())
        if pa.types.is_timestamp(kind):
            return _parse_timestamp(str(value).strip())
        if pa.types.is_null(kind):
            return None
        if pa.types.is_list(kind):
            return [convert_value(v, kind.value_type, f"{key}[{i}]") for i, v in enumerate(_a_list(value, key))]
        if pa.types.is_map(kind):
            if isinstance(value, str):
                return []  # SeaTunnel reads a map written as text as an empty map
            return [
                (convert_value(k, kind.key_type, key), convert_value(v, kind.item_type, f"{key}.{k}"))
                for k, v in _a_mapping(value, key).items()
            ]
        if pa.types.is_struct(kind):
            if isinstance(value, Mapping):
                return {f.name: convert_value(value.get(f.name), f.type, f"{key}.{f.name}") for f in kind}
            items = _a_list(value, key)
            return {
                f.name: convert_value(items[i] if i < len(items) else None, f.type, f"{key}.{f.name}")
                for i, f in enumerate(kind)
            }
    except (ValueError, TypeError, ArithmeticError, decimal.InvalidOperation) as err:
        raise ConfigError(key, f"{value!r} is not a {kind} value: {err}") from None
    raise ConfigError(key, f"values of type {kind} are not supported here")


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _a_list(value: Any, key: str) -> list[Any]:
    if not isinstance(value, list):
        raise ConfigError(key, f"expected a list, got {value!r}")
    return value


def _a_mapping(value: Any, key: str) -> Mapping[Any, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(key, f"expected a mapping, got {value!r}")
    return value


def _parse_timestamp(text: str) -> dt.datetime:
    """``yyyy-MM-dd HH:mm:ss[.f]`` with ``-``, ``/`` or ``.`` in the date, ``T`` or a space
    before the time; else one of SeaTunnel's other timestamp formats."""
    head, tail = text[:10], text[10:]
    try:
        return dt.datetime.fromisoformat(head.replace("/", "-").replace(".", "-") + tail)
    except ValueError:
        return _parse_time(text, _TIMESTAMP_FORMATS)


def _parse_time(text: str, formats: Sequence[str]) -> dt.datetime:
    for fmt in formats:
        try:
            return dt.datetime.strptime(text, fmt)
        except ValueError:
            continue
    raise ValueError(f"not in a known format ({', '.join(formats)})")
