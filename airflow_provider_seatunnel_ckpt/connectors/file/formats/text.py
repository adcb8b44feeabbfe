"""SeaTunnel's ``text`` files (and the text values of ``csv``): one row per line, fields
split by ``field_delimiter``, nested values split by the separators of the next levels,
a blank field null, dates and times in SeaTunnel's formats; values converted to and from
Arrow, vectorised. docs/seatunnel.md says where this differs from SeaTunnel."""

from __future__ import annotations

import base64
import logging
import re
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ....errors import ConfigError
from ....storage.filesystem import NewFile
from ....storage.urls import RangeFile
from ...seatunnel_types import type_name
from ..codecs import _encode
from ..config import DATE_FORMATS, DATETIME_FORMATS, SEPARATORS, TIME_FORMATS
from ..storage import STREAM_BLOCK_SIZE
from .csv import _csv_quote, split_quoted

log = logging.getLogger(__name__)


def _blank_to_null(col: pa.Array) -> pa.Array:
    """SeaTunnel's ``StringUtils.isBlank``: an empty or whitespace-only field is null."""
    blank = pc.match_substring_regex(col, r"^\s*$")
    return pc.if_else(blank, pa.scalar(None, col.type), col)


def _element(lists: pa.ListArray, index: int) -> pa.Array:
    """Element ``index`` of every list; null where a list is shorter or null."""
    offsets, values = _list_parts(lists)
    offsets = np.asarray(offsets, dtype=np.int64)
    starts, lengths = offsets[:-1], offsets[1:] - offsets[:-1]
    valid = (lengths > index) & np.asarray(lists.is_valid(), dtype=bool)
    positions = np.where(valid, starts + index, 0)
    return values.take(pa.array(positions, type=pa.int64(), mask=~valid))


def _split(col: pa.Array, separator: str) -> pa.ListArray:
    return pc.split_pattern(col, pattern=separator)


def _list_parts(col: pa.Array) -> tuple[pa.Array, pa.Array]:
    """(offsets from 0, values) of a list or map array, also of a slice of one."""
    offsets = np.asarray(col.offsets, dtype=np.int64)
    start = int(offsets[0]) if len(offsets) else 0
    values = col.values.slice(start, int(offsets[-1]) - start if len(offsets) else 0)
    return pa.array(offsets - start, pa.int32()), values


def _rebuild_list(lists: pa.Array, values: pa.Array) -> pa.Array:
    return pa.ListArray.from_arrays(_list_parts(lists)[0], values, mask=lists.is_null())


class TextFormats:
    """How dates, times and timestamps are written (``date_format``...); reading
    recognises any of SeaTunnel's formats."""

    def __init__(
        self,
        date_format: str = "yyyy-MM-dd",
        datetime_format: str = "yyyy-MM-dd HH:mm:ss",
        time_format: str = "HH:mm:ss",
    ):
        self.date = DATE_FORMATS[date_format]
        self.datetime, self.datetime_digits = DATETIME_FORMATS[datetime_format]
        self.time_digits = TIME_FORMATS[time_format]


_DATE_SEPARATED = (re.compile(r"^(\d{4})[./](\d{2})[./](\d{2})"), r"\1-\2-\3")
_DATE_CHINESE = (re.compile(r"^(\d{4})年(\d{2})月(\d{2})日"), r"\1-\2-\3")
_DATE_COMPACT = (r"^(\d{4})(\d{2})(\d{2})$", r"\1-\2-\3")
_DATETIME_COMPACT = (r"^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})$", r"\1-\2-\3 \4:\5:\6")
_TIME_CHINESE = (r"(\d{2})时(\d{2})分(\d{2})秒$", r"\1:\2:\3")


def _normalise_dates(col: pa.Array) -> pa.Array:
    """yyyy.MM.dd, yyyy/MM/dd, yyyy年MM月dd日 -> yyyy-MM-dd (the rest of the value stays)."""
    for pattern, replacement in (_DATE_SEPARATED, _DATE_CHINESE):
        col = pc.replace_substring_regex(col, pattern=pattern.pattern, replacement=replacement)
    return col


def _parse_date(col: pa.Array, name: str) -> pa.Array:
    col = pc.replace_substring_regex(_normalise_dates(col), pattern=_DATE_COMPACT[0], replacement=_DATE_COMPACT[1])
    return _cast(col, pa.date32(), name, "a date (yyyy-MM-dd, yyyy.MM.dd, yyyy/MM/dd, yyyyMMdd)")


