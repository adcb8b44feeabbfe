"""Dates, times and timestamps read from text as SeaTunnel's JsonToRowConverters read them
(``LocalTime.parse``, DateUtils and DateTimeUtils with their formatters, ResolverStyle
SMART or STRICT as each formatter is). Python keeps microseconds: digits past the sixth
are dropped and reported to ``lost_digits``, which warns."""

from __future__ import annotations

import datetime as dt
import re
from calendar import monthrange
from collections.abc import Callable

from .failures import HardError


def parse_time(text: str, lost_digits: Callable[[str], None]) -> dt.time:
    """``HH:mm:ss`` with up to nine digits of fraction."""
    match = re.fullmatch(r"([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{0,9}))?", text)
    if match is None:
        raise HardError(f"DateTimeParseException: Text '{text}' could not be parsed")
    hour, minute, second = int(match[1]), int(match[2]), int(match[3])
    return dt.time(*_check_hms(text, hour, minute, second), _micros(text, match[4], lost_digits))


def parse_timestamp(text: str, lost_digits: Callable[[str], None]) -> dt.datetime:
    """DateTimeUtils: the formatter is picked by the text's length and shape, then parses it."""
    for pattern, date_sep, strict in _TIMESTAMP_FORMATS.get(min(len(text), 20), ()):  # noqa: B007 - read after the loop breaks
        if pattern.fullmatch(text):
            break
    else:
        if len(text) == 14:
            date_sep, strict = "", False
        else:
            raise HardError(
                f"ErrorCode:[COMMON-33], ErrorDescription:[The datetime format '{text}' of field "
                "'null' is not supported. Please check the datetime format.]"
            )
    match = _TIMESTAMP_PARSE[date_sep].fullmatch(text)
    if match is None:
        raise HardError(f"DateTimeParseException: Text '{text}' could not be parsed")
    year, month, day = int(match["y"]), int(match["mo"]), int(match["d"])
    hour, minute = int(match["h"]), int(match["mi"])
    second = int(match["s"]) if match["s"] else 0
    date = _resolve_date(text, year, month, day, strict)
    hms = _check_hms(text, hour, minute, second)
    return dt.datetime(date.year, date.month, date.day, *hms, _micros(text, match["f"], lost_digits))


def _micros(text: str, fraction: str | None, lost_digits: Callable[[str], None]) -> int:
    fraction = fraction or ""
    if fraction[6:].strip("0"):
        lost_digits(text)
    return int(fraction[:6].ljust(6, "0"))


def _check_hms(text: str, hour: int, minute: int, second: int) -> tuple[int, int, int]:
    if hour > 23 or minute > 59 or second > 59:
        raise HardError(f"DateTimeParseException: Text '{text}' could not be parsed: a field is out of range")
    return hour, minute, second


def _resolve_date(text: str, year: int, month: int, day: int, strict: bool) -> dt.date:
    """ResolverStyle.SMART: a day past the month's end is its last day (STRICT refuses)."""
    if not 1 <= month <= 12 or not 1 <= day <= 31 or not 1 <= year <= 9999:
        raise HardError(f"DateTimeParseException: Text '{text}' could not be parsed: a field is out of range")
    last = monthrange(year, month)[1]
    if day > last:
        if strict:
            raise HardError(f"DateTimeParseException: Text '{text}' could not be parsed: Invalid date")
        day = last
    return dt.date(year, month, day)


_DATE_FORMATS = [
    re.compile(p)
    for p in (
        r"([0-9]{4})-([0-9]{2})-([0-9]{2})",
        r"([0-9]{4})年([0-9]{2})月([0-9]{2})日",
        r"([0-9]{4})/([0-9]{2})/([0-9]{2})",
        r"([0-9]{4})\.([0-9]{2})\.([0-9]{2})",
        r"([0-9]{4})([0-9]{2})([0-9]{2})",
    )
]


