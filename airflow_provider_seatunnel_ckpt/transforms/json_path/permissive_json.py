"""json-smart 2.4's permissive JSON parser, as Jayway's default JsonSmartJsonProvider runs
it (JSONParserBase, JSONParserMemory, JSONParserString). SeaTunnel's own job files rely on
it: ``{data:{c_string: this is a string, c_date:'2023-10-29'}}`` (unquoted keys and text,
single quotes) is a document to it, where strict JSON parsers refuse it."""

from __future__ import annotations

import decimal
import json
import math
import re
import unicodedata
from collections.abc import Callable
from typing import Any

from .failures import HardError, PathError

_EOI = "\x1a"
_STOP_KEY = frozenset(":" + _EOI)
_STOP_VALUE = frozenset(",}" + _EOI)
_STOP_ARRAY = frozenset(",]" + _EOI)
_STOP_X = frozenset(_EOI)


def _java_whitespace(ch: str) -> bool:
    """Character.isWhitespace."""
    if ch in "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f ":
        return True
    return ord(ch) > 127 and ch not in "\u00a0\u2007\u202f" and unicodedata.category(ch) in ("Zs", "Zl", "Zp")


class _SmartParser:
    """json-smart 2.4's parser in MODE_PERMISSIVE, as Jayway's default JsonSmartJsonProvider
    runs it: unquoted keys and text, single quotes, NaN, useless commas, leading zeros,
    trailing data ignored, control characters dropped in escaped strings."""

    def __init__(self, text: str):
        self.s = text
        self.n = len(text)
        self.pos = -1
        self.c = ""

    def error(self, what: str) -> PathError:
        return PathError(f"net.minidev.json.parser.ParseException: {what} at position {max(self.pos, 0)}.")

    def read(self) -> None:
        self.pos += 1
        self.c = _EOI if self.pos >= self.n else self.s[self.pos]

    def parse(self) -> Any:
        self.read()
        return self.read_value(_STOP_X)

    def skip_space(self) -> None:
        while not (self.c > " " or self.c == _EOI):
            self.read()

    def extract_trim(self, start: int, stop: int) -> str:
        while start < stop - 1 and _java_whitespace(self.s[start]):
            start += 1
        while stop - 1 > start and _java_whitespace(self.s[stop - 1]):
            stop -= 1
        return self.s[start:stop]

    def skip_nq(self, stop: frozenset) -> None:
        while not (self.c == _EOI or (ord(self.c) < 126 and self.c in stop)):
            self.read()

    def read_nq(self, stop: frozenset) -> str:
        return self._text_from(self.pos, stop)

    def _text_from(self, start: int, stop: frozenset) -> str:
        self.skip_nq(stop)
        return self.extract_trim(start, min(self.pos, self.n))

    def skip_digits(self) -> None:
        while "0" <= self.c <= "9":
            self.read()

    def _not_stop(self, stop: frozenset) -> bool:
        return ord(self.c) < 126 and self.c not in stop and self.c != _EOI

    def read_number(self, stop: frozenset) -> Any:
        start = self.pos
        self.read()
        self.skip_digits()
        if self.c not in ".Ee":
            return self._number_end(start, stop, _smart_int)
        if self.c == ".":
            self.read()
            self.skip_digits()
        if self.c not in "Ee":
            return self._number_end(start, stop, self.extract_float)
        self.read()
        if self.c in "+-" or "0" <= self.c <= "9":
            self.read()
            self.skip_digits()
            return self._number_end(start, stop, self.extract_float)
        return self._text_from(start, stop)

    def _number_end(self, start: int, stop: frozenset, number: Callable[[str], Any]) -> Any:
        """The number read from ``start``, or, when more than spaces follows it before the
        stop character, the whole as text (json-smart's ``12 apples`` is a string)."""
        self.skip_space()
        if self._not_stop(stop):
            return self._text_from(start, stop)
        return number(self.extract_trim(start, min(self.pos, self.n)))

    def extract_float(self, text: str) -> Any:
        try:
            return _smart_float(text)
        except ValueError:
            raise self.error(f"Unexpected token {text}") from None

    def read_string(self) -> str:
        quote = self.c
        close = self.s.find(quote, self.pos + 1)
        if close == -1:
            self.pos = self.n
            raise self.error("Unexpected End Of File")
        body = self.s[self.pos + 1 : close]
        if "\\" not in body:
            self.pos = close
            self.read()
            return body
        out: list[str] = []
        while True:
            self.read()
            c = self.c
            if c == _EOI:
                raise self.error("Unexpected End Of File")
            if c in "\"'":
                if c == quote:
                    self.read()
                    return _join_utf16(out)
                out.append(c)
            elif c == "\\":
                self.read()
                e = self.c
                if e in _SMART_ESCAPES:
                    out.append(_SMART_ESCAPES[e])
                elif e == "u":
                    out.append(self.read_unicode(4))
                elif e == "x":
                    out.append(self.read_unicode(2))
            elif ord(c) <= 31 or ord(c) == 127:
                continue  # IGNORE_CONTROL_CHAR
            else:
                out.append(c)

    def read_unicode(self, count: int) -> str:
        value = 0
        for _ in range(count):
            self.read()
            if self.c == _EOI:
                raise self.error("Unexpected End Of File")
            digit = int(self.c, 16) if self.c in "0123456789abcdefABCDEF" else None
            if digit is None:
                raise self.error(f"Unexpected unicode escape sequence {self.c}")
            value = value * 16 + digit
        return chr(value)

    def read_value(self, stop: frozenset) -> Any:
        while True:
            c = self.c
            if c in " \r\n\t":
                self.read()
                continue
            if c in ":}]":
                raise self.error(f"Unexpected character ({c})")
            if c == "{":
                return self.read_object()
            if c == "[":
                return self.read_array()
            if c in "\"'":
                return self.read_string()
            if c in "nft":
                text = self.read_nq(stop)
                return _WORDS[text] if text in _WORDS else text
            if c == "N":
                text = self.read_nq(stop)
                return math.nan if text == "NaN" else text
            if c in "0123456789-":
                return self.read_number(stop)
            return self.read_nq(stop)

    def read_array(self) -> list:
        out: list[Any] = []
        self.read()
        while True:
            c = self.c
            if c in " \r\n\t":
                self.read()
            elif c == "]":
                self.read()
                return out
            elif c in ":}":
                raise self.error(f"Unexpected character ({c})")
            elif c == ",":
                self.read()
            elif c == _EOI:
                raise self.error("Unexpected End Of File")
            else:
                out.append(self.read_value(_STOP_ARRAY))

    def read_object(self) -> dict:
        out: dict[str, Any] = {}
        while True:
            self.read()
            c = self.c
            if c in " \r\t\n":
                continue
            if c in ":][{":
                raise self.error(f"Unexpected character ({c})")
            if c == "}":
                self.read()
                return out
            if c == ",":
                continue
            key = self.read_string() if c in "\"'" else self.read_nq(_STOP_KEY)
            self.skip_space()
            if self.c != ":":
                raise self.error("Unexpected End Of File" if self.c == _EOI else f"Unexpected character ({self.c})")
            self.read()
            if self.c == _EOI:
                raise self.error("Unexpected End Of File")
            value = self.read_value(_STOP_VALUE)
            out[key] = value
            self.skip_space()
            if self.c == "}":
                self.read()
                return out
            if self.c == _EOI:
                raise self.error("Unexpected End Of File")
            if self.c != ",":
                raise self.error(f"Unexpected token {self.c}")


