"""SeaTunnel's ``excel`` file format (``file_format_type = excel``): ``.xlsx`` workbooks,
read and written through openpyxl (the ``excel`` extra), ``.xls`` read through xlrd, with
the semantics of SeaTunnel's ``ExcelReadStrategy`` and ``ExcelGenerator``: how cells
convert, how rows are written and where this differs from SeaTunnel is in
docs/seatunnel.md ("The excel format")."""

from __future__ import annotations

import datetime as dt
import decimal
import io
import json
import logging
import math
import os
import random
import re
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from ...java_text import java_float_text
from ...seatunnel_types import type_name

log = logging.getLogger(__name__)

#: an archive's xlsx entry is read into memory (openpyxl seeks): entries above this are refused
MAX_ENTRY_BYTES = 256 << 20
SUFFIXES = (".xlsx", ".xls")

_JAVA_DOUBLE = re.compile(r"^[+-]?(NaN|Infinity|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[fFdD]?)$")
_INT_BITS = {pa.int8(): 8, pa.int16(): 16, pa.int32(): 32, pa.int64(): 64}


#: OOXML's escape of characters xml cannot hold (_x0001_), as POI writes and reads them
_ESCAPED = re.compile(r"_x([0-9A-Fa-f]{4})_")
_XML_ILLEGAL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")


def ooxml_escape(text: str) -> str:
    """Control characters (SeaTunnel's \\u0001 row delimiter) as ``_xHHHH_``; a literal
    ``_xHHHH_`` keeps its underscore as ``_x005F_``."""
    if "_x" in text:
        text = _ESCAPED.sub(lambda m: "_x005F" + m.group(0), text)
    return _XML_ILLEGAL.sub(lambda m: f"_x{ord(m.group(0)):04X}_", text)


def ooxml_unescape(text: str) -> str:
    return _ESCAPED.sub(lambda m: chr(int(m.group(1), 16)), text) if "_x" in text else text


class _Bad(Exception):
    """A cell that cannot become its column's type (the reader adds file, row and column)."""


# ---------------------------------------------------------------------------------------
# Java's text of a cell value (SeaTunnel converts most types through field.toString())


def java_datetime(value: dt.datetime) -> str:
    """``LocalDateTime.toString``: seconds only when not zero, fractions in 3 or 6 digits."""
    text = value.strftime("%Y-%m-%dT%H:%M")
    if value.second or value.microsecond:
        text += f":{value.second:02d}"
    if value.microsecond:
        text += f".{value.microsecond // 1000:03d}" if value.microsecond % 1000 == 0 else f".{value.microsecond:06d}"
    return text


def _java_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):  # POI: every numeric cell is a double
        return java_float_text(float(value))
    if isinstance(value, dt.datetime):
        return java_datetime(value)
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    return str(value)


def _java_double(value: Any) -> float:
    """``Double.parseDouble(field.toString())``."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    text = _java_text(value).strip()
    if not _JAVA_DOUBLE.match(text):
        raise _Bad("not a number")
    return float(text.rstrip("fFdD").replace("Infinity", "inf"))


def _java_integer(value: float, bits: int) -> int:
    """Java's ``(int)``/``(long)`` cast of a double (NaN 0, saturating), then ``(byte)``/``(short)`` wrap."""
    if math.isnan(value):
        return 0
    wide = 64 if bits == 64 else 32
    low, high = -(1 << (wide - 1)), (1 << (wide - 1)) - 1
    number = high if value >= high else low if value <= low else int(value)
    if bits < wide:
        number = ((number + (1 << (bits - 1))) % (1 << bits)) - (1 << (bits - 1))
    return number


# ---------------------------------------------------------------------------------------
# text cells holding dates and times: any of SeaTunnel's formats, as the text reader reads them

_DATE_PATTERNS = ("%Y-%m-%d", "%Y.%m.%d", "%Y/%m/%d", "%Y%m%d")
_SEPARATED = re.compile(r"^(\d{4})[./](\d{2})[./](\d{2})")


def _parse_date(text: str) -> dt.date:
    for pattern in _DATE_PATTERNS:
        try:
            return dt.datetime.strptime(text.strip(), pattern).date()
        except ValueError:
            pass
    raise _Bad("not a date (yyyy-MM-dd and SeaTunnel's other formats)")


