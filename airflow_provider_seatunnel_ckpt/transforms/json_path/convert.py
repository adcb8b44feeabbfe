"""A path's result converted to the column's ``dest_type`` as SeaTunnel does it: Jayway's
result made a Jackson node (:func:`result_node`), then SeaTunnel's JsonToRowConverters
(:class:`Converters`), with Java's number parsing and its errors. A value that does not
convert fails the job (:class:`.failures.HardError`)."""

from __future__ import annotations

import base64
import binascii
import decimal
import logging
import math
import re
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from ...connectors.java_text import java_decimal_text, node_json, node_text
from ...connectors.seatunnel_types import type_name
from ...errors import ConfigError
from .failures import HardError
from .java_dates import parse_date, parse_time, parse_timestamp

log = logging.getLogger(__name__)

# Python's default context rounds past 28 digits; BigDecimal does not
_DEC = decimal.Context(prec=1000, Emin=-999999, Emax=999999)

_JAVA_FLOAT = re.compile(
    r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?"
    r"|0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+[fFdD]?)"
)
_JAVA_DECIMAL = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_RANGES = {8: (-(2**7), 2**7 - 1), 16: (-(2**15), 2**15 - 1), 32: (-(2**31), 2**31 - 1), 64: (-(2**63), 2**63 - 1)}
_CONTROL = "".join(chr(i) for i in range(33))


def _java_trim(text: str) -> str:
    """String.trim: characters up to the space."""
    return text.strip(_CONTROL)


def _parse_java_int(text: str, bits: int) -> int:
    low, high = _RANGES[bits]
    if not re.fullmatch(r"[+-]?\d+", text):
        raise HardError(f'NumberFormatException: For input string: "{text}"')
    number = int(text)
    if not low <= number <= high:
        raise HardError(f'NumberFormatException: Value out of range. Value:"{text}"')
    return number


def _parse_java_float(text: str) -> float:
    """Double.parseDouble / Float.parseFloat (they trim themselves)."""
    body = _java_trim(text)
    if not _JAVA_FLOAT.fullmatch(body):
        raise HardError(
            f'NumberFormatException: For input string: "{text}"' if body else "NumberFormatException: empty String"
        )
    core = body.rstrip("fFdD")  # the type suffix (a hex float's exponent is decimal digits)
    if "NaN" in core:
        return math.nan
    if "Infinity" in core:
        return -math.inf if core.startswith("-") else math.inf
    if "x" in core.lower():
        return float.fromhex(core)
    return float(core)


