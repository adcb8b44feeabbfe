"""SeaTunnel's job files in HOCON (``.conf``), read as SeaTunnel reads them.

SeaTunnel parses job files with a patched Typesafe Config, and three of its patches
change what a file means (a dot is part of a key; plugin blocks become a list, in file
order, the same name possibly twice; key order is kept), so a general HOCON library reads
them differently. The rest is standard HOCON; ``${name}`` outside quotes is resolved from
the document, then the job's variables, then the environment; ``include`` is refused. The
result is the document the YAML form gives; errors are one line with the file and line.

The dialect, item by item: docs/seatunnel.md, "Formats" and "Variables".
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from .unrendered import unrendered_jinja

#: fields whose object value SeaTunnel turns into a list of plugin entries
PLUGIN_SECTIONS = ("source", "transform", "sink")
_NUMBER = re.compile(r"-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?")
#: a number up to its exponent's sign, where a ``+`` belongs to the number
_EXPONENT_SIGN = re.compile(r"-?(0|[1-9]\d*)(\.\d+)?[eE]")
#: characters that end an unquoted string (HOCON's forbidden characters, whitespace aside)
_UNQUOTED_STOP = set('$"{}[]:=,+#`^?!@*&\\\n')
_INCLUDE_FORMS = ("file(", "url(", "classpath(", "required(")
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


@dataclass
class _Subst:
    """An unquoted ``${name}`` / ``${?name}``, resolved once the whole file is read."""

    name: str
    optional: bool
    line: int


@dataclass
class _Concat:
    """Pieces of one value written side by side (strings, substitutions, whitespace)."""

    pieces: list[Any]
    line: int


class _Parser:
    def __init__(self, text: str, origin: str):
        self.text = text
        self.origin = origin
        self.pos = 0
        self.line = 1

    # ---- errors and low-level scanning ----------------------------------------------------
    def error(self, problem: str, line: int | None = None) -> ConfigError:
        line = line or self.line
        # `{{ x }}` reads as an object where a key belongs: name the template, not that
        return unrendered_jinja(self.origin, self.text, line) or ConfigError(
            f"{self.origin}:{line}", f"{problem} (HOCON)"
        )

    def peek(self, n: int = 1) -> str:
        return self.text[self.pos : self.pos + n]

    def advance(self, n: int = 1) -> str:
        chunk = self.text[self.pos : self.pos + n]
        self.line += chunk.count("\n")
        self.pos += n
        return chunk

    def skip_inline_space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in " \t\r\ufeff":
            self.pos += 1
        if self.peek() == "#" or self.peek(2) == "//":
            while self.pos < len(self.text) and self.text[self.pos] != "\n":
                self.pos += 1

    def skip_space(self) -> None:
        """Whitespace, newlines and comments."""
        while True:
            self.skip_inline_space()
            if self.peek() == "\n":
                self.advance()
                continue
            return

    def skip_separators(self) -> None:
        while True:
            self.skip_space()
            if self.peek() == ",":
                self.advance()
                continue
            return

    # ---- structure ---------------------------------------------------------------------------
    def document(self) -> dict[str, Any]:
        self.skip_space()
        if self.peek() == "{":
            self.advance()
            root = self.fields(closing="}", section=None)
        else:
            root = self.fields(closing="", section=None)
        self.skip_space()
        if self.pos < len(self.text):
            raise self.error(f"unexpected {self.peek()!r}")
        return root

    def fields(self, closing: str, section: str | None) -> Any:
        """The fields of an object up to ``closing`` ("" = end of text). In a plugin
        section, a list of plugin entries instead."""
        result: dict[str, Any] = {}
        plugins: list[dict[str, Any]] = []
        start_line = self.line
        while True:
            self.skip_separators()
            if closing and self.peek() == closing:
                self.advance()
                break
            if self.pos >= len(self.text):
                if closing:
                    raise self.error(f"'{{' opened on line {start_line} is never closed", start_line)
                break
            line = self.line
            key = self.key()
            self.skip_inline_space()
            if key == "include" and (self.peek() == '"' or self.text.startswith(_INCLUDE_FORMS, self.pos)):
                raise self.error("include is not supported: put everything in one job file")
            append = False
            if self.peek(2) == "+=":
                self.advance(2)
                append = True
            elif self.peek() in ("=", ":"):
                self.advance()
            elif self.peek() != "{":
                raise self.error(f"expected '=', ':' or '{{' after key {key!r}")
            self.skip_space()  # Typesafe Config reads the value on a later line too
            value = self.value(key, line)
            if section is not None:
                if not isinstance(value, dict):
                    raise self.error(f"{section}: expected a block like {key} {{ ... }}", line)
                plugins.append({"plugin_name": key, **value} if "plugin_name" not in value else value)
                continue
            if append:
                value = _Concat([result.get(key, []), [value]], line)
            _put(result, key, value)
        return plugins if section is not None else result

    def key(self) -> str:
        if self.peek(3) == '"""':
            raise self.error("a key cannot be a triple-quoted string")
        if self.peek() == '"':
            return self.quoted()
        start = self.pos
        while (
            self.pos < len(self.text)
            and self.text[self.pos] not in _UNQUOTED_STOP | set(" \t\r")
            and self.peek(2) != "//"
        ):
            self.pos += 1
        key = self.text[start : self.pos]
        if not key:
            raise self.error(f"expected a key, found {self.peek()!r}" if self.peek() else "expected a key")
        return key

    def value(self, key: str | None, key_line: int | None = None) -> Any:
        """One value: pieces side by side on a line, ended by a comma, newline, comment or
        closing bracket."""
        line = key_line or self.line
        pieces: list[Any] = []
        while True:
            char = self.peek()
            if not char or char in ",\n}]" or char == "#" or self.peek(2) == "//":
                break
            if char in " \t\r":
                start = self.pos
                self.skip_inline_space()
                if self.pos < len(self.text) and self.peek() not in ",\n}]#" and self.peek(2) != "//" and pieces:
                    pieces.append(_Space(self.text[start : self.pos]))
                continue
            if char == "{":
                self.advance()
                section = key if key in PLUGIN_SECTIONS else None
                pieces.append(self.fields(closing="}", section=section))
            elif char == "[":
                self.advance()
                pieces.append(self.array())
            elif self.peek(3) == '"""':
                pieces.append(_Quoted(self.triple()))
            elif char == '"':
                pieces.append(_Quoted(self.quoted()))
            elif self.peek(2) == "${":
                pieces.append(self.substitution())
            else:
                pieces.append(self.unquoted())
        if not pieces:
            raise self.error(f"{key}: a value is missing" if key else "a value is missing", line)
        if len(pieces) > 1:
            return _Concat(pieces, line)
        piece = pieces[0]
        if isinstance(piece, _Quoted):
            return str(piece)
        return _typed(piece) if isinstance(piece, str) else piece  # unquoted text, or an object, list, ${}

    def array(self) -> list[Any]:
        items: list[Any] = []
        start_line = self.line
        while True:
            self.skip_separators()
            if self.peek() == "]":
                self.advance()
                return items
            if self.pos >= len(self.text):
                raise self.error(f"'[' opened on line {start_line} is never closed", start_line)
            items.append(self.value(None))

    def quoted(self) -> str:
        line = self.line
        self.advance()
        out: list[str] = []
        while True:
            char = self.advance()
            if not char or char == "\n":
                raise self.error("a quoted string is not closed on its line", line)
            if char == '"':
                return "".join(out)
            if char == "\\":
                escape = self.advance()
                if escape == "u":
                    digits = self.advance(4)
                    try:
                        out.append(chr(int(digits, 16)))
                    except ValueError:
                        raise self.error(f"bad escape \\u{digits}") from None
                elif escape in _ESCAPES:
                    out.append(_ESCAPES[escape])
                else:
                    raise self.error(f"bad escape \\{escape} in a quoted string")
            else:
                out.append(char)

    def triple(self) -> str:
        line = self.line
        self.advance(3)
        end = self.text.find('"""', self.pos)
        if end < 0:
            raise self.error('a """ string is never closed', line)
        while self.text[end + 3 : end + 4] == '"':  # extra quotes belong to the string
            end += 1
        return self.advance(end - self.pos + 3)[:-3]

    def substitution(self) -> _Subst:
        line = self.line
        end = self.text.find("}", self.pos)
        if end < 0 or "\n" in self.text[self.pos : end]:
            raise self.error("a ${ substitution is not closed", line)
        body = self.advance(end - self.pos + 1)[2:-1].strip()
        optional = body.startswith("?")
        name = body[1:].strip() if optional else body
        if not name or ":" in name:
            raise self.error(
                f"${{{body}}}: a default value (${{name:default}}) must be inside quotes, as in SeaTunnel", line
            )
        return _Subst(name, optional, line)

    def unquoted(self) -> str:
        start = self.pos
        while self.pos < len(self.text):
            char = self.text[self.pos]
            if char == "+" and _EXPONENT_SIGN.fullmatch(self.text, start, self.pos):
                pass  # a number's exponent (1.5e+38): HOCON reads numbers as JSON does
            elif char in _UNQUOTED_STOP or char in " \t\r" or self.peek(2) == "//":
                break
            self.pos += 1
        if self.pos == start:
            raise self.error(f"unexpected {self.peek()!r}")
        return self.text[start : self.pos]


