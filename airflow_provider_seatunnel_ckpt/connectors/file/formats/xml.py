"""SeaTunnel's ``xml`` file format (``file_format_type = xml``, sources only), with the
semantics of its ``XmlReadStrategy``: a row is every element named ``xml_row_tag``, its
fields its attributes or child elements, matched to the schema by name. The document is
parsed as it streams (expat): memory holds the rows of one batch; entity declarations are
refused and external entities never fetched. How values convert and where this differs
from SeaTunnel: docs/seatunnel.md ("The xml format")."""

from __future__ import annotations

import codecs
import datetime as dt
import decimal
import json
import re
from collections.abc import Sequence
from typing import Any
from xml.parsers import expat

import numpy as np
import pyarrow as pa

from ...seatunnel_types import type_name

#: bytes read from the file per parser feed
READ_BLOCK = 1 << 20
_BLANK = re.compile(r"^\s*$")
#: what Java's Double.parseDouble accepts (after trimming), NaN and Infinity included
_JAVA_DOUBLE = re.compile(r"^[+-]?(NaN|Infinity|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[fFdD]?)$")
_BIG_DECIMAL = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


class _Refused(ValueError):
    pass


def _local(name: str) -> str:
    return name.rpartition(":")[2]


class XmlBatches:
    """The rows of one xml document as batches of string columns ``names`` (null: the
    row has no such field), at most ``batch_size`` rows each."""

    def __init__(
        self,
        stream: Any,
        encoding: str | None,
        row_tag: str,
        use_attributes: bool,
        names: Sequence[str],
        where: str,
        batch_size: int,
    ):
        self._stream = stream
        self._decoder = codecs.getincrementaldecoder(encoding or "utf-8")(errors="replace")
        self._row_tag = row_tag
        self._use_attributes = use_attributes
        self._names = list(names)
        self._wanted = set(names)
        self._where = where
        self._batch_size = batch_size
        self._eof = False
        #: rows in document order: a dict once the row element ended, None while it is open
        self._rows: list[dict[str, str] | None] = []
        #: per open element: (slot of the row it is, or -1; the field it fills in its parent row, or None)
        self._stack: list[tuple[int, str | None]] = []
        self._texts: list[list[str]] = []
        parser = expat.ParserCreate()
        parser.buffer_text = True
        parser.StartElementHandler = self._start
        parser.EndElementHandler = self._end
        parser.CharacterDataHandler = self._text
        parser.EntityDeclHandler = self._entity
        parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
        self._parser = parser
        #: the fields of the rows still open, by slot
        self._open_values: dict[int, dict[str, str]] = {}

    # -- expat handlers ------------------------------------------------------------------
    def _start(self, name: str, attributes: dict[str, str]) -> None:
        local = _local(name)
        field = None
        if self._stack and not self._use_attributes:
            parent_slot = self._stack[-1][0]
            if parent_slot >= 0 and local in self._wanted:
                field = local
        slot = -1
        if local == self._row_tag:
            slot = len(self._rows)
            self._rows.append(None)
            values: dict[str, str] = {}
            if self._use_attributes:
                for key, value in attributes.items():
                    if not key.startswith("xmlns") and _local(key) in self._wanted:
                        values[_local(key)] = value
            self._open_values[slot] = values
        self._stack.append((slot, field))
        self._texts.append([])

    def _end(self, name: str) -> None:
        slot, field = self._stack.pop()
        text = "".join(self._texts.pop())
        if field is not None:
            self._open_values[self._stack[-1][0]][field] = text
        if slot >= 0:
            values = self._open_values.pop(slot)
            self._rows[slot] = values if values else {}  # {}: no field of the schema, no row

    def _text(self, data: str) -> None:
        if self._texts:
            self._texts[-1].append(data)

    def _entity(self, *args: Any) -> None:
        raise _Refused("the document declares entities, which are not read (they can expand without bound)")

    # -- batches -------------------------------------------------------------------------
    def read_next_batch(self) -> pa.RecordBatch:
        while True:
            ready = 0
            while ready < len(self._rows) and self._rows[ready] is not None:
                ready += 1
            if ready >= self._batch_size or (self._eof and ready):
                rows = self._take(min(ready, self._batch_size))
                if rows:
                    columns = [pa.array([row.get(name) for row in rows], pa.string()) for name in self._names]
                    return pa.RecordBatch.from_arrays(columns, names=self._names)
                continue
            if self._eof:
                raise StopIteration
            self._feed()

    def _feed(self) -> None:
        data = self._stream.read(READ_BLOCK)
        final = not data
        text = self._decoder.decode(bytes(data) if data else b"", final=final)
        try:
            self._parser.Parse(text, final)
        except expat.ExpatError as exc:
            raise ValueError(f"{self._where}: not well-formed xml ({exc})") from None
        except _Refused as exc:
            raise ValueError(f"{self._where}: {exc}") from None
        self._eof = final

    def _take(self, count: int) -> list[dict[str, str]]:
        """The first ``count`` rows (all ended), less those without a field of the schema."""
        taken, self._rows = self._rows[:count], self._rows[count:]
        self._open_values = {slot - count: values for slot, values in self._open_values.items()}
        self._stack = [(slot - count if slot >= 0 else slot, field) for slot, field in self._stack]
        return [row for row in taken if row]

    def close(self) -> None:
        if hasattr(self._stream, "close"):
            self._stream.close()


# ---------------------------------------------------------------------------------------
# values