def _parse_timestamp(col: pa.Array, name: str) -> pa.Array:
    col = pc.replace_substring_regex(col, pattern=_DATETIME_COMPACT[0], replacement=_DATETIME_COMPACT[1])
    col = pc.replace_substring_regex(_normalise_dates(col), pattern=_TIME_CHINESE[0], replacement=_TIME_CHINESE[1])
    # minutes without seconds (yyyy-MM-dd HH:mm), as SeaTunnel's patterns accept
    col = pc.replace_substring_regex(col, pattern=r"^(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2})$", replacement=r"\1:00")
    parsed = _cast(col, pa.timestamp("ns"), name, "a timestamp (yyyy-MM-dd HH:mm:ss and SeaTunnel's other formats)")
    return pc.cast(parsed, pa.timestamp("us"), safe=False)


def _parse_time(col: pa.Array, name: str) -> pa.Array:
    stamps = _cast(
        pc.binary_join_element_wise("1970-01-01 ", col, ""), pa.timestamp("us"), name, "a time (HH:mm:ss[.SSS])"
    )
    return pc.cast(pc.cast(stamps, pa.int64()), pa.time64("us"))


def _cast(col: pa.Array, target: pa.DataType, name: str, what: str | None = None) -> pa.Array:
    try:
        return pc.cast(col, target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        detail = str(exc).split("\n")[0]
        raise ValueError(f"column {name}: cannot read {what or type_name(target)}: {detail}") from None


def from_text(
    col: pa.Array,
    target: pa.DataType,
    name: str,
    level: int = 0,
    base64_bytes: bool = False,
    blank_is_null: bool = True,
) -> pa.Array:
    """Text fields (a string array) as values of ``target``, as SeaTunnel's text format
    reads them: blank is null (``blank_is_null``: text and csv files; a json string is
    what it says), nested values split by the separator of the next level."""
    if pa.types.is_binary(col.type) or pa.types.is_large_binary(col.type):
        col = _cast(col, pa.string(), name, "UTF-8 text")
    if pa.types.is_null(target):
        return pa.nulls(len(col), target)
    if blank_is_null:
        col = _blank_to_null(col)
    if pa.types.is_string(target) or pa.types.is_large_string(target):
        return col.cast(target)
    if pa.types.is_boolean(target):
        return pc.equal(pc.utf8_lower(col), "true")  # Java's Boolean.parseBoolean
    if pa.types.is_integer(target) or pa.types.is_floating(target) or pa.types.is_decimal(target):
        return _cast(col, target, name)
    if pa.types.is_binary(target):
        if base64_bytes:  # json: bytes are base64 text
            try:
                values = [None if v is None else base64.b64decode(v, validate=True) for v in col.to_pylist()]
            except (ValueError, TypeError) as exc:
                raise ValueError(f"column {name}: bytes are not base64: {exc}") from None
            return pa.array(values, pa.binary())
        return col.cast(pa.binary())
    if pa.types.is_date(target):
        return _parse_date(col, name).cast(target)
    if pa.types.is_timestamp(target):
        return _parse_timestamp(col, name).cast(target)
    if pa.types.is_time(target):
        return _parse_time(col, name).cast(target)
    if level + 2 >= len(SEPARATORS) and (
        pa.types.is_map(target) or pa.types.is_list(target) or pa.types.is_struct(target)
    ):
        raise ValueError(f"column {name}: nested too deep for text files ({len(SEPARATORS)} separators)")
    if pa.types.is_list(target):
        lists = _split(col, SEPARATORS[level + 1])
        values = from_text(_list_parts(lists)[1], target.value_type, name, level + 1, base64_bytes, blank_is_null)
        return _rebuild_list(lists, values)
    if pa.types.is_map(target):
        entries = _split(col, SEPARATORS[level + 1])
        offsets, values = _list_parts(entries)
        pairs = _split(values, SEPARATORS[level + 2])
        keys = from_text(_element(pairs, 0), target.key_type, name, level + 1, base64_bytes, blank_is_null)
        items = from_text(_element(pairs, 1), target.item_type, name, level + 1, base64_bytes, blank_is_null)
        if keys.null_count:
            raise ValueError(f"column {name}: a map key is blank (maps here cannot hold a null key)")
        return pa.MapArray.from_arrays(offsets, keys, items, mask=entries.is_null())
    if pa.types.is_struct(target):
        parts = _split(col, SEPARATORS[level + 1])
        children = [
            from_text(_element(parts, i), field.type, f"{name}.{field.name}", level + 1, base64_bytes, blank_is_null)
            for i, field in enumerate(target)
        ]
        return pa.StructArray.from_arrays(children, fields=list(target), mask=col.is_null())
    raise ValueError(f"column {name}: {type_name(target)} cannot be read from text")


def to_text(col: pa.Array, formats: TextFormats, name: str, level: int = 0) -> pa.Array:
    """Values as SeaTunnel's text format writes them (null: empty; nested values joined
    by the separator of the next level); a string array without nulls."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    kind = col.type
    if pa.types.is_null(kind):
        text = pa.nulls(len(col), pa.string())
    elif pa.types.is_string(kind) or pa.types.is_large_string(kind):
        text = col.cast(pa.string())
    elif pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or pa.types.is_fixed_size_binary(kind):
        text = pc.cast(col.cast(pa.binary()), pa.string(), safe=False)  # the bytes as they are
    elif pa.types.is_date(kind):
        text = pc.strftime(col.cast(pa.date32()), format=formats.date)
    elif pa.types.is_timestamp(kind):
        digits = formats.datetime_digits
        unit = "s" if digits == 0 else ("ns" if digits == 9 else "us")
        stamps = pc.cast(col.view(pa.timestamp(kind.unit)), pa.timestamp(unit), safe=False)  # zoned: UTC time
        text = pc.strftime(stamps, format=formats.datetime)
        if digits == 3:
            text = pc.utf8_slice_codeunits(text, 0, -3)
    elif pa.types.is_time(kind):
        text = pc.cast(pc.cast(col, pa.time64("us")), pa.string())  # HH:MM:SS.ffffff
        text = pc.utf8_slice_codeunits(text, 0, 8 + (1 + formats.time_digits if formats.time_digits else 0))
    elif (
        pa.types.is_boolean(kind)
        or pa.types.is_integer(kind)
        or pa.types.is_floating(kind)
        or pa.types.is_decimal(kind)
    ):
        text = pc.cast(col, pa.string())
    elif level + 2 >= len(SEPARATORS):
        raise ValueError(f"column {name}: nested too deep for text files ({len(SEPARATORS)} separators)")
    elif pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        if not pa.types.is_list(kind):
            col = col.cast(pa.list_(kind.value_type))
        offsets, values = _list_parts(col)
        lists = pa.ListArray.from_arrays(offsets, to_text(values, formats, name, level + 1), mask=col.is_null())
        text = pc.binary_join(lists, SEPARATORS[level + 1])
    elif pa.types.is_map(kind):
        offsets, pairs = _list_parts(col)
        keys, items = pairs.flatten()
        entries = pc.binary_join_element_wise(
            to_text(keys, formats, name, level + 1), to_text(items, formats, name, level + 1), SEPARATORS[level + 2]
        )
        lists = pa.ListArray.from_arrays(offsets, entries, mask=col.is_null())
        text = pc.binary_join(lists, SEPARATORS[level + 1])
    elif pa.types.is_struct(kind):
        children = [
            to_text(child, formats, f"{name}.{field.name}", level + 1) for field, child in zip(kind, col.flatten())
        ]
        text = (
            pc.binary_join_element_wise(*children, SEPARATORS[level + 1])
            if children
            else pa.array([""] * len(col), pa.string())
        )
        text = pc.if_else(col.is_null(), pa.scalar(None, pa.string()), text)
    else:
        raise ValueError(f"column {name}: {kind} cannot be written to a text file")
    return text.fill_null("")


_REGEX_META = frozenset(".$|()[]{}^?*+\\")


def _field_splitter(plugin: str, fmt: str, delimiter: str, key: str) -> tuple[str, str]:
    """(how, delimiter) to split a line into fields: SeaTunnel's csv reader splits at the
    delimiter's first character, with ``"`` quoting; its text reader splits with the
    delimiter as a Java regular expression."""
    if fmt == "csv":
        return "csv", delimiter[0]
    if len(delimiter) == 1:
        if delimiter in _REGEX_META:
            log.warning(
                "%s source: field_delimiter %r splits at that character here; SeaTunnel's text reader takes "
                "it as a Java regular expression (write %r there)",
                plugin,
                delimiter,
                "\\" + delimiter,
            )
        return "literal", delimiter
    if not set(delimiter) & _REGEX_META:
        return "literal", delimiter
    try:
        compiled = re.compile(delimiter)
    except re.error as exc:
        raise ConfigError(
            key,
            f"{delimiter!r} is not a valid regular expression (the text reader splits with "
            f"it as SeaTunnel's does): {exc}",
        ) from None
    if compiled.match("") is not None:
        raise ConfigError(
            key,
            f"{delimiter!r} matches the empty text as a regular expression (SeaTunnel's text "
            f"reader would split every character); escape it, e.g. \\\\|",
        )
    return "regex", delimiter


def split_fields(lines: pa.Array, how: str, delimiter: str) -> pa.ListArray:
    """Each line's fields (a list array), as :func:`_field_splitter` says."""
    if how == "literal":
        return pc.split_pattern(lines, pattern=delimiter)
    if how == "regex":
        return pc.split_pattern_regex(lines, pattern=delimiter)
    return split_quoted(lines, delimiter)


class _LineBatches:
    """The lines of a text or csv file, one string column ``line`` per block: the first
    ``skip`` lines and empty lines left out."""

    def __init__(self, stream: Any, row_delimiter: str, skip: int, where: str, block_size: int = STREAM_BLOCK_SIZE):
        self._stream = stream
        self._delimiter = row_delimiter
        self._bytes = row_delimiter.encode("utf-8")
        self._skip = skip
        self._where = where
        self._block = block_size
        self._carry = b""
        self._eof = False

    def read_next_batch(self) -> pa.RecordBatch:
        while not self._eof:
            data = self._stream.read(self._block)
            if not data:
                self._eof = True
                chunk, self._carry = self._carry, b""
                if not chunk:
                    break
            else:
                buffer = self._carry + bytes(data)
                cut = buffer.rfind(self._bytes)
                if cut < 0:
                    self._carry = buffer
                    continue
                chunk, self._carry = buffer[:cut], buffer[cut + len(self._bytes) :]
            lines = self._lines(chunk)
            if self._skip:
                skipped = min(self._skip, len(lines))
                lines, self._skip = lines.slice(skipped), self._skip - skipped
            lines = lines.filter(pc.greater(pc.binary_length(lines), 0))
            if len(lines):
                return pa.record_batch([lines], names=["line"])
        raise StopIteration

    def _lines(self, chunk: bytes) -> pa.Array:
        try:
            text = chunk.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{self._where} is not UTF-8 text ({exc})") from None
        lines = pc.split_pattern(pa.array([text], pa.string()), pattern=self._delimiter).values
        if self._delimiter == "\n":  # \r\n line ends, as Java's line reader takes them
            lines = pc.replace_substring_regex(lines, pattern="\r$", replacement="")
        return lines

    def close(self) -> None:
        if not isinstance(self._stream, RangeFile):
            self._stream.close()


class _TextEncoder:
    """One text or csv output file in SeaTunnel's text format: the header line when
    asked, then rows separated by ``row_delimiter`` (none after the last row)."""

    #: it writes as rows come: nothing is held back (the File sink's writer limits what encoders gather)
    gathered_bytes = 0

    def __init__(
        self,
        fmt: str,
        schema: pa.Schema,
        out: NewFile,
        field_delimiter: str,
        row_delimiter: str,
        header: bool,
        formats: TextFormats,
        encoding: str | None = None,
    ):
        self.format = fmt
        self._encoding = encoding
        self.schema = schema
        self.rows = 0
        self.out = out
        self.path = out.path
        self._delimiter = "," if fmt == "csv" else field_delimiter  # SeaTunnel's csv writer: always ","
        self._row = row_delimiter
        self._formats = formats
        self._started = False
        if header:
            names = pa.array(schema.names, pa.string())
            if fmt == "csv":
                names = _csv_quote(names, ",")
            out.write(_encode(self._delimiter.join(names.to_pylist()) + row_delimiter, encoding, out.path))

    @property
    def size(self) -> int:
        return self.out.tell()

    def write(self, batch: pa.RecordBatch) -> None:
        if not batch.num_rows:
            return
        columns = [to_text(batch.column(i), self._formats, field.name) for i, field in enumerate(batch.schema)]
        if self.format == "csv":
            columns = [_csv_quote(column, ",") for column in columns]
        lines = pc.binary_join_element_wise(*columns, self._delimiter)
        body = pc.binary_join(pa.ListArray.from_arrays(pa.array([0, len(lines)], pa.int32()), lines), self._row)
        if self._started:
            self.out.write(_encode(self._row, self._encoding, self.path))
        if self._encoding is None:
            self.out.write(body[0].as_buffer())
        else:
            self.out.write(_encode(body[0].as_py(), self._encoding, self.path))
        self._started = True
        self.rows += batch.num_rows

    def finish(self) -> int:
        self.out.close()
        return self.rows

    def abandon(self) -> None:
        """Nothing is held back (the file sink calls it on a file it discards)."""