def parse_date(text: str) -> dt.date:
    """SeaTunnel's date formats (DateUtils), each tried on its own."""
    for pattern in _DATE_FORMATS:
        match = pattern.fullmatch(text)
        if match:
            return _resolve_date(text, int(match[1]), int(match[2]), int(match[3]), strict=False)
    raise HardError(
        f"ErrorCode:[COMMON-20], ErrorDescription:[The date format '{text}' of field 'null' is not "
        "supported. Please check the date format.]"
    )


_JSPACE = r"[ \t\n\x0b\f\r]"
#: DateTimeUtils.matchDateTimeFormatter: by length (19; more, under key 20), the pattern
#: that picks the formatter, the formatter's date separator and whether it is STRICT
_TIMESTAMP_FORMATS = {
    19: [
        (re.compile(rf"[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}}{_JSPACE}[0-9]{{2}}:[0-9]{{2}}:[0-9]{{2}}"), "- ", False),
        (re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}"), "-T", False),
        (re.compile(rf"[0-9]{{4}}/[0-9]{{2}}/[0-9]{{2}}{_JSPACE}[0-9]{{2}}:[0-9]{{2}}:[0-9]{{2}}"), "/ ", False),
        (re.compile(rf"[0-9]{{4}}\.[0-9]{{2}}\.[0-9]{{2}}{_JSPACE}[0-9]{{2}}:[0-9]{{2}}:[0-9]{{2}}"), ". ", False),
    ],
    20: [
        (re.compile(rf"[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}}{_JSPACE}[0-9]{{2}}:[0-9]{{2}}.*", re.S), "- iso", False),
        (re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}.*", re.S), "-Tiso", True),
        (re.compile(rf"[0-9]{{4}}/[0-9]{{2}}/[0-9]{{2}}{_JSPACE}[0-9]{{2}}:[0-9]{{2}}.*", re.S), "/ iso", False),
        (re.compile(rf"[0-9]{{4}}\.[0-9]{{2}}\.[0-9]{{2}}{_JSPACE}[0-9]{{2}}:[0-9]{{2}}.*", re.S), ". iso", False),
        (
            re.compile(rf"[0-9]{{4}}年[0-9]{{2}}月[0-9]{{2}}日{_JSPACE}[0-9]{{2}}时[0-9]{{2}}分[0-9]{{2}}秒"),
            "cn",
            False,
        ),
    ],
}
_D = r"(?P<y>[0-9]{4})%s(?P<mo>[0-9]{2})%s(?P<d>[0-9]{2})"
_ISO_TIME = r"(?P<h>[0-9]{2}):(?P<mi>[0-9]{2})(?::(?P<s>[0-9]{2})(?:\.(?P<f>[0-9]{0,9}))?)?"
_HMS = r"(?P<h>[0-9]{2}):(?P<mi>[0-9]{2}):(?P<s>[0-9]{2})(?P<f>)"
_TIMESTAMP_PARSE = {
    "- ": re.compile(_D % ("-", "-") + " " + _HMS),
    "-T": re.compile(_D % ("-", "-") + "T" + _HMS),
    "/ ": re.compile(_D % ("/", "/") + " " + _HMS),
    ". ": re.compile(_D % (r"\.", r"\.") + " " + _HMS),
    "- iso": re.compile(_D % ("-", "-") + " " + _ISO_TIME),
    "-Tiso": re.compile(_D % ("-", "-") + "T" + _ISO_TIME),
    "/ iso": re.compile(_D % ("/", "/") + " " + _ISO_TIME),
    ". iso": re.compile(_D % (r"\.", r"\.") + " " + _ISO_TIME),
    "cn": re.compile(_D % ("年", "月") + "日 (?P<h>[0-9]{2})时(?P<mi>[0-9]{2})分(?P<s>[0-9]{2})秒(?P<f>)"),
    "": re.compile(_D % ("", "") + "(?P<h>[0-9]{2})(?P<mi>[0-9]{2})(?P<s>[0-9]{2})(?P<f>)"),
}