def _parse_timestamp(text: str) -> dt.datetime:
    text = _SEPARATED.sub(r"\1-\2-\3", text.strip())
    if re.fullmatch(r"\d{14}", text):
        text = f"{text[:4]}-{text[4:6]}-{text[6:8]} {text[8:10]}:{text[10:12]}:{text[12:]}"
    text = re.sub(r"(\.\d{6})\d+$", r"\1", text)  # nanoseconds: microseconds here
    try:
        return dt.datetime.fromisoformat(text)
    except ValueError:
        raise _Bad("not a timestamp (yyyy-MM-dd HH:mm:ss and SeaTunnel's other formats)") from None


def _parse_time(text: str) -> dt.time:
    try:
        return dt.time.fromisoformat(text.strip())
    except ValueError:
        raise _Bad("not a time (HH:mm:ss[.SSS])") from None


# ---------------------------------------------------------------------------------------
# a cell value -> a Python value of the column's Arrow type (SeaTunnel's convert())


def convert_cell(value: Any, kind: pa.DataType, delimiter: str) -> Any:
    if value is None or pa.types.is_null(kind):
        return None
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return value if isinstance(value, str) else _java_text(value)
    if pa.types.is_boolean(kind):
        return value if isinstance(value, bool) else _java_text(value).lower() == "true"
    if pa.types.is_integer(kind):
        return _java_integer(_java_double(value), _INT_BITS.get(kind, 64))
    if pa.types.is_floating(kind):
        number = _java_double(value)
        return float(np.float32(number)) if kind == pa.float32() else number
    if pa.types.is_decimal(kind):
        number = decimal.Decimal(java_float_text(_java_double(value)))  # BigDecimal.valueOf(double)
        if not number.is_finite():
            raise _Bad("not a finite number")
        context = decimal.Context(prec=kind.precision + kind.scale + 40, rounding=decimal.ROUND_HALF_UP)
        number = number.quantize(decimal.Decimal(1).scaleb(-kind.scale), context=context)
        if len(number.as_tuple().digits) > kind.precision:
            raise _Bad(f"more than {kind.precision} digits")
        return number
    if pa.types.is_date(kind):
        if isinstance(value, dt.datetime):
            return value.date()
        if isinstance(value, dt.date):
            return value
        if isinstance(value, str):
            return _parse_date(value)
        raise _Bad("not a date")
    if pa.types.is_timestamp(kind):
        if isinstance(value, dt.datetime):
            return value.replace(tzinfo=None)
        if isinstance(value, dt.date):
            return dt.datetime.combine(value, dt.time())
        if isinstance(value, str):
            return _parse_timestamp(value)
        raise _Bad("not a timestamp")
    if pa.types.is_time(kind):
        if isinstance(value, dt.datetime):
            return value.time()
        if isinstance(value, dt.time):
            return value
        if isinstance(value, str):
            return _parse_time(value)
        raise _Bad("not a time")
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        return _java_text(value).encode("utf-8")
    if pa.types.is_list(kind) or pa.types.is_map(kind):
        if not isinstance(value, str):
            raise _Bad("not json text")
        try:
            parsed = json.loads(value)
        except ValueError:
            raise _Bad("not json") from None
        if pa.types.is_map(kind):
            if not isinstance(parsed, dict):
                raise _Bad("not a json object")
            return list(parsed.items())
        if not isinstance(parsed, list):
            raise _Bad("not a json array")
        return parsed
    if pa.types.is_struct(kind):
        parts = _java_split(_java_text(value), delimiter)
        return {
            field.name: convert_cell(parts[i], field.type, delimiter) if i < len(parts) else None
            for i, field in enumerate(kind)
        }
    raise _Bad(f"{type_name(kind)} cannot be read from excel cells")


def _java_split(text: str, delimiter: str) -> list[str]:
    """``String.split(regex)``: trailing empty parts dropped."""
    parts = text.split(delimiter) if re.escape(delimiter) == delimiter else re.split(delimiter, text)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


# ---------------------------------------------------------------------------------------
# reading


def _column_letter(index: int) -> str:
    letters = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


def read_entry(stream: Any, size: int, where: str) -> io.BytesIO:
    """An archive's xlsx entry in memory (openpyxl needs a seekable file)."""
    if size > MAX_ENTRY_BYTES:
        raise ValueError(
            f"{where}: the entry is {size} bytes; xlsx entries of archives are read into memory, up to "
            f"{MAX_ENTRY_BYTES} bytes (store larger workbooks unarchived)"
        )
    data = stream.read(MAX_ENTRY_BYTES + 1)
    if len(data) > MAX_ENTRY_BYTES:
        raise ValueError(f"{where}: the entry is larger than {MAX_ENTRY_BYTES} bytes (the limit for xlsx entries)")
    stream.close()
    return io.BytesIO(data)


