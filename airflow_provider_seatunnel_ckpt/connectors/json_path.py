"""SeaTunnel's ``JsonPath`` transform under its name and options (SeaTunnel 2.3.x,
``transform-v2/jsonpath.md``)::

    JsonPath {
      row_error_handle_way = FAIL          # or SKIP: drop a row whose path fails
      columns = [
        { src_field = data, path = "$.data.c_integer", dest_field = c1, dest_type = int,
          column_error_handle_way = SKIP } # FAIL, SKIP (null) or SKIP_ROW
      ]
    }

Each column reads ``path`` from the JSON in ``src_field`` and writes the result, converted
to ``dest_type`` (default ``string``), to ``dest_field``: a new column at the end, or the
input column of that name replaced in place (as SeaTunnel's MultipleFieldOutputTransform).

**Why not DuckDB's JSON functions.** SeaTunnel reads the text with Jayway JsonPath over
json-smart in its *permissive* mode, and its own test files rely on that: the data of
``json_path_basic_type_test.conf`` is ``{data:{c_string: this is a string, ...,
c_date:'2023-10-29'}}`` (unquoted keys and text, single quotes), which DuckDB refuses.
Missing paths are errors (Jayway's PathNotFoundException) that the error-handling options
act on, where DuckDB gives null. So this module carries a port of what those two libraries
do for the paths SeaTunnel's documents use: json-smart's permissive parser (strict JSON
goes through Python's ``json`` first), Jayway's compiler and evaluator for ``$``, ``.name``,
``['name']`` / ``['a','b']``, ``[0]`` / ``[-1]`` / ``[0,2]``, slices ``[1:3]``, ``*`` and
``..`` (deep scan), with Jayway's definite/indefinite rules (a definite path gives the
value, an indefinite one the list of matches, possibly empty), and Jackson's conversion of
the result to ``dest_type`` (SeaTunnel's JsonToRowConverters).

Per row, in column order, as SeaTunnel does:

* a null ``src_field`` gives null (the path is not read);
* a path that does not match or text that is not JSON even for json-smart: with the
  column's ``column_error_handle_way`` SKIP the column is null; SKIP_ROW drops the row;
  FAIL fails the job; without it ``row_error_handle_way`` decides (SKIP drops the row,
  FAIL, the default, fails the job);
* a result that does not convert to ``dest_type`` (``"abc"`` as int), an empty text or
  the JSON ``null`` as the whole document fail the job whatever the options say
  (SeaTunnel catches only JsonPath's own exceptions).

A ``src_field`` of type ``row``, ``array`` or ``map`` is first written as JSON the way
SeaTunnel's Jackson writes the Java values: a row as the array of its fields (so
``$[0]`` is its first field), dates and times as arrays (``[2023,10,29]``), bytes in
base64, floats as Java prints them.

Work is columnar where it can be: the source column is dictionary-encoded and each
distinct text is parsed and read once; results and the per-row decisions are taken back
to the rows with Arrow/numpy (``pc.take``), so a column of repeated documents costs one
parse per distinct value.

**Differs** from SeaTunnel (each is an error or a warning line, never silent):

* filters ``[?(...)]`` and functions (``.length()``) are refused with one line, as is a
  path that does not compile: when the job is checked (SeaTunnel: at the first row);
* a ``src_field`` that is not string, bytes, row, array or map, or that holds a nested
  row, or a map keyed by dates, times or bytes, is refused when the job is checked;
* a decimal result that does not fit ``decimal(p, s)`` exactly fails the job (SeaTunnel
  passes the unscaled value on to the sink);
* ``time`` and ``timestamp`` keep microseconds: digits past the sixth are dropped with a
  warning (SeaTunnel keeps nanoseconds);
* each date and timestamp is matched to one of SeaTunnel's formats on its own (SeaTunnel
  caches the first value's format for the transform's date and timestamp columns, so a
  later value in another format fails there);
* an unknown key in a column entry and a repeated ``dest_field`` are one-line errors
  (SeaTunnel ignores the key; the last column wins), as is an empty ``columns`` list;
* Java's ``Double.toString`` is reproduced with the shortest digits (Java 19+; older JVMs
  print a few values with one digit more).
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import decimal
import json
import logging
import math
import re
import unicodedata
from calendar import monthrange
from typing import Any, Callable, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import ConfigError, DataError
from .api import Transform
from .options import Options, option_key
from .seatunnel_types import seatunnel_type, type_name

log = logging.getLogger(__name__)

_COLUMN_KEYS = ("src_field", "path", "dest_field", "dest_type", "column_error_handle_way")
_WAYS = ("FAIL", "SKIP", "SKIP_ROW")
_DEC = decimal.Context(prec=1000, Emin=-999999, Emax=999999)


class PathError(Exception):
    """Jayway's JsonPathException (PathNotFoundException, InvalidJsonException): the
    error-handling options act on it."""


class HardError(Exception):
    """Any other failure (conversion, IllegalArgumentException): fails the job."""


# ---- Jayway's path compiler (PathCompiler, CharacterIndex) --------------------------------
class Unsupported(Exception):
    pass


class _Token:
    kind = ""
    upstream_array_index = -1

    def __init__(self) -> None:
        self.prev: _Token | None = None
        self.next: _Token | None = None

    @property
    def leaf(self) -> bool:
        return self.next is None

    def token_definite(self) -> bool:
        return True

    def upstream_definite(self) -> bool:
        return self.prev is None or (self.prev.token_definite() and self.prev.upstream_definite())

    def fragment(self) -> str:
        return ""


class _Root(_Token):
    kind = "root"

    def __init__(self, char: str) -> None:
        super().__init__()
        self.char = char

    def fragment(self) -> str:
        return self.char


class _Prop(_Token):
    kind = "prop"

    def __init__(self, names: list[str]) -> None:
        super().__init__()
        if not names:
            raise ValueError("Empty properties")
        self.names = names

    def token_definite(self) -> bool:
        return len(self.names) == 1 or self.leaf

    def fragment(self) -> str:
        return "[" + ",".join(f"'{n}'" for n in self.names) + "]"


class _Index(_Token):
    kind = "index"

    def __init__(self, indexes: list[int]) -> None:
        super().__init__()
        self.indexes = indexes

    def token_definite(self) -> bool:
        return len(self.indexes) == 1

    def fragment(self) -> str:
        return "[" + ",".join(str(i) for i in self.indexes) + "]"


class _Slice(_Token):
    kind = "slice"

    def __init__(self, start: int | None, stop: int | None) -> None:
        super().__init__()
        self.start, self.stop = start, stop

    def token_definite(self) -> bool:
        return False

    def fragment(self) -> str:
        return f"[{'' if self.start is None else self.start}:{'' if self.stop is None else self.stop}]"


class _Wild(_Token):
    kind = "wild"

    def token_definite(self) -> bool:
        return False

    def fragment(self) -> str:
        return "[*]"


class _Scan(_Token):
    kind = "scan"

    def token_definite(self) -> bool:
        return False

    def fragment(self) -> str:
        return ".."


class CompiledPath:
    def __init__(self, root: _Root):
        self.root = root
        self.tail: _Token = root
        tokens = []
        token: _Token | None = root
        while token is not None:
            tokens.append(token)
            token = token.next
        self.tail = tokens[-1]
        self.definite = all(t.token_definite() for t in tokens)

    def __str__(self) -> str:
        parts, token = [], self.root
        while token is not None:
            parts.append(token.fragment())
            token = token.next
        return "".join(parts)


def _java_parse_int(text: str) -> int:
    if not re.fullmatch(r"[+-]?\d+", text):
        raise ValueError(f"For input string: \"{text}\"")
    return int(text)


class _Compiler:
    """A port of Jayway JsonPath 2.7's PathCompiler for the tokens this module evaluates."""

    def __init__(self, text: str):
        self.s = text
        self.pos = 0
        self.end = len(text) - 1

    # CharacterIndex
    def inb(self, i: int) -> bool:
        return 0 <= i <= self.end

    def cur(self) -> str:
        return self.s[self.pos]

    def cur_is(self, c: str) -> bool:
        return self.pos < len(self.s) and self.s[self.pos] == c

    def tail(self) -> bool:
        return self.pos >= self.end

    def next_sig(self, start: int | None = None) -> str:
        i = (self.pos if start is None else start) + 1
        while self.inb(i) and self.s[i] == " ":
            i += 1
        return self.s[i] if self.inb(i) else " "

    def index_next_sig(self, start: int, c: str) -> int:
        i = start + 1
        while self.inb(i) and self.s[i] == " ":
            i += 1
        return i if i < len(self.s) and self.s[i] == c else -1

    def next_index_of(self, start: int, c: str) -> int:
        i = start
        while self.inb(i):
            if self.s[i] == c:
                return i
            i += 1
        return -1

    @staticmethod
    def compile(path: str) -> CompiledPath:
        text = path.strip(" ")
        if not text:
            raise ValueError("Path may not be null empty")
        if path[0] not in "$@":  # Jayway tests the untrimmed text's first character
            text = ("$." + path).strip(" ")
        if text.endswith("."):
            raise ValueError("Path must not end with a '.' or '..'")
        compiler = _Compiler(text)
        root = compiler.read_context()
        return CompiledPath(root)

    def read_context(self) -> _Root:
        while self.inb(self.pos) and self.s[self.pos] in " \t\n\r":
            self.pos += 1
        if not self.inb(self.pos) or self.s[self.pos] not in "$@":
            raise ValueError("Path must start with '$' or '@'")
        root = _Root(self.s[self.pos])
        self.last: _Token = root
        if self.tail():
            return root
        self.pos += 1
        if self.s[self.pos] not in ".[":
            raise ValueError(f"Illegal character at position {self.pos} expected '.' or '['")
        self.read_next()
        return root

    def append(self, token: _Token) -> None:
        self.last.next = token
        token.prev = self.last
        self.last = token

    def read_next(self) -> bool:
        c = self.cur()
        if c == "[":
            if "?" == self.next_sig():
                raise Unsupported("filters ([?(...)]) are not supported here")
            if not (self.read_bracket_property() or self.read_array() or self.read_wildcard()):
                raise ValueError(f"Could not parse token starting at position {self.pos}. Expected ?, ', 0-9, * ")
            return True
        if c == ".":
            return self.read_dot()
        if c == "*":
            if not self.read_wildcard():
                raise ValueError(f"Could not parse token starting at position {self.pos}")
            return True
        if not self.read_property():
            raise ValueError(f"Could not parse token starting at position {self.pos}")
        return True

    def read_dot(self) -> bool:
        if self.cur_is(".") and self.inb(self.pos + 1) and self.s[self.pos + 1] == ".":
            self.append(_Scan())
            self.pos += 2
        elif not self.inb(self.pos + 1):
            raise ValueError("Path must not end with a '.")
        else:
            self.pos += 1
        if self.cur_is("."):
            raise ValueError(f"Character '.' on position {self.pos} is not valid.")
        return self.read_next()

    def read_property(self) -> bool:
        if self.cur() in "[*. ":
            return False
        start = read = self.pos
        end = 0
        while self.inb(read):
            c = self.s[read]
            if c == " ":
                raise ValueError(f"Use bracket notion ['my prop'] if your property contains blank characters. "
                                 f"position: {self.pos}")
            if c in ".[":
                end = read
                break
            if c == "(":
                raise Unsupported(f"functions ({self.s[start:read]}()) are not supported here")
            read += 1
        if end == 0:
            end = self.end + 1
        self.pos = end
        self.append(_Prop([self.s[start:end]]))
        return self.tail() or self.read_next()

    def read_wildcard(self) -> bool:
        in_bracket = self.cur_is("[")
        if in_bracket and self.next_sig() != "*":
            return False
        if not self.cur_is("*") and not self.inb(self.pos + 1):
            return False
        if in_bracket:
            star = self.index_next_sig(self.pos, "*")
            if self.next_sig(star) != "]":
                raise ValueError(f"Expected wildcard token to end with ']' on position {star + 1}")
            self.pos = self.index_next_sig(star, "]") + 1
        else:
            self.pos += 1
        self.append(_Wild())
        return self.tail() or self.read_next()

    def read_array(self) -> bool:
        if not self.cur_is("["):
            return False
        nxt = self.next_sig()
        if not (nxt.isdigit() or nxt in "-:"):
            return False
        begin = self.pos + 1
        end = self.next_index_of(begin, "]")
        if end == -1:
            return False
        expression = self.s[begin:end].strip()
        if expression == "*":
            return False
        if any(not (c.isdigit() or c in ",-: ") for c in expression):
            return False
        try:
            if ":" in expression:
                if any(not (c.isdigit() or c in "-:") for c in expression):
                    raise ValueError(f"Failed to parse SliceOperation: {expression}")
                parts = expression.split(":")
                while parts and parts[-1] == "":  # Java's split drops trailing empty strings
                    parts.pop()
                start = _java_parse_int(parts[0]) if len(parts) > 0 and parts[0] != "" else None
                stop = _java_parse_int(parts[1]) if len(parts) > 1 and parts[1] != "" else None
                if start is None and stop is None:
                    raise ValueError(f"Failed to parse SliceOperation: {expression}")
                self.append(_Slice(start, stop))
            else:
                self.append(_Index([_java_parse_int(t) for t in re.split(r"\s*,\s*", expression)]))
        except ValueError as err:
            raise ValueError(f"Failed to parse array operation {expression!r}: {err}") from None
        self.pos = end + 1
        return self.tail() or self.read_next()

    def read_bracket_property(self) -> bool:
        if not self.cur_is("["):
            return False
        quote = self.next_sig()
        if quote not in ("'", '"'):
            return False
        names: list[str] = []
        start = read = self.pos + 1
        end = 0
        in_prop = in_escape = last_comma = False
        while self.inb(read):
            c = self.s[read]
            if in_escape:
                in_escape = False
            elif c == "\\":
                in_escape = True
            elif c == "]" and not in_prop:
                if last_comma:
                    raise ValueError(f"Found empty property at index {read}")
                break
            elif c == quote:
                if in_prop:
                    if self.next_sig(read) not in ("]", ","):
                        raise ValueError("Property must be separated by comma or Property must be terminated "
                                         f"close square bracket at index {read}")
                    end = read
                    names.append(_unescape(self.s[start:end]))
                    in_prop = False
                else:
                    start = read + 1
                    in_prop = True
                    last_comma = False
            elif c == "," and not in_prop:
                if last_comma:
                    raise ValueError(f"Found empty property at index {read}")
                last_comma = True
            read += 1
        if in_prop:
            raise ValueError(f"Property has not been closed - missing closing {quote}")
        self.pos = self.index_next_sig(end, "]") + 1
        self.append(_Prop(names))
        return self.tail() or self.read_next()


