"""Jayway JsonPath 2.7's path compiler (PathCompiler, CharacterIndex), ported for the
tokens :mod:`.path_reader` evaluates: ``$``, ``.name``, ``['name']`` / ``['a','b']``,
``[0]`` / ``[-1]`` / ``[0,2]``, slices ``[1:3]``, ``*`` and ``..`` (deep scan). A path
Jayway refuses is refused with Jayway's message; filters and functions raise
:class:`Unsupported`."""

from __future__ import annotations

import re


class Unsupported(Exception):
    """A path Jayway would take but this port does not evaluate (filters, functions)."""


class Token:
    """One step of a path, linked to the steps before and after it as Jayway links them
    (its definiteness depends on both)."""

    kind = ""
    upstream_array_index = -1

    def __init__(self) -> None:
        self.prev: Token | None = None
        self.next: Token | None = None

    @property
    def leaf(self) -> bool:
        return self.next is None

    def token_definite(self) -> bool:
        return True

    def upstream_definite(self) -> bool:
        return self.prev is None or (self.prev.token_definite() and self.prev.upstream_definite())

    def fragment(self) -> str:
        return ""


class _Root(Token):
    kind = "root"

    def __init__(self, char: str) -> None:
        super().__init__()
        self.char = char

    def fragment(self) -> str:
        return self.char


class _Prop(Token):
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


class _Index(Token):
    kind = "index"

    def __init__(self, indexes: list[int]) -> None:
        super().__init__()
        self.indexes = indexes

    def token_definite(self) -> bool:
        return len(self.indexes) == 1

    def fragment(self) -> str:
        return "[" + ",".join(str(i) for i in self.indexes) + "]"


class _Indefinite(Token):
    """A token that can match many values: the path through it gives a list."""

    def token_definite(self) -> bool:
        return False


class _Slice(_Indefinite):
    kind = "slice"

    def __init__(self, start: int | None, stop: int | None) -> None:
        super().__init__()
        self.start, self.stop = start, stop

    def fragment(self) -> str:
        return f"[{'' if self.start is None else self.start}:{'' if self.stop is None else self.stop}]"


class _Wild(_Indefinite):
    kind = "wild"

    def fragment(self) -> str:
        return "[*]"


class _Scan(_Indefinite):
    kind = "scan"

    def fragment(self) -> str:
        return ".."


class CompiledPath:
    """A compiled path: its first and last tokens and whether it is definite; ``str`` gives
    the bracket form Jayway's messages show."""

    def __init__(self, root: _Root):
        self.root = root
        tokens = []
        token: Token | None = root
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


def _parse_index(text: str) -> int:
    """Integer.parseInt, whose message Jayway passes on (Python's int() takes more, like ``1_0``)."""
    if not re.fullmatch(r"[+-]?\d+", text):
        raise ValueError(f'For input string: "{text}"')
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
        self.last: Token = root
        if self.tail():
            return root
        self.pos += 1
        if self.s[self.pos] not in ".[":
            raise ValueError(f"Illegal character at position {self.pos} expected '.' or '['")
        self.read_next()
        return root

    def append(self, token: Token) -> None:
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
                raise ValueError(
                    f"Use bracket notion ['my prop'] if your property contains blank characters. position: {self.pos}"
                )
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
                start = _parse_index(parts[0]) if len(parts) > 0 and parts[0] != "" else None
                stop = _parse_index(parts[1]) if len(parts) > 1 and parts[1] != "" else None
                if start is None and stop is None:
                    raise ValueError(f"Failed to parse SliceOperation: {expression}")
                self.append(_Slice(start, stop))
            else:
                self.append(_Index([_parse_index(t) for t in re.split(r"\s*,\s*", expression)]))
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
                        raise ValueError(
                            "Property must be separated by comma or Property must be terminated "
                            f"close square bracket at index {read}"
                        )
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
            digits = text[i + 2 : i + 6]
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