def _guarded(rows: Any, where: str) -> Any:
    """openpyxl parses the sheet as it goes: a broken one fails mid-way, as one line."""
    try:
        yield from rows
    except Exception as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValueError(f"{where}: not a valid xlsx workbook: {detail}") from None


#: the signature of an OLE2 compound file, the container of every Excel 97-2003 workbook
_OLE2 = bytes.fromhex("d0cf11e0a1b11ae1")


def xls_sheets(data: bytes) -> tuple[list[str], Any]:
    """(sheet names, rows(name) -> iterator of (sheet row number, cell values)) of an .xls
    workbook, read by xlrd: what SeaTunnel takes from POI's HSSFWorkbook (BIFF8 only), a
    date-formatted number as a date-time, an error cell null, a row without cells no row."""
    import xlrd

    if not data.startswith(_OLE2):
        raise ValueError("not an OLE2 compound file")
    book = xlrd.open_workbook(file_contents=data, ragged_rows=True, logfile=io.StringIO())  # not our stdout
    if book.biff_version < 80:
        raise ValueError("not a BIFF8 workbook (Excel 97-2003; older .xls versions are not read)")

    def value(cell: Any) -> Any:
        if cell.ctype == xlrd.XL_CELL_DATE:
            return xlrd.xldate.xldate_as_datetime(cell.value, book.datemode)
        if cell.ctype == xlrd.XL_CELL_BOOLEAN:
            return bool(cell.value)
        return None if cell.ctype in (xlrd.XL_CELL_EMPTY, xlrd.XL_CELL_BLANK, xlrd.XL_CELL_ERROR) else cell.value

    def rows(name: str) -> Any:
        sheet = book.sheet_by_name(name)
        return (
            (number + 1, [value(cell) for cell in sheet.row(number)])
            for number in range(sheet.nrows)
            if sheet.row_len(number)
        )

    return book.sheet_names(), rows


class ExcelBatches:
    """The rows of one sheet of an xlsx or xls workbook as record batches of ``fields``
    (``(sheet column, name, type)``), ``batch_rows`` rows at most each."""

    def __init__(
        self,
        stream: Any,
        name: str,
        where: str,
        sheet_name: str | None,
        skip: int,
        fields: Sequence[tuple[int, str, pa.DataType]],
        delimiter: str,
        batch_rows: int,
    ):
        if not name.endswith(SUFFIXES):
            raise ValueError(f"{where}: only .xlsx and .xls files are read as excel, as in SeaTunnel")
        self._stream = stream
        self._where = where
        self._book: Any = None
        self._fields = list(fields)
        self._delimiter = delimiter
        self._batch_rows = max(1, batch_rows)
        self._row_number = skip  # the sheet row (1-based) last read
        width = max((index for index, _, _ in self._fields), default=0) + 1
        kind = "xls" if name.endswith(".xls") else "xlsx"
        try:
            if kind == "xls":
                names, rows = xls_sheets(stream.read())
            else:
                import openpyxl

                with warnings.catch_warnings():  # POI's workbooks carry no default style; openpyxl says so each time
                    warnings.simplefilter("ignore", UserWarning)
                    self._book = openpyxl.load_workbook(stream, read_only=True, data_only=True)
                names = self._book.sheetnames
        except Exception as exc:  # zip, xml and BIFF errors alike: the file is not a workbook
            detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ValueError(f"{where}: not a valid {kind} workbook: {detail}") from None
        if sheet_name is not None and sheet_name not in names:
            self.close()
            raise ValueError(
                f"{where}: sheet_name {sheet_name!r}: no such sheet; the workbook has "
                f"{', '.join(repr(n) for n in names)}"
            )
        if not names:
            self.close()
            raise ValueError(f"{where}: not a valid {kind} workbook: it has no sheet")
        sheet = sheet_name if sheet_name is not None else names[0]
        if kind == "xls":
            try:  # parsed here, so a broken sheet is the same one line
                self._rows: Any = iter([(number, values) for number, values in rows(sheet) if number > skip])
            except Exception as exc:
                raise ValueError(
                    f"{where}: not a valid xls workbook: sheet {sheet!r}: {exc or type(exc).__name__}"
                ) from None
        else:
            self._rows = _guarded(
                enumerate(self._book[sheet].iter_rows(min_row=skip + 1, max_col=width), skip + 1), where
            )

    def read_next_batch(self) -> pa.RecordBatch:
        columns: list[list[Any]] = [[] for _ in self._fields]
        count = 0
        for self._row_number, cells in self._rows:  # noqa: B020 - assigns self._row_number, not self
            if self._book is not None:  # openpyxl's cells; error cells are null, as SeaTunnel reads them
                cells = [None if cell.data_type == "e" else cell.value for cell in cells]
            values = [ooxml_unescape(v) if isinstance(v, str) else v for v in cells]
            if all(v is None for v in values):  # SeaTunnel leaves out rows the sheet does not have
                continue
            for column, (index, name, kind) in zip(columns, self._fields):
                value = values[index] if index < len(values) else None
                try:
                    column.append(convert_cell(value, kind, self._delimiter))
                except (_Bad, ValueError, TypeError, OverflowError, ArithmeticError) as exc:
                    shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."
                    raise ValueError(
                        f"{self._where}: row {self._row_number}, column {name} "
                        f"({_column_letter(index)}{self._row_number}): cannot read "
                        f"{type_name(kind)} from {shown}: {exc}"
                    ) from None
            count += 1
            if count >= self._batch_rows:
                break
        if not count:
            raise StopIteration
        arrays = []
        for column, (_, name, kind) in zip(columns, self._fields):
            try:
                arrays.append(pa.array(column, kind))
            except (pa.ArrowException, ValueError, TypeError, OverflowError) as exc:
                first = self._row_number - count + 1
                raise ValueError(
                    f"{self._where}: rows {first}-{self._row_number}, column {name}: cannot read "
                    f"{type_name(kind)}: {str(exc).splitlines()[0]}"
                ) from None
        return pa.RecordBatch.from_arrays(arrays, names=[name for _, name, _ in self._fields])

    def close(self) -> None:
        if self._book is not None:
            self._book.close()
        self._stream.close()