class _Quoted(str):
    """A quoted string piece: never a number or a boolean."""


class _Space(str):
    """Whitespace between two pieces of a concatenation (kept only between strings)."""


def _typed(text: str) -> Any:
    """An unquoted value on its own: a number, a boolean, null or a string."""
    if text in ("true", "false"):
        return text == "true"
    if text == "null":
        return None
    if _NUMBER.fullmatch(text):
        return json.loads(text)
    return text


def _put(target: dict[str, Any], key: str, value: Any) -> None:
    """A repeated key: two objects merge (the later wins field by field), anything else
    replaces the earlier value."""
    earlier = target.get(key)
    if isinstance(earlier, dict) and isinstance(value, dict):
        for inner_key, inner_value in value.items():
            _put(earlier, inner_key, inner_value)
    else:
        target.pop(key, None)
        target[key] = value


class _Resolver:
    def __init__(self, root: dict[str, Any], variables: Mapping[str, str], origin: str):
        self.root = root
        self.variables = variables
        self.origin = origin
        self.resolving: set[str] = set()

    def resolve(self, value: Any) -> Any:
        if isinstance(value, dict):
            resolved = {}
            for key, item in value.items():
                item = self.resolve(item)
                if item is not _DROP:
                    resolved[key] = item
            return resolved
        if isinstance(value, list):
            return [item for item in (self.resolve(v) for v in value) if item is not _DROP]
        if isinstance(value, _Subst):
            return self.lookup(value)
        if isinstance(value, _Concat):
            return self.concat(value)
        return value

    def lookup(self, subst: _Subst) -> Any:
        if subst.name in self.root and subst.name not in self.resolving:
            self.resolving.add(subst.name)
            try:
                return self.resolve(self.root[subst.name])
            finally:
                self.resolving.discard(subst.name)
        if subst.name in self.variables:
            return _variable_value(self.variables[subst.name])
        if subst.name in os.environ:
            return os.environ[subst.name]
        if subst.optional:
            return _DROP
        raise ConfigError(
            f"{self.origin}:{subst.line}",
            f"${{{subst.name}}} is not set (not a key of the file, a variable or an environment "
            f"variable); quote it to keep the text as it is",
        )

    def concat(self, concat: _Concat) -> Any:
        parts = [self.resolve(p) for p in concat.pieces]
        parts = [p for p in parts if p is not _DROP]
        if any(isinstance(p, (dict, list)) for p in parts):  # whitespace between objects or lists is no text
            parts = [p for p in parts if not (isinstance(p, _Space) and not p.strip())]
        if not parts:
            return _DROP
        if all(isinstance(p, dict) for p in parts):
            merged: dict[str, Any] = {}
            for part in parts:
                for key, item in part.items():
                    _put(merged, key, item)
            return merged
        if all(isinstance(p, list) for p in parts):
            return [item for part in parts for item in part]
        if len(parts) == 1 and not isinstance(parts[0], str):
            return parts[0]
        texts = []
        for part in parts:
            if isinstance(part, (dict, list)):
                raise ConfigError(f"{self.origin}:{concat.line}", "an object or list cannot be joined with text")
            texts.append(_text(part))
        return "".join(texts)


