"""Java's and Jackson's texts of values, which SeaTunnel's results are compared by:
``Double.toString`` / ``Float.toString`` (:func:`java_float_text`), ``BigDecimal.toString``,
and Jackson's JSON strings, ``JsonNode.toString`` and ``JsonNode.asText`` of a parsed
document's values. Shared by the JsonPath transform and the excel format, whose
SeaTunnel counterparts both print values through Java."""

from __future__ import annotations

import decimal
import math
import re
from typing import Any

import numpy as np


def java_float_text(value: float, single: bool = False) -> str:
    """Double.toString (Float.toString with ``single``), with the shortest digits."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    shortest = str(np.float32(value)) if single else repr(value)
    d = decimal.Decimal(shortest)
    sign, digits, _ = d.as_tuple()
    text_digits = "".join(map(str, digits)).rstrip("0") or "0"
    adjusted = d.adjusted()
    minus = "-" if sign else ""
    if -3 <= adjusted < 7:
        if adjusted >= 0:
            whole = text_digits[: adjusted + 1].ljust(adjusted + 1, "0")
            fraction = text_digits[adjusted + 1 :] or "0"
        else:
            whole = "0"
            fraction = "0" * (-adjusted - 1) + text_digits
        return f"{minus}{whole}.{fraction}"
    return f"{minus}{text_digits[0]}.{text_digits[1:] or '0'}E{adjusted}"


def float_json(value: float, single: bool = False) -> str:
    """A float as Jackson writes it: NaN and the infinities are not JSON numbers, so they
    are written as strings."""
    text = java_float_text(value, single)
    return text if math.isfinite(value) else f'"{text}"'


def java_decimal_text(value: decimal.Decimal) -> str:
    """BigDecimal.toString: Python's str of a Decimal follows the same rule."""
    return str(value)


_JSON_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\f": "\\f", "\n": "\\n", "\r": "\\r"}
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f]')


def json_string(text: str) -> str:
    """A JSON string as Jackson writes it (control characters as ``\\u00XX`` in capitals)."""
    return '"' + _NEEDS_ESCAPE.sub(lambda m: _JSON_ESCAPES.get(m[0], f"\\u{ord(m[0]):04X}"), text) + '"'


def node_json(value: Any) -> str:
    """Jackson's ``JsonNode.toString`` of a parsed value."""
    if isinstance(value, str):
        return json_string(value)
    if isinstance(value, float):
        return float_json(value)
    if isinstance(value, list):
        return "[" + ",".join(node_json(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{json_string(k)}:{node_json(v)}" for k, v in value.items()) + "}"
    return node_text(value)


def node_text(value: Any) -> str:
    """Jackson's ``JsonNode.asText``: a container gives ""."""
    if isinstance(value, str):
        return value
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return java_float_text(value)
    if isinstance(value, decimal.Decimal):
        return java_decimal_text(value)
    if value is None:
        return "null"
    return ""