# ---------------------------------------------------------------------------------------
# writing


def _maps_as_dicts(value: Any, kind: pa.DataType) -> Any:
    """A value with its maps as dicts, the last of equal keys kept: what pyarrow 19 and
    later give for ``to_pylist(maps_as_pydicts="lossy")`` (18, the floor, cannot)."""
    if value is None:
        return None
    if pa.types.is_map(kind):
        return {key: _maps_as_dicts(item, kind.item_type) for key, item in value}
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        return [_maps_as_dicts(item, kind.value_type) for item in value]
    if pa.types.is_struct(kind):
        return {field.name: _maps_as_dicts(value[field.name], field.type) for field in kind}
    return value


def _exact_numbers() -> None:
    """openpyxl writes numbers as ``%.16g``, which loses the last digit of some doubles
    (POI writes Double.toString, exact); its cell writer gets a formatter that writes the
    shortest exact form instead. Same output for every number ``%.16g`` keeps exact."""
    from openpyxl.cell import _writer
    from openpyxl.compat import safe_string

    def exact(value: Any) -> str:
        if isinstance(value, float) and math.isfinite(value):
            text = "%.16g" % value
            return text if float(text) == value else repr(value)
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        return safe_string(value)

    if getattr(_writer.safe_string, "__name__", "") != "exact":
        _writer.safe_string = exact