def _unescape(text: str) -> str:
    out, i, n = [], 0, len(text)
    simple = {"\\": "\\", "'": "'", '"': '"', "r": "\r", "f": "\f", "t": "\t", "n": "\n", "b": "\b"}
    while i < n:
        ch = text[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        if i + 1 >= n:
            out.append("\\")
            break
        nxt = text[i + 1]
        if nxt == "u":
            digits = text[i + 2:i + 6]
            try:
                out.append(chr(int(digits, 16)))
            except ValueError:
                raise ValueError(f"Unable to parse unicode value: {digits}") from None
            i += 6
        else:
            out.append(simple.get(nxt, nxt))
            i += 2
    return "".join(out)


def compile_path(path: str) -> CompiledPath:
    """Jayway's ``JsonPath.compile``; ValueError for a path it refuses, Unsupported for
    filters and functions."""
    try:
        return _Compiler.compile(path)
    except (Unsupported, ValueError):
        raise
    except IndexError:
        raise ValueError("Path is not complete") from None


# ---- Jayway's evaluation (PathToken and its subclasses, default configuration) --------------
_UNDEFINED = object()


def read_path(path: CompiledPath, document: Any) -> Any:
    """``JsonPath.read`` on a parsed document: the value (definite path) or the list of
    matches; PathError when a definite path matches nothing."""
    results: list[Any] = []
    _eval(path, path.root, "", document, results)
    if path.definite:
        if not results:
            raise PathError(f"No results for path: {path}")
        return results[-1]
    return results


def _eval(path: CompiledPath, token: _Token, current: str, model: Any, out: list[Any]) -> None:
    kind = token.kind
    if kind == "root":
        if token.leaf:
            out.append(model)
        else:
            _eval(path, token.next, token.char, model, out)  # type: ignore[attr-defined,arg-type]
    elif kind == "prop":
        if not isinstance(model, dict):
            if not token.upstream_definite():
                return
            found = "null" if model is None else _java_class(model)
            raise PathError(f"Expected to find an object with property {token.fragment()} in path {current} "
                            f"but found '{found}'. This is not a json object according to the JsonProvider: "
                            "'com.jayway.jsonpath.spi.json.JsonSmartJsonProvider'.")
        names = token.names  # type: ignore[attr-defined]
        if len(names) == 1 or token.leaf:
            _object_property(path, token, current, model, names, out)
        else:
            for name in names:
                _object_property(path, token, current, model, [name], out)
    elif kind in ("index", "slice"):
        if model is None or not isinstance(model, list):
            if not token.upstream_definite():
                return
            if model is None:
                raise PathError(f"The path {current} is null")
            raise PathError(f"Filter: {token.fragment()} can only be applied to arrays. Current context is: "
                            f"{_node_json(model)}")
        if kind == "index":
            for index in token.indexes:  # type: ignore[attr-defined]
                _array_index(path, token, index, current, model, out)
        else:
            _slice(path, token, current, model, out)
    elif kind == "wild":
        if isinstance(model, dict):
            for name in list(model):
                _object_property(path, token, current, model, [name], out)
        elif isinstance(model, list):
            for index in range(len(model)):
                _array_index(path, token, index, current, model, out)
    elif kind == "scan":
        _walk(path, token.next, current, model, out)  # type: ignore[arg-type]


def _object_property(path: CompiledPath, token: _Token, current: str, model: dict, names: list[str],
                     out: list[Any]) -> None:
    if len(names) == 1:
        name = names[0]
        here = f"{current}['{name}']"
        value = model.get(name, _UNDEFINED)
        if value is _UNDEFINED:
            if token.leaf:
                return
            if not (token.upstream_definite() and token.token_definite()):
                return
            raise PathError(f"Missing property in path {here}")
        if token.leaf:
            index = f"[{token.upstream_array_index}]"
            tail_prev = path.tail.prev
            if index == "[-1]" or (tail_prev is not None and tail_prev.fragment() == index):
                out.append(value)
        else:
            _eval(path, token.next, here, value, out)  # type: ignore[arg-type]
        return
    merged = {name: model[name] for name in names if name in model}
    out.append(merged)


def _array_index(path: CompiledPath, token: _Token, index: int, current: str, model: list, out: list[Any]) -> None:
    effective = len(model) + index if index < 0 else index
    if not 0 <= effective < len(model):
        return  # Jayway swallows the IndexOutOfBoundsException
    hit = model[effective]
    if token.leaf:
        out.append(hit)
    else:
        _eval(path, token.next, f"{current}[{index}]", hit, out)  # type: ignore[arg-type]


def _slice(path: CompiledPath, token: _Token, current: str, model: list, out: list[Any]) -> None:
    length = len(model)
    start, stop = token.start, token.stop  # type: ignore[attr-defined]
    if stop is None:  # [from:]
        start = max(0, length + start if start < 0 else start)
        indexes = range(start, length) if length and start < length else range(0)
    elif start is None:  # [:to]
        stop = min(length, length + stop if stop < 0 else stop)
        indexes = range(0, stop) if length else range(0)
    else:  # [from:to]: Jayway neither adjusts a negative from nor a negative to
        stop = min(length, stop)
        indexes = range(start, stop) if start < stop and length else range(0)
    for index in indexes:
        _array_index(path, token, index, current, model, out)


def _walk(path: CompiledPath, target: _Token, current: str, model: Any, out: list[Any]) -> None:
    if isinstance(model, dict):
        if _scan_matches(target, model):
            _eval(path, target, current, model, out)
        for name, value in list(model.items()):
            _walk(path, target, f"{current}['{name}']", value, out)
    elif isinstance(model, list):
        if _scan_matches(target, model):
            if target.leaf:
                _eval(path, target, current, model, out)
            else:
                following = target.next
                for index, element in enumerate(model):
                    following.upstream_array_index = index  # type: ignore[union-attr]
                    _eval(path, following, f"{current}[{index}]", element, out)  # type: ignore[arg-type]
        for index, element in enumerate(model):
            _walk(path, target, f"{current}[{index}]", element, out)


def _scan_matches(target: _Token, model: Any) -> bool:
    if target.kind == "prop":
        if not isinstance(model, dict):
            return False
        if not target.token_definite():
            return True
        return all(name in model for name in target.names)  # type: ignore[attr-defined]
    if target.kind in ("index", "slice"):
        return isinstance(model, list)
    return target.kind == "wild"


def _java_class(value: Any) -> str:
    if isinstance(value, bool):
        return "java.lang.Boolean"
    if isinstance(value, str):
        return "java.lang.String"
    if isinstance(value, int):
        return "java.lang.Integer" if -2**31 <= value < 2**31 else "java.lang.Long"
    if isinstance(value, float):
        return "java.lang.Double"
    if isinstance(value, decimal.Decimal):
        return "java.math.BigDecimal"
    return "net.minidev.json.JSONArray"


# ---- json-smart's permissive parser (JSONParserBase, JSONParserMemory, JSONParserString) ----
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
        return self.read_first()

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
        start = self.pos
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
            self.skip_space()
            if self._not_stop(stop):
                self.skip_nq(stop)
                return self.extract_trim(start, min(self.pos, self.n))
            return _smart_int(self.extract_trim(start, min(self.pos, self.n)))
        if self.c == ".":
            self.read()
            self.skip_digits()
        if self.c not in "Ee":
            self.skip_space()
            if self._not_stop(stop):
                self.skip_nq(stop)
                return self.extract_trim(start, min(self.pos, self.n))
            return self.extract_float(self.extract_trim(start, min(self.pos, self.n)))
        self.read()
        if self.c in "+-" or "0" <= self.c <= "9":
            self.read()
            self.skip_digits()
            self.skip_space()
            if self._not_stop(stop):
                self.skip_nq(stop)
                return self.extract_trim(start, min(self.pos, self.n))
            return self.extract_float(self.extract_trim(start, min(self.pos, self.n)))
        self.skip_nq(stop)
        return self.extract_trim(start, min(self.pos, self.n))

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
        body = self.s[self.pos + 1:close]
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

    def read_first(self) -> Any:
        return self.read_value(_STOP_X, top=True)

    def read_value(self, stop: frozenset, top: bool = False) -> Any:
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
        document = json.loads(text, parse_float=_smart_float_json, parse_constant=_constant)
    except (ValueError, RecursionError):
        try:
            document = _SmartParser(text).parse()
        except RecursionError:
            raise PathError("the document is nested too deeply") from None
    if document is None:
        raise HardError("root can not be null")
    return document


def _smart_float_json(text: str) -> Any:
    return decimal.Decimal(text) if len(text) > 18 else float(text)


# ---- Java's texts of values (Jackson's writer, Double.toString, BigDecimal.toString) -------
def _java_float_text(value: float, single: bool = False) -> str:
    """Double.toString (Float.toString with ``single``), with the shortest digits."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    shortest = str(np.float32(value)) if single else repr(value)
    d = decimal.Decimal(shortest)
    sign, digits, exponent = d.as_tuple()
    text_digits = "".join(map(str, digits)).rstrip("0") or "0"
    adjusted = d.adjusted()
    minus = "-" if sign else ""
    if -3 <= adjusted < 7:
        if adjusted >= 0:
            whole = text_digits[:adjusted + 1].ljust(adjusted + 1, "0")
            fraction = text_digits[adjusted + 1:] or "0"
        else:
            whole = "0"
            fraction = "0" * (-adjusted - 1) + text_digits
        return f"{minus}{whole}.{fraction}"
    return f"{minus}{text_digits[0]}.{text_digits[1:] or '0'}E{adjusted}"


def _java_decimal_text(value: decimal.Decimal) -> str:
    """BigDecimal.toString: Python's str of a Decimal follows the same rule."""
    return str(value)


_JSON_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\f": "\\f", "\n": "\\n", "\r": "\\r"}
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f]')