class Converters:
    """Builds SeaTunnel's converter for one dest_type; warns once when a time loses digits."""

    def __init__(self, where: str):
        self.where = where
        self.warned = False

    def build(self, kind: pa.DataType) -> Callable[[Any], Any]:
        inner = self._not_null(kind)

        def nullable(node: Any) -> Any:
            return None if node is None else inner(node)

        return nullable

    def _not_null(self, kind: pa.DataType) -> Callable[[Any], Any]:
        if pa.types.is_null(kind):
            return lambda node: None
        if pa.types.is_string(kind):
            return lambda node: node_json(node) if isinstance(node, (dict, list)) else node_text(node)
        if pa.types.is_boolean(kind):
            return lambda node: node if isinstance(node, bool) else _java_trim(node_text(node)).lower() == "true"
        if pa.types.is_integer(kind):
            bits = kind.bit_width
            if bits <= 16:
                return lambda node: _parse_java_int(_java_trim(node_text(node)), bits)
            return lambda node: _to_int(node, bits)
        if pa.types.is_floating(kind):
            return lambda node: node if isinstance(node, float) else _parse_java_float(node_text(node))
        if pa.types.is_decimal(kind):
            return lambda node: _to_decimal(node, kind)
        if pa.types.is_date(kind):
            return lambda node: parse_date(node_text(node))
        if pa.types.is_time(kind):
            return lambda node: parse_time(node_text(node), self._warn)
        if pa.types.is_timestamp(kind):
            return lambda node: parse_timestamp(node_text(node), self._warn)
        if pa.types.is_binary(kind):
            return _to_bytes
        if pa.types.is_list(kind):
            element = self.build(kind.value_type)

            def to_list(node: Any) -> list:
                if isinstance(node, list):
                    return [element(v) for v in node]
                if isinstance(node, dict):  # ObjectNode.get(i) is null
                    return [None] * len(node)
                return []

            return to_list
        if pa.types.is_map(kind):
            key_conv, value_conv = self.build(kind.key_type), self.build(kind.item_type)

            def to_map(node: Any) -> list:
                if not isinstance(node, dict):
                    return []
                out: dict[Any, Any] = {}
                for key, value in node.items():
                    converted = key_conv(key)
                    if converted is None:
                        raise HardError(f"map key {key!r} converts to null")
                    out[converted] = value_conv(value)
                return list(out.items())

            return to_map
        if pa.types.is_struct(kind):
            fields = [(f.name, self.build(f.type)) for f in kind]

            def to_row(node: Any) -> dict:
                row = {}
                for index, (name, conv) in enumerate(fields):
                    if isinstance(node, list):
                        field = node[index] if index < len(node) else None
                    elif isinstance(node, dict):
                        field = node.get(name)
                    else:
                        field = None
                    try:
                        row[name] = conv(field)
                    except HardError as err:
                        raise HardError(f"Field $.{name} in {node_json(node)}: {err}") from None
                return row

            return to_row
        raise ConfigError(self.where, f"dest_type {type_name(kind)} is not supported here")

    def _warn(self, text: str) -> None:
        if not self.warned:
            self.warned = True
            log.warning(
                "%s: %r has digits past the microsecond; they are dropped (SeaTunnel keeps nanoseconds)",
                self.where,
                text,
            )


def _to_int(node: Any, bits: int) -> int:
    low, high = _RANGES[bits]
    if not isinstance(node, bool) and isinstance(node, (int, float, decimal.Decimal)):
        if isinstance(node, float) and math.isnan(node):
            pass
        elif low <= node <= high or (isinstance(node, float) and float(low) <= node <= float(high)):
            return max(low, min(high, int(node)))  # (int) / (long) truncates
    return _parse_java_int(_java_trim(node_text(node)), bits)


def _to_decimal(node: Any, kind: pa.Decimal128Type) -> decimal.Decimal:
    if isinstance(node, decimal.Decimal):
        value = node
    else:
        text = node_text(node)  # new BigDecimal(text): no trim
        if not _JAVA_DECIMAL.fullmatch(text):
            raise HardError(
                "NumberFormatException: Character array is missing \"exponent\" mark 'e' or 'E'."
                if text
                else "NumberFormatException: empty String"
            )
        value = decimal.Decimal(text)
    fitted = value.quantize(decimal.Decimal(1).scaleb(-kind.scale), context=_DEC)
    if fitted != value or abs(fitted) >= decimal.Decimal(10) ** (kind.precision - kind.scale):
        raise HardError(
            f"{java_decimal_text(value)} does not fit {type_name(kind)} (SeaTunnel passes the unscaled "
            "value on; here the column's type must hold it)"
        )
    return fitted


def _to_bytes(node: Any) -> bytes | None:
    if not isinstance(node, str):
        return None  # JsonNode.binaryValue() of anything but text is null
    try:
        return base64.b64decode(re.sub(r"[\x00-\x20]", "", node), validate=True)
    except (binascii.Error, ValueError) as err:
        raise HardError(f"not base64 text: {err}") from None


def _normalise_decimal(value: decimal.Decimal) -> decimal.Decimal:
    """Jackson's JsonNodeFactory strips a BigDecimal's trailing zeros (zero is ``0``)."""
    if value.is_zero():
        return decimal.Decimal(0)
    return value.normalize(_DEC)


def result_node(result: Any) -> Any:
    """Jackson's valueToTree of Jayway's result: BigDecimals lose their trailing zeros."""
    if isinstance(result, decimal.Decimal):
        return _normalise_decimal(result)
    if isinstance(result, list):
        return [result_node(v) for v in result]
    if isinstance(result, dict):
        return {k: result_node(v) for k, v in result.items()}
    return result