class ExcelEncoder:
    """One xlsx output file (the file sink's encoder): rows stream into openpyxl's
    write-only sheet (a temporary file), the workbook is zipped into ``out`` at ``finish``."""

    #: rows go to openpyxl's temporary file, not memory
    gathered_bytes = 0

    def __init__(
        self,
        schema: pa.Schema,
        out: Any,
        sheet_name: str | None,
        field_delimiter: str,
        date_format: str,
        datetime_format: str,
        time_format: str,
        formats: Any,
    ):
        import openpyxl
        from openpyxl.cell import WriteOnlyCell

        _exact_numbers()
        self._cell = WriteOnlyCell
        self.schema = schema
        self.rows = 0
        self.out = out
        self.path = out.path
        self._book = openpyxl.Workbook(write_only=True)
        # SeaTunnel: String.format("Sheet%d", new Random().nextInt())
        self._sheet = self._book.create_sheet(sheet_name or f"Sheet{random.randint(-(1 << 31), (1 << 31) - 1)}")
        self._delimiter = field_delimiter
        self._formats = formats  # formats.text.TextFormats: how a row's dates are written as text
        self._styles = [self._style(field.type, date_format, datetime_format, time_format) for field in schema]
        self._sheet.append(schema.names)  # SeaTunnel's ExcelGenerator always writes the header row

    @staticmethod
    def _style(kind: pa.DataType, date_format: str, datetime_format: str, time_format: str) -> str:
        if pa.types.is_date(kind):
            return date_format
        if pa.types.is_timestamp(kind):
            return datetime_format
        if pa.types.is_time(kind):
            return time_format
        if (
            pa.types.is_string(kind)
            or pa.types.is_large_string(kind)
            or pa.types.is_binary(kind)
            or pa.types.is_nested(kind)
        ):
            return "@"
        return "General"

    @property
    def size(self) -> int:
        """The sheet's xml so far (the file sink cuts files by it; the xlsx is smaller)."""
        writer = self._sheet._writer
        try:
            return os.path.getsize(writer.out) if writer is not None else 0
        except (OSError, TypeError):
            return 0

    def write(self, batch: pa.RecordBatch) -> None:
        if not batch.num_rows:
            return
        kinds = [field.type for field in batch.schema]
        columns = [
            [_maps_as_dicts(v, kind) for v in batch.column(i).to_pylist()]
            if pa.types.is_map(kind)
            else batch.column(i).to_pylist()
            for i, kind in enumerate(kinds)
        ]
        for values in zip(*columns):
            row = []
            for value, kind, style in zip(values, kinds, self._styles):
                if value is None:
                    row.append(None)
                    continue
                value = self._cell_value(value, kind)
                cell = self._cell(self._sheet, ooxml_escape(value) if isinstance(value, str) else value)
                cell.number_format = style
                row.append(cell)
            self._sheet.append(row)
        self.rows += batch.num_rows

    def _cell_value(self, value: Any, kind: pa.DataType) -> Any:
        if pa.types.is_decimal(kind):
            return float(value)  # SeaTunnel: Double.parseDouble(value.toString())
        if pa.types.is_timestamp(kind):
            return value.replace(tzinfo=None)
        if pa.types.is_time(kind):
            return dt.datetime.combine(dt.date(1970, 1, 1), value)  # Timestamp.valueOf(time.atDate(1970-01-01))
        if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
            return "[" + ", ".join(str(b - 256 if b > 127 else b) for b in value) + "]"  # List<Byte>.toString
        if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_map(kind):
            return json.dumps(value, default=self._json_default, ensure_ascii=False, separators=(",", ":"))
        if pa.types.is_struct(kind):
            return self._row_text(value, kind)
        return value

    def _row_text(self, value: dict, kind: pa.StructType) -> str:
        """ExcelGenerator.convert: each field as text, joined by ``field_delimiter``."""
        parts = []
        for field in kind:
            item, sub = value.get(field.name), field.type
            if item is None:
                parts.append("")
            elif pa.types.is_struct(sub):
                parts.append(self._row_text(item, sub))
            elif pa.types.is_list(sub) or pa.types.is_map(sub):
                parts.append(
                    json.dumps(
                        dict(item) if pa.types.is_map(sub) else item,
                        default=self._json_default,
                        ensure_ascii=False,
                        separators=(",", ":"),
                    )
                )
            elif isinstance(item, bool):
                parts.append("true" if item else "false")
            elif isinstance(item, float):
                parts.append(java_float_text(item, single=sub == pa.float32()))
            elif isinstance(item, dt.datetime):
                parts.append(item.strftime(self._formats.datetime))
            elif isinstance(item, dt.date):
                parts.append(item.strftime(self._formats.date))
            elif isinstance(item, dt.time):
                parts.append(item.strftime("%H:%M:%S"))
            elif isinstance(item, bytes):
                parts.append(item.decode("utf-8", "replace"))
            else:
                parts.append(str(item))
        return self._delimiter.join(parts)

    @staticmethod
    def _json_default(value: Any) -> Any:
        if isinstance(value, (dt.date, dt.time)):
            return value.isoformat()
        if isinstance(value, decimal.Decimal):
            return float(value)
        if isinstance(value, bytes):
            return list(value)
        return str(value)

    def finish(self) -> int:
        self._book.save(self.out)  # zipfile writes to a stream without seeking (data descriptors)
        self.out.close()
        return self.rows

    def abandon(self) -> None:
        """The file is discarded: drop openpyxl's temporary file."""
        writer = self._sheet._writer
        if writer is None:
            return
        try:
            self._sheet.close()  # ends the sheet's xml stream in order (lxml refuses otherwise)
        except Exception as exc:  # the file is being thrown away; its temporary file still goes
            log.debug("excel encoder %s: closing the discarded sheet: %s", self.path, exc)
        try:
            writer.cleanup()
        except (OSError, ValueError):
            pass
