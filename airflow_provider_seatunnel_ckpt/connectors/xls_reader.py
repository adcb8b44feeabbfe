""".xls workbooks (BIFF8 in an OLE2 compound file): what SeaTunnel reads through POI's
HSSFWorkbook, cell values only. openpyxl reads only .xlsx, and SeaTunnel's own tests put an
.xls beside the .xlsx they read. An .xls sheet holds at most 65,536 rows, so a workbook
is read whole."""

from __future__ import annotations

import datetime as dt
import re
import struct
from typing import Any

import numpy as np

_ENDOFCHAIN = 0xFFFFFFFE
#: Excel's built-in number formats that show dates or times
_BUILTIN_DATES = frozenset([*range(14, 23), *range(27, 37), *range(45, 48), *range(50, 59)])


def _ole_stream(data: bytes, names: tuple[str, ...]) -> bytes:
    """The first of ``names`` found in an OLE2 compound file."""
    if data[:8] != bytes.fromhex("d0cf11e0a1b11ae1"):
        raise ValueError("not an OLE2 compound file")
    size = 1 << int.from_bytes(data[0x1E:0x20], "little")
    mini_size = 1 << int.from_bytes(data[0x20:0x22], "little")
    first_dir, cutoff, first_mini_fat = (int.from_bytes(data[o:o + 4], "little") for o in (0x30, 0x38, 0x3C))
    difat = list(np.frombuffer(data, "<u4", 109, 0x4C))
    next_difat = int.from_bytes(data[0x44:0x48], "little")
    while next_difat < _ENDOFCHAIN and len(difat) < len(data) // 4:
        words = np.frombuffer(data, "<u4", size // 4, (next_difat + 1) * size)
        difat += list(words[:-1])
        next_difat = int(words[-1])
    fat = np.concatenate([np.frombuffer(data, "<u4", size // 4, (int(s) + 1) * size) for s in difat
                          if s < _ENDOFCHAIN])

    def chain(start: int, table: Any, limit: int) -> list[int]:
        sectors: list[int] = []
        while start < _ENDOFCHAIN and len(sectors) <= limit:
            sectors.append(start)
            start = int(table[start])
        return sectors

    def read(start: int) -> bytes:
        return b"".join(data[(s + 1) * size:(s + 2) * size] for s in chain(start, fat, len(fat)))

    directory = read(first_dir)
    entries = []
    for offset in range(0, len(directory) - 127, 128):
        length = int.from_bytes(directory[offset + 0x40:offset + 0x42], "little")
        name = directory[offset:offset + max(0, length - 2)].decode("utf-16-le", "replace")
        start = int.from_bytes(directory[offset + 0x74:offset + 0x78], "little")
        entries.append((name, directory[offset + 0x42], start,
                        int.from_bytes(directory[offset + 0x78:offset + 0x7C], "little")))
    for wanted in names:
        for name, kind, start, length in entries:
            if kind != 2 or name != wanted:
                continue
            if length >= cutoff:
                return read(start)[:length]
            mini_fat = np.frombuffer(read(first_mini_fat), "<u4") if first_mini_fat < _ENDOFCHAIN else []
            mini = read(entries[0][2])  # the root entry holds the mini stream
            return b"".join(mini[s * mini_size:(s + 1) * mini_size]
                            for s in chain(start, mini_fat, len(mini_fat)))[:length]
    raise ValueError(f"no {' or '.join(names)} stream (not an Excel 97-2003 workbook)")


class _Biff:
    """BIFF8 records: (type, data), CONTINUE records kept for the strings that span them."""

    def __init__(self, stream: bytes):
        self.stream = stream

    def records(self, offset: int = 0) -> Any:
        while offset + 4 <= len(self.stream):
            kind, length = int.from_bytes(self.stream[offset:offset + 2], "little"), \
                int.from_bytes(self.stream[offset + 2:offset + 4], "little")
            yield offset, kind, self.stream[offset + 4:offset + 4 + length]
            offset += 4 + length


def _biff_string(parts: list[bytes], at: list[int], length_bytes: int) -> str:
    """A BIFF8 unicode string at ``at`` = [part, offset]; characters may continue in the
    next part (a CONTINUE record, whose first byte repeats the 8/16-bit flag)."""
    part, pos = at
    data = parts[part]
    if pos >= len(data):
        part, pos, data = part + 1, 0, parts[part + 1]
    count = int.from_bytes(data[pos:pos + length_bytes], "little")
    flags = data[pos + length_bytes]
    pos += length_bytes + 1
    runs = ext = 0
    if flags & 0x08:
        runs = int.from_bytes(data[pos:pos + 2], "little")
        pos += 2
    if flags & 0x04:
        ext = int.from_bytes(data[pos:pos + 4], "little")
        pos += 4
    wide, text = flags & 0x01, []
    while count:
        if pos >= len(data):
            part, data = part + 1, parts[part + 1]
            wide, pos = data[0] & 0x01, 1
        take = min(count, (len(data) - pos) // (2 if wide else 1))
        if not take:
            raise ValueError("a string runs past the end of its record")
        chunk = data[pos:pos + take * (2 if wide else 1)]
        text.append(chunk.decode("utf-16-le" if wide else "latin-1"))
        pos += len(chunk)
        count -= take
    skip = runs * 4 + ext
    while skip:  # rich text runs and phonetic data, perhaps over CONTINUE records too
        if pos >= len(data):
            part, pos, data = part + 1, 0, parts[part + 1]
        step = min(skip, len(data) - pos)
        pos, skip = pos + step, skip - step
    at[0], at[1] = part, pos
    return "".join(text)


def _is_date_format(code: str) -> bool:
    code = re.sub(r'"[^"]*"|\[[^\]]*\]|\\.|_.|\*.', "", code)
    return bool(re.search(r"[dmyhs]", code, re.I)) and not re.fullmatch(r"(?i)general", code)


def _rk(value: int) -> float:
    """An RK number: a signed 30-bit integer, or a double's 30 high bits; perhaps x100."""
    if value & 0x02:
        number = float((value - (1 << 32) if value & 0x80000000 else value) >> 2)
    else:
        number = struct.unpack("<d", b"\0\0\0\0" + (value & 0xFFFFFFFC).to_bytes(4, "little"))[0]
    return number / 100 if value & 0x01 else number


def xls_sheets(data: bytes) -> tuple[list[str], Any]:
    """(sheet names, rows(name) -> iterator of (row number, values)) of an .xls workbook."""
    biff = _Biff(_ole_stream(data, ("Workbook", "Book")))
    formats: dict[int, str] = {}
    xf_dates: list[bool] = []
    sheets: list[tuple[str, int]] = []
    strings: list[str] = []
    epoch = dt.datetime(1899, 12, 30)
    records = biff.records()
    first = next(records, None)
    if first is None or first[1] != 0x809 or first[2][:2] != b"\x00\x06":
        raise ValueError("not a BIFF8 workbook (Excel 97-2003; older .xls versions are not read)")
    for offset, kind, body in records:
        if kind == 0x0A:  # EOF of the globals
            break
        if kind == 0x2F:
            raise ValueError("the workbook is encrypted")
        if kind == 0x22 and int.from_bytes(body[:2], "little"):
            epoch = dt.datetime(1904, 1, 1)
        elif kind == 0x41E:
            formats[int.from_bytes(body[:2], "little")] = _biff_string([body], [0, 2], 2)
        elif kind == 0xE0:
            code = int.from_bytes(body[2:4], "little")
            xf_dates.append(code in _BUILTIN_DATES or (code in formats and _is_date_format(formats[code])))
        elif kind == 0x85:
            sheets.append((_biff_string([body], [0, 6], 1), int.from_bytes(body[:4], "little")))
        elif kind == 0xFC:
            parts, following = [body], offset + 4 + len(body)
            for _, more, extra in biff.records(following):
                if more != 0x3C:
                    break
                parts.append(extra)
            at = [0, 8]
            strings = [_biff_string(parts, at, 2) for _ in range(int.from_bytes(body[4:8], "little"))]

    def value_of(xf: int, number: float) -> Any:
        if xf < len(xf_dates) and xf_dates[xf]:
            return from_serial(number)
        return number

    def from_serial(number: float) -> Any:
        moment = epoch + dt.timedelta(days=number)
        if epoch.year == 1899 and number < 61:
            moment += dt.timedelta(days=1)  # Excel's 1900-02-29
        return moment.replace(microsecond=round(moment.microsecond, -3) % 1_000_000)

    def rows(name: str) -> Any:
        offset = dict(sheets)[name]
        cells: dict[int, dict[int, Any]] = {}
        pending: tuple[int, int] | None = None
        for _, kind, body in biff.records(offset):
            if kind == 0x0A:
                break
            row, col = int.from_bytes(body[:2], "little"), int.from_bytes(body[2:4], "little")
            xf = int.from_bytes(body[4:6], "little")
            if kind == 0xFD:
                cells.setdefault(row, {})[col] = strings[int.from_bytes(body[6:10], "little")]
            elif kind == 0x203:
                cells.setdefault(row, {})[col] = value_of(xf, float(np.frombuffer(body, "<f8", 1, 6)[0]))
            elif kind == 0x27E:
                cells.setdefault(row, {})[col] = value_of(xf, _rk(int.from_bytes(body[6:10], "little")))
            elif kind == 0xBD:
                for i in range((len(body) - 6) // 6):
                    item = body[4 + i * 6:10 + i * 6]
                    cells.setdefault(row, {})[col + i] = value_of(int.from_bytes(item[:2], "little"),
                                                                  _rk(int.from_bytes(item[2:6], "little")))
            elif kind == 0x204:
                cells.setdefault(row, {})[col] = _biff_string([body], [0, 6], 2)
            elif kind == 0x205:
                cells.setdefault(row, {})[col] = None if body[7] else bool(body[6])
            elif kind == 0x06:  # a formula: its cached result
                result = body[6:14]
                if result[6:8] != b"\xff\xff":
                    cells.setdefault(row, {})[col] = value_of(xf, float(np.frombuffer(result, "<f8")[0]))
                elif result[0] == 0:
                    pending = (row, col)  # a STRING record follows
                elif result[0] == 1:
                    cells.setdefault(row, {})[col] = bool(result[2])
            elif kind == 0x207 and pending is not None:
                cells.setdefault(pending[0], {})[pending[1]] = _biff_string([body], [0, 0], 2)
                pending = None
        for row in sorted(cells):
            width = max(cells[row]) + 1
            yield row + 1, [cells[row].get(c) for c in range(width)]

    return [name for name, _ in sheets], rows