def _json_string(text: str) -> str:
    """A JSON string as Jackson writes it (control characters as ``\\u00XX`` in capitals)."""
    return '"' + _NEEDS_ESCAPE.sub(lambda m: _JSON_ESCAPES.get(m[0], f"\\u{ord(m[0]):04X}"), text) + '"'


def _node_json(value: Any) -> str:
    """Jackson's ``JsonNode.toString`` of a parsed value."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _java_float_text(value) if math.isfinite(value) else f'"{_java_float_text(value)}"'
    if isinstance(value, decimal.Decimal):
        return _java_decimal_text(value)
    if isinstance(value, str):
        return _json_string(value)
    if isinstance(value, list):
        return "[" + ",".join(_node_json(v) for v in value) + "]"
    return "{" + ",".join(f"{_json_string(k)}:{_node_json(v)}" for k, v in value.items()) + "}"


def _java_text(value: Any) -> str:
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
        return _java_float_text(value)
    if isinstance(value, decimal.Decimal):
        return _java_decimal_text(value)
    if value is None:
        return "null"
    return ""


def _normalise_decimal(value: decimal.Decimal) -> decimal.Decimal:
    """Jackson's JsonNodeFactory strips a BigDecimal's trailing zeros (zero is ``0``)."""
    if value.is_zero():
        return decimal.Decimal(0)
    return value.normalize(_DEC)


# ---- the source column as JSON text (Jackson writing SeaTunnel's Java values) -------------
def _check_source(kind: pa.DataType, key: str, column: str, top: bool = True) -> None:
    if top and (pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_binary(kind)
                or pa.types.is_large_binary(kind)):
        return
    if pa.types.is_dictionary(kind) and top:
        return _check_source(kind.value_type, key, column, top)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        return _check_source(kind.value_type, key, column, False)
    if pa.types.is_map(kind):
        key_type = kind.key_type
        if not (pa.types.is_string(key_type) or pa.types.is_large_string(key_type) or pa.types.is_integer(key_type)
                or pa.types.is_boolean(key_type) or pa.types.is_floating(key_type) or pa.types.is_decimal(key_type)):
            raise ConfigError(key, f"{column} is a map keyed by {type_name(key_type)}: not supported here")
        return _check_source(kind.item_type, key, column, False)
    if pa.types.is_struct(kind):
        if not top:
            raise ConfigError(key, f"{column} holds a nested row: SeaTunnel writes it as a Java bean; not supported here")
        for field in kind:
            _check_source(field.type, key, column, False)
        return
    if top:
        raise ConfigError(key, f"{column} is {type_name(kind)}: JsonPath reads string, bytes, row, array or map columns")
    if pa.types.is_timestamp(kind) and kind.tz is not None:
        raise ConfigError(key, f"{column} holds timestamps with a time zone: not supported here")
    if not (pa.types.is_null(kind) or pa.types.is_boolean(kind) or pa.types.is_integer(kind)
            or pa.types.is_floating(kind) or pa.types.is_decimal(kind) or pa.types.is_string(kind)
            or pa.types.is_large_string(kind) or pa.types.is_binary(kind) or pa.types.is_large_binary(kind)
            or pa.types.is_date(kind) or pa.types.is_time(kind) or pa.types.is_timestamp(kind)):
        raise ConfigError(key, f"{column} holds {kind}: not supported here")


def _time_parts(hour: int, minute: int, second: int, nanos: int) -> list[int]:
    parts = [hour, minute]
    if second > 0 or nanos > 0:
        parts.append(second)
        if nanos > 0:
            parts.append(nanos)
    return parts


def _source_json(value: Any, kind: pa.DataType) -> str:
    """Jackson's text of SeaTunnel's Java value of an Arrow ``kind`` (JavaTimeModule:
    dates and times as arrays, nanoseconds last)."""
    if value is None:
        return "null"
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    if pa.types.is_boolean(kind):
        return "true" if value else "false"
    if pa.types.is_integer(kind):
        return str(value)
    if pa.types.is_floating(kind):
        text = _java_float_text(float(value), single=kind.bit_width == 32)
        return text if math.isfinite(value) else f'"{text}"'
    if pa.types.is_decimal(kind):
        return _java_decimal_text(value)
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return _json_string(value)
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        return '"' + base64.b64encode(value).decode("ascii") + '"'
    if pa.types.is_date(kind):
        return json.dumps([value.year, value.month, value.day])
    if pa.types.is_time(kind):
        return json.dumps(_time_parts(value.hour, value.minute, value.second, value.microsecond * 1000))
    if pa.types.is_timestamp(kind):
        return json.dumps([value.year, value.month, value.day]
                          + _time_parts(value.hour, value.minute, value.second, value.microsecond * 1000))
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        return "[" + ",".join(_source_json(v, kind.value_type) for v in value) + "]"
    if pa.types.is_map(kind):
        entries = dict(value)  # a Java map keeps one entry per key
        return "{" + ",".join(f"{_json_string(_key_text(k, kind.key_type))}:{_source_json(v, kind.item_type)}"
                              for k, v in entries.items()) + "}"
    if pa.types.is_struct(kind):  # the top-level row: its fields, as an array
        return "[" + ",".join(_source_json(value.get(f.name), f.type) for f in kind) + "]"
    return "null" if pa.types.is_null(kind) else _json_string(str(value))


def _key_text(key: Any, kind: pa.DataType) -> str:
    if pa.types.is_boolean(kind):
        return "true" if key else "false"
    if pa.types.is_floating(kind):
        return _java_float_text(float(key), single=kind.bit_width == 32)
    if pa.types.is_decimal(kind):
        return _java_decimal_text(key)
    return str(key)


# ---- Jackson node -> dest_type (SeaTunnel's JsonToRowConverters) --------------------------
_JAVA_FLOAT = re.compile(
    r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?"
    r"|0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+[fFdD]?)")
_JAVA_DECIMAL = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_RANGES = {8: (-2**7, 2**7 - 1), 16: (-2**15, 2**15 - 1), 32: (-2**31, 2**31 - 1), 64: (-2**63, 2**63 - 1)}
_CONTROL = "".join(chr(i) for i in range(33))


def _jtrim(text: str) -> str:
    """String.trim: characters up to the space."""
    return text.strip(_CONTROL)


def _parse_java_int(text: str, bits: int) -> int:
    low, high = _RANGES[bits]
    if not re.fullmatch(r"[+-]?\d+", text):
        raise HardError(f"NumberFormatException: For input string: \"{text}\"")
    number = int(text)
    if not low <= number <= high:
        raise HardError(f"NumberFormatException: Value out of range. Value:\"{text}\"")
    return number


def _parse_java_float(text: str) -> float:
    """Double.parseDouble / Float.parseFloat (they trim themselves)."""
    body = _jtrim(text)
    if not _JAVA_FLOAT.fullmatch(body):
        raise HardError(f"NumberFormatException: For input string: \"{text}\"" if body else
                        "NumberFormatException: empty String")
    core = body.rstrip("fFdD") if "x" not in body.lower() else body
    if "NaN" in core:
        return math.nan
    if "Infinity" in core:
        return -math.inf if core.startswith("-") else math.inf
    if "x" in core.lower():
        core = core.rstrip("fFdD")
        return float.fromhex(core)
    return float(core)


class _Converters:
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
            return lambda node: _node_json(node) if isinstance(node, (dict, list)) else _java_text(node)
        if pa.types.is_boolean(kind):
            return lambda node: node if isinstance(node, bool) else _jtrim(_java_text(node)).lower() == "true"
        if pa.types.is_integer(kind):
            bits = kind.bit_width
            if bits <= 16:
                return lambda node: _parse_java_int(_jtrim(_java_text(node)), bits)
            return lambda node: _to_int(node, bits)
        if pa.types.is_floating(kind):
            return lambda node: node if isinstance(node, float) else _parse_java_float(_java_text(node))
        if pa.types.is_decimal(kind):
            return lambda node: _to_decimal(node, kind)
        if pa.types.is_date(kind):
            return lambda node: _to_date(_java_text(node))
        if pa.types.is_time(kind):
            return lambda node: self._to_time(_java_text(node))
        if pa.types.is_timestamp(kind):
            return lambda node: self._to_timestamp(_java_text(node))
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
                        raise HardError(f"Field $.{name} in {_node_json(node)}: {err}") from None
                return row

            return to_row
        raise ConfigError(self.where, f"dest_type {type_name(kind)} is not supported here")

    def _warn(self, text: str) -> None:
        if not self.warned:
            self.warned = True
            log.warning("%s: %r has digits past the microsecond; they are dropped (SeaTunnel keeps nanoseconds)",
                        self.where, text)

    def _to_time(self, text: str) -> dt.time:
        match = re.fullmatch(r"([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{0,9}))?", text)
        if match is None:
            raise HardError(f"DateTimeParseException: Text '{text}' could not be parsed")
        hour, minute, second = int(match[1]), int(match[2]), int(match[3])
        return dt.time(*_check_hms(text, hour, minute, second), self._micros(text, match[4]))

    def _micros(self, text: str, fraction: str | None) -> int:
        fraction = fraction or ""
        if fraction[6:].strip("0"):
            self._warn(text)
        return int(fraction[:6].ljust(6, "0"))

    def _to_timestamp(self, text: str) -> dt.datetime:
        for pattern, date_sep, strict in _TIMESTAMP_FORMATS.get(min(len(text), 20), ()):
            if pattern.fullmatch(text):
                break
        else:
            if len(text) == 14:
                pattern, date_sep, strict = _TS14, "", False
            else:
                raise HardError(f"ErrorCode:[COMMON-33], ErrorDescription:[The datetime format '{text}' of field "
                                "'null' is not supported. Please check the datetime format.]")
        match = _TIMESTAMP_PARSE[date_sep].fullmatch(text)
        if match is None:
            raise HardError(f"DateTimeParseException: Text '{text}' could not be parsed")
        year, month, day = int(match["y"]), int(match["mo"]), int(match["d"])
        hour, minute = int(match["h"]), int(match["mi"])
        second = int(match["s"]) if match["s"] else 0
        date = _resolve_date(text, year, month, day, strict)
        hms = _check_hms(text, hour, minute, second)
        return dt.datetime(date.year, date.month, date.day, *hms, self._micros(text, match["f"]))


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


_DATE_FORMATS = [re.compile(p) for p in (r"([0-9]{4})-([0-9]{2})-([0-9]{2})", r"([0-9]{4})年([0-9]{2})月([0-9]{2})日",
                                         r"([0-9]{4})/([0-9]{2})/([0-9]{2})", r"([0-9]{4})\.([0-9]{2})\.([0-9]{2})",
                                         r"([0-9]{4})([0-9]{2})([0-9]{2})")]


def _to_date(text: str) -> dt.date:
    for pattern in _DATE_FORMATS:
        match = pattern.fullmatch(text)
        if match:
            return _resolve_date(text, int(match[1]), int(match[2]), int(match[3]), strict=False)
    raise HardError(f"ErrorCode:[COMMON-20], ErrorDescription:[The date format '{text}' of field 'null' is not "
                    "supported. Please check the date format.]")


_JSPACE = r"[ \t\n\x0b\f\r]"
#: DateTimeUtils.matchDateTimeFormatter: by length (19; more, under key 20), the pattern
#: that picks the formatter, the formatter's date separator and whether it is STRICT
_TIMESTAMP_FORMATS = {
    19: [(re.compile(rf"[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}}{_JSPACE}[0-9]{{2}}:[0-9]{{2}}:[0-9]{{2}}"), "- ", False),
         (re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}"), "-T", False),
         (re.compile(rf"[0-9]{{4}}/[0-9]{{2}}/[0-9]{{2}}{_JSPACE}[0-9]{{2}}:[0-9]{{2}}:[0-9]{{2}}"), "/ ", False),
         (re.compile(rf"[0-9]{{4}}\.[0-9]{{2}}\.[0-9]{{2}}{_JSPACE}[0-9]{{2}}:[0-9]{{2}}:[0-9]{{2}}"), ". ", False)],
    20: [(re.compile(rf"[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}}{_JSPACE}[0-9]{{2}}:[0-9]{{2}}.*", re.S), "- iso", False),
         (re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}.*", re.S), "-Tiso", True),
         (re.compile(rf"[0-9]{{4}}/[0-9]{{2}}/[0-9]{{2}}{_JSPACE}[0-9]{{2}}:[0-9]{{2}}.*", re.S), "/ iso", False),
         (re.compile(rf"[0-9]{{4}}\.[0-9]{{2}}\.[0-9]{{2}}{_JSPACE}[0-9]{{2}}:[0-9]{{2}}.*", re.S), ". iso", False),
         (re.compile(rf"[0-9]{{4}}年[0-9]{{2}}月[0-9]{{2}}日{_JSPACE}[0-9]{{2}}时[0-9]{{2}}分[0-9]{{2}}秒"), "cn", False)],
}
_TS14 = re.compile(r".{14}", re.S)
_D = r"(?P<y>[0-9]{4})%s(?P<mo>[0-9]{2})%s(?P<d>[0-9]{2})"
_ISO_TIME = r"(?P<h>[0-9]{2}):(?P<mi>[0-9]{2})(?::(?P<s>[0-9]{2})(?:\.(?P<f>[0-9]{0,9}))?)?"
_HMS = r"(?P<h>[0-9]{2}):(?P<mi>[0-9]{2}):(?P<s>[0-9]{2})(?P<f>)"
_TIMESTAMP_PARSE = {
    "- ": re.compile(_D % ("-", "-") + " " + _HMS), "-T": re.compile(_D % ("-", "-") + "T" + _HMS),
    "/ ": re.compile(_D % ("/", "/") + " " + _HMS), ". ": re.compile(_D % (r"\.", r"\.") + " " + _HMS),
    "- iso": re.compile(_D % ("-", "-") + " " + _ISO_TIME), "-Tiso": re.compile(_D % ("-", "-") + "T" + _ISO_TIME),
    "/ iso": re.compile(_D % ("/", "/") + " " + _ISO_TIME), ". iso": re.compile(_D % (r"\.", r"\.") + " " + _ISO_TIME),
    "cn": re.compile(_D % ("年", "月") + "日 (?P<h>[0-9]{2})时(?P<mi>[0-9]{2})分(?P<s>[0-9]{2})秒(?P<f>)"),
    "": re.compile(_D % ("", "") + "(?P<h>[0-9]{2})(?P<mi>[0-9]{2})(?P<s>[0-9]{2})(?P<f>)"),
}


def _to_int(node: Any, bits: int) -> int:
    low, high = _RANGES[bits]
    if not isinstance(node, bool) and isinstance(node, (int, float, decimal.Decimal)):
        if isinstance(node, float) and math.isnan(node):
            pass
        elif low <= node <= high or (isinstance(node, float) and float(low) <= node <= float(high)):
            return max(low, min(high, int(node)))  # (int) / (long) truncates
    return _parse_java_int(_jtrim(_java_text(node)), bits)


def _to_decimal(node: Any, kind: pa.Decimal128Type) -> decimal.Decimal:
    if isinstance(node, decimal.Decimal):
        value = node
    else:
        text = _java_text(node)  # new BigDecimal(text): no trim
        if not _JAVA_DECIMAL.fullmatch(text):
            raise HardError(f"NumberFormatException: Character array is missing \"exponent\" mark 'e' or 'E'."
                            if text else "NumberFormatException: empty String")
        value = decimal.Decimal(text)
    fitted = value.quantize(decimal.Decimal(1).scaleb(-kind.scale), context=_DEC)
    if fitted != value or abs(fitted) >= decimal.Decimal(10) ** (kind.precision - kind.scale):
        raise HardError(f"{_java_decimal_text(value)} does not fit {type_name(kind)} (SeaTunnel passes the unscaled "
                        "value on; here the column's type must hold it)")
    return fitted


def _to_bytes(node: Any) -> bytes | None:
    if not isinstance(node, str):
        return None  # JsonNode.binaryValue() of anything but text is null
    try:
        return base64.b64decode(re.sub(r"[\x00-\x20]", "", node), validate=True)
    except (binascii.Error, ValueError) as err:
        raise HardError(f"not base64 text: {err}") from None


# ---- the transform -------------------------------------------------------------------------
class _Column:
    def __init__(self, index: int, entry: Any, key: str):
        where = f"{key}[{index}]"
        if not isinstance(entry, Mapping):
            raise ConfigError(where, f"expected {{src_field, path, dest_field[, dest_type, column_error_handle_way]}}, "
                                     f"got {entry!r}")
        for name in entry:
            if name not in _COLUMN_KEYS:
                raise ConfigError(f"{where}.{name}", f"unknown option for a JsonPath column; known options: "
                                                     f"{', '.join(_COLUMN_KEYS)}")
        values = {}
        for name in ("path", "src_field", "dest_field"):  # SeaTunnel checks them in this order
            value = entry.get(name)
            if not isinstance(value, str) or not value.strip():
                raise ConfigError(f"{where}.{name}", f"is required (a non-empty string), got {value!r}")
            values[name] = value
        self.path_text, self.src, self.dest = values["path"], values["src_field"], values["dest_field"]
        self.where = where
        dest_type = entry.get("dest_type", "string")
        self.kind = seatunnel_type(dest_type, f"{where}.dest_type")
        way = entry.get("column_error_handle_way")
        if way is not None and way not in _WAYS:
            raise ConfigError(f"{where}.column_error_handle_way",
                              f"{way!r} is not one of {', '.join(_WAYS)} (SeaTunnel reads it in capitals)")
        self.way: str | None = way
        try:
            self.path = compile_path(self.path_text)
        except Unsupported as err:
            raise ConfigError(f"{where}.path", f"{self.path_text!r}: {err}") from None
        except ValueError as err:
            raise ConfigError(f"{where}.path", f"{self.path_text!r} is not a JsonPath: {err}") from None
        self.convert = _Converters(where).build(self.kind)


class JsonPathTransform(Transform):
    plugin_name = "JsonPath"

    def __init__(self, options: Mapping[str, Any]):
        super().__init__(options)
        opts = Options(self.plugin_name, options, known={"columns", "row_error_handle_way"})
        way = opts.str("row_error_handle_way", "FAIL")
        if way.upper() not in ("FAIL", "SKIP"):
            raise ConfigError("row_error_handle_way", f"{way!r} is not one of FAIL, SKIP")
        self.row_way = way.upper()
        columns = options.get("columns")
        if not isinstance(columns, list) or not columns:
            raise ConfigError("columns", "is required for JsonPath: a non-empty list of {src_field, path, dest_field}")
        self.columns = [_Column(i, entry, "columns") for i, entry in enumerate(columns)]
        dests = [c.dest for c in self.columns]
        for index, dest in enumerate(dests):
            if dest in dests[:index]:
                raise ConfigError(f"columns[{index}].dest_field", f"{dest!r} is written by an earlier column too")

    def _bind(self, schema: pa.Schema) -> None:
        for index, column in enumerate(self.columns):
            key = option_key(self, f"columns[{index}].src_field")
            position = schema.get_field_index(column.src)
            if position < 0:
                raise ConfigError(key, f"no column {column.src!r} in the rows (columns: {schema.names})")
            _check_source(schema.field(position).type, key, column.src)

    def output_schema(self, input_schema: pa.Schema | None) -> pa.Schema | None:
        if input_schema is None:
            return None
        self._bind(input_schema)
        return self._out_schema(input_schema)

    def _out_schema(self, schema: pa.Schema) -> pa.Schema:
        for column in self.columns:
            field = pa.field(column.dest, column.kind, nullable=True)
            index = schema.get_field_index(column.dest)
            schema = schema.set(index, field) if index >= 0 else schema.append(field)
        return schema

    def process(self, batch: pa.RecordBatch, split_state: dict[str, Any] | None) -> pa.RecordBatch | None:
        self._bind(batch.schema)
        rows = batch.num_rows
        sources: dict[str, tuple[pa.Array, list[str], list[Any]]] = {}
        decision = np.zeros(rows, dtype=np.int8)  # 0 keep, 1 drop, 2 fail
        decided_by = np.full(rows, -1, dtype=np.int64)  # the column that dropped or failed the row
        outputs: list[pa.Array] = []
        messages: list[list[str | None]] = []
        for number, column in enumerate(self.columns):
            if column.src not in sources:
                sources[column.src] = _distinct_documents(batch.column(column.src))
            indices, _, documents = sources[column.src]
            values: list[Any] = []
            status = np.zeros(len(documents), dtype=np.int8)  # 0 ok, 1 path error, 2 hard error
            errors: list[str | None] = []
            for position, document in enumerate(documents):
                value, error = None, None
                try:
                    if isinstance(document, Exception):
                        raise document
                    value = column.convert(_result_node(read_path(column.path, document)))
                except PathError as err:
                    status[position], error = 1, str(err)
                except HardError as err:
                    status[position], error = 2, str(err)
                values.append(value)
                errors.append(error)
            messages.append(errors)
            try:
                distinct = pa.array(values, type=column.kind)
            except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as err:
                raise DataError(f"{option_key(self, column.where)}: a {type_name(column.kind)} value does not fit: "
                                f"{err}") from None
            outputs.append(pc.take(distinct, indices))
            positions = np.asarray(indices.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64)
            valid = positions >= 0
            row_status = np.zeros(rows, dtype=np.int8)
            row_status[valid] = status[positions[valid]]
            path_outcome = {"SKIP": 0, "SKIP_ROW": 1, "FAIL": 2, None: 1 if self.row_way == "SKIP" else 2}[column.way]
            outcome = np.where(row_status == 1, path_outcome, np.where(row_status == 2, 2, 0)).astype(np.int8)
            stops = (decision == 0) & (outcome != 0)
            decision[stops] = outcome[stops]
            decided_by[stops] = number
        failed = np.flatnonzero(decision == 2)
        if len(failed):
            row = int(failed[0])
            number = int(decided_by[row])
            column = self.columns[number]
            indices, texts, _ = sources[column.src]
            position = indices[row].as_py()
            raise DataError(f"{option_key(self, column.where)}: JsonPath {column.path_text!r} on {column.src} "
                            f"{_preview(texts[position])}: {messages[number][position]}")
        result = batch
        for column, values in zip(self.columns, outputs):
            field = pa.field(column.dest, column.kind, nullable=True)
            index = result.schema.get_field_index(column.dest)
            result = result.set_column(index, field, values) if index >= 0 else result.append_column(field, values)
        if decision.any():
            result = result.filter(pa.array(decision == 0))
        return result


def _preview(text: str) -> str:
    return f"= {text[:200]!r}" + ("..." if len(text) > 200 else "")


def _result_node(result: Any) -> Any:
    """Jackson's valueToTree of Jayway's result: BigDecimals lose their trailing zeros."""
    if isinstance(result, decimal.Decimal):
        return _normalise_decimal(result)
    if isinstance(result, list):
        return [_result_node(v) for v in result]
    if isinstance(result, dict):
        return {k: _result_node(v) for k, v in result.items()}
    return result


def _distinct_documents(column: pa.Array) -> tuple[pa.Array, list[str], list[Any]]:
    """The column as indices into its distinct JSON texts, those texts, and each parsed
    (or the PathError/HardError its parsing raised)."""
    kind = column.type
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if pa.types.is_dictionary(kind):
        column = column.cast(kind.value_type)
        kind = kind.value_type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        encoded = column.dictionary_encode()
        texts = encoded.dictionary.to_pylist()
    elif pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        encoded = column.dictionary_encode()
        texts = [value.decode("utf-8", "replace") for value in encoded.dictionary.to_pylist()]
    else:
        rows = [None if value is None else _source_json(value, kind) for value in column.to_pylist()]
        encoded = pa.array(rows, pa.string()).dictionary_encode()
        texts = encoded.dictionary.to_pylist()
    documents: list[Any] = []
    for text in texts:
        try:
            documents.append(parse_json(text))
        except (PathError, HardError) as err:
            documents.append(err)
    return encoded.indices, texts, documents