_WORDS = {"null": None, "false": False, "true": True}
_SMART_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f", "b": "\b", "\\": "\\", "/": "/", "'": "'", '"': '"'}


def _join_utf16(chars: list[str]) -> str:
    text = "".join(chars)
    if any("\ud800" <= ch <= "\udfff" for ch in text):  # \u escapes are UTF-16 code units in Java
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")
    return text


def _smart_int(text: str) -> int:
    """JSONParserBase.parseNumber: ``-`` alone is 0; any length (BigInteger)."""
    return 0 if text in ("-", "") else int(text)


def _smart_float(text: str) -> Any:
    """USE_HI_PRECISION_FLOAT with BIG_DIGIT_UNRESTRICTED: Double up to 18 characters,
    else BigDecimal."""
    if len(text) > 18:
        try:
            return decimal.Decimal(text)
        except decimal.InvalidOperation:
            raise ValueError(text) from None
    if not re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", text, flags=re.ASCII):
        raise ValueError(text)
    return float(text)


def _constant(name: str) -> Any:
    return math.nan if name == "NaN" else name  # json-smart reads Infinity as text


def parse_json(text: str) -> Any:
    """The document json-smart (permissive) makes of ``text``; PathError when even it
    refuses the text, HardError for what Jayway refuses before parsing."""
    if text == "":
        raise HardError("json can not be null or empty")
    try:
        # strict JSON is most documents; Python's parser reads it much faster, to the same values
        document = json.loads(text, parse_float=_smart_float, parse_constant=_constant)
    except (ValueError, RecursionError):
        try:
            document = _SmartParser(text).parse()
        except RecursionError:
            raise PathError("the document is nested too deeply") from None
    if document is None:
        raise HardError("root can not be null")
    return document
