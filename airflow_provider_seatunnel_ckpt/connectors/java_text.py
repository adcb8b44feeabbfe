"""Java's and Jackson's texts of values, which SeaTunnel's results are compared by:
``Double.toString`` / ``Float.toString`` (:func:`java_float_text`, with the digits of the
Java SeaTunnel runs on), ``BigDecimal.toString``,
Jackson's JSON strings, ``JsonNode.toString`` and ``JsonNode.asText`` of a parsed
document's values, a decimal as Jackson's default node factory keeps it, and
DateTimeFormatter's ISO forms. Shared by the JsonPath transform, the excel format and
the json file format, whose SeaTunnel counterparts all print values through Java."""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
from typing import Any

from .java_double import java_digits


def java_float_text(value: float, single: bool = False) -> str:
    """Double.toString (Float.toString with ``single``) as the Java that SeaTunnel runs on
    (8 to 17) prints it: those digits (java_double.py), laid out as Java lays them out."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    negative, digits, exponent = java_digits(value, single)
    minus = "-" if negative else ""
    if 0 < exponent < 8:
        return f"{minus}{digits[:exponent].ljust(exponent, '0')}.{digits[exponent:] or '0'}"
    if -3 < exponent <= 0:
        return f"{minus}0.{'0' * -exponent}{digits}"
    return f"{minus}{digits[0]}.{digits[1:] or '0'}E{exponent - 1}"


def float_json(value: float, single: bool = False) -> str:
    """A float as Jackson writes it: NaN and the infinities are not JSON numbers, so they
    are written as strings."""
    text = java_float_text(value, single)
    return text if math.isfinite(value) else f'"{text}"'


def java_decimal_text(value: decimal.Decimal) -> str:
    """BigDecimal.toString: Python's str of a Decimal follows the same rule."""
    return str(value)


#: wide enough for any decimal arrow holds (decimal256: 76 digits), so stripping never rounds
_EXACT = decimal.Context(prec=200)


def jackson_decimal_text(value: decimal.Decimal) -> str:
    """A decimal as Jackson writes it from an ObjectMapper's default node factory, which
    SeaTunnel's json format uses: trailing zeros stripped (``stripTrailingZeros``: 12.40
    -> 12.4, 1000.00 -> 1E+3), a zero as 0."""
    if value.is_zero():
        return "0"
    return java_decimal_text(value.normalize(_EXACT))


def java_iso_text(value: dt.date | dt.time) -> str:
    """A date, time or timestamp without a zone as DateTimeFormatter's ISO_LOCAL_DATE,
    ``HH:mm:ss`` and ISO_LOCAL_DATE_TIME write it: seconds always, and a fraction of a
    second with as many digits as it needs (.032, where Python's isoformat writes
    .032000). A value with a zone keeps Python's ISO form."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            return value.isoformat()
        return f"{value.date().isoformat()}T{java_iso_text(value.time())}"
    if isinstance(value, dt.time):
        if value.tzinfo is not None:
            return value.isoformat()
        fraction = f".{value.microsecond:06d}".rstrip("0") if value.microsecond else ""
        return f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}{fraction}"
    return value.isoformat()


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