def _narrow(value: float, bits: int) -> int:
    """Java's ``(byte)``/``(short)``/``(int)`` of a double: to int (saturating, NaN 0), then wrapped."""
    if value != value:
        whole = 0
    else:
        whole = (
            int(max(-(2**31), min(2**31 - 1, np.trunc(value))))
            if abs(value) != float("inf")
            else (2**31 - 1 if value > 0 else -(2**31))
        )
    if bits < 32:
        whole = (whole + 2 ** (bits - 1)) % 2**bits - 2 ** (bits - 1)
    return whole


def _java_double(text: str, name: str) -> float:
    trimmed = text.strip()
    if not _JAVA_DOUBLE.match(trimmed):
        raise ValueError(f"column {name}: {text!r} is not a number")
    return float(trimmed.rstrip("fFdD"))


def _strict(text: str, pattern: str, digits: int, kind: str, name: str, java: str) -> Any:
    try:
        head, fraction = text, ""
        if digits:
            head, _, fraction = text.rpartition(".")
            if len(fraction) != digits or not fraction.isdigit():
                raise ValueError
        stamp = dt.datetime.strptime(head, pattern)
        micros = int(fraction[:6].ljust(6, "0")) if fraction else 0
        stamp = stamp.replace(microsecond=micros)
    except ValueError:
        raise ValueError(f"column {name}: {text!r} is not a {kind} in the format {java}") from None
    return stamp


def _value(text: str | None, target: pa.DataType, name: str, formats: XmlFormats) -> Any:
    if text is None:
        return None
    if _BLANK.match(text):
        return "" if pa.types.is_string(target) else None
    if pa.types.is_string(target):
        return text
    if pa.types.is_null(target):
        return None
    if pa.types.is_boolean(target):
        return text.lower() == "true"
    if pa.types.is_int8(target) or pa.types.is_int16(target) or pa.types.is_int32(target):
        return _narrow(_java_double(text, name), target.bit_width)
    if pa.types.is_int64(target):
        if not _BIG_DECIMAL.match(text):
            raise ValueError(f"column {name}: {text!r} is not a number")
        whole = int(decimal.Decimal(text))
        return (whole + 2**63) % 2**64 - 2**63
    if pa.types.is_float64(target):
        return _java_double(text, name)
    if pa.types.is_float32(target):
        return float(np.float32(_java_double(text, name)))
    if pa.types.is_decimal(target):
        if not _BIG_DECIMAL.match(text):
            raise ValueError(f"column {name}: {text!r} is not a decimal")
        value = decimal.Decimal(text)
        if (
            value != value.quantize(decimal.Decimal(1).scaleb(-target.scale), rounding=decimal.ROUND_DOWN)
            or len(value.quantize(decimal.Decimal(1).scaleb(-target.scale)).as_tuple().digits) > target.precision
        ):
            raise ValueError(f"column {name}: {text} does not fit {type_name(target)}")
        return value
    if pa.types.is_binary(target):
        return text.encode("utf-8")
    if pa.types.is_date(target):
        return _strict(text, formats.date[0], 0, "date", name, formats.date[1]).date()
    if pa.types.is_timestamp(target):
        pattern, digits, java = formats.datetime
        return _strict(text, pattern, digits, "timestamp", name, java)
    if pa.types.is_time(target):
        digits, java = formats.time
        return _strict(text, "%H:%M:%S", digits, "time", name, java).time()
    if pa.types.is_struct(target):
        parts = re.split(formats.delimiter, text)
        while parts and parts[-1] == "":  # Java's String.split drops trailing empty strings
            parts.pop()
        if len(parts) > target.num_fields:
            raise ValueError(f"column {name}: {len(parts)} parts for a row of {target.num_fields} fields")
        return {
            field.name: _value(parts[i] if i < len(parts) else None, field.type, f"{name}.{field.name}", formats)
            for i, field in enumerate(target)
        }
    if pa.types.is_map(target) or pa.types.is_list(target):
        try:
            parsed = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"column {name}: {text[:80]!r} is not json ({exc})") from None
        return _json_value(parsed, target, name, formats)
    raise ValueError(f"column {name}: {type_name(target)} cannot be read from xml")


def _json_value(value: Any, target: pa.DataType, name: str, formats: XmlFormats) -> Any:
    """A json value as ``target``, as Jackson coerces it into SeaTunnel's type class."""
    if value is None:
        return None
    if pa.types.is_map(target):
        if not isinstance(value, dict):
            raise ValueError(f"column {name}: expected a json object, got {json.dumps(value)[:80]}")
        return [
            (_json_value(k, target.key_type, name, formats), _json_value(v, target.item_type, name, formats))
            for k, v in value.items()
        ]
    if pa.types.is_list(target):
        if not isinstance(value, list):
            raise ValueError(f"column {name}: expected a json array, got {json.dumps(value)[:80]}")
        return [_json_value(v, target.value_type, name, formats) for v in value]
    if isinstance(value, (dict, list)):
        raise ValueError(f"column {name}: expected a {type_name(target)}, got {json.dumps(value)[:80]}")
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, str):
        text = value
    else:
        text = json.dumps(value)
    return _value(text, target, name, formats)


class XmlFormats:
    """The configured date, time and timestamp formats (their strptime form and digits)
    and the row field delimiter."""

    def __init__(self, date: tuple[str, str], datetime: tuple[str, int, str], time: tuple[int, str], delimiter: str):
        self.date, self.datetime, self.time, self.delimiter = date, datetime, time, delimiter


def convert(col: pa.Array, target: pa.DataType, name: str, formats: XmlFormats) -> pa.Array:
    """Field texts (a string array; null: no such field) as ``target``."""
    values = [_value(text, target, name, formats) for text in col.to_pylist()]
    try:
        return pa.array(values, target)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
        raise ValueError(f"column {name}: {str(exc).splitlines()[0]}") from None