_DROP = object()


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return str(value)


def _variable_value(value: str) -> Any:
    """A ``-i name=value`` for an unquoted ``${name}``: ``[a,b]`` is a list, as in SeaTunnel."""
    if len(value) >= 2 and value[0] == "[" and value[-1] == "]":
        return value[1:-1].split(",")
    return value


def _keys_as_paths(value: Any, origin: str) -> Any:
    """Every key with a quote in it read again as a path expression, at every depth and
    inside lists: SeaTunnel rebuilds the parsed file with ``ConfigFactory.parseMap``
    (ConfigShadeUtils.decryptConfig), which does that, so the quotes inside a key quote a
    part of it and go: the key ``aA"x"`` becomes ``aAx``. Values keep their quotes. (Its
    path separator, ``->``, is not read: a key holding it stays one key.)"""
    if isinstance(value, list):
        return [_keys_as_paths(item, origin) for item in value]
    if not isinstance(value, dict):
        return value
    if not any('"' in key for key in value):
        return {key: _keys_as_paths(item, origin) for key, item in value.items()}
    rebuilt: dict[str, Any] = {}
    for key, item in value.items():
        _put(rebuilt, _key_as_path(key, origin), _keys_as_paths(item, origin))
    return rebuilt


def _key_as_path(key: str, origin: str) -> str:
    if '"' not in key:
        return key
    reader = _Parser(key, f"{origin}: key {key!r}")
    parts = []
    while reader.pos < len(key):
        if key[reader.pos] == '"':
            parts.append(reader.quoted())
        else:
            end = key.find('"', reader.pos)
            end = len(key) if end < 0 else end
            parts.append(key[reader.pos : end])
            reader.pos = end
    return "".join(parts).strip()


def parse_hocon(text: str, origin: str = "<text>", variables: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A SeaTunnel HOCON job file as the document its YAML form gives."""
    raw = _Parser(text, origin).document()
    return _keys_as_paths(_Resolver(raw, variables or {}, origin).resolve(raw), origin)
