"""SeaTunnel's hand-written sink ``query``: an ``INSERT`` whose ``?`` placeholders take each
row's fields in order (its ``generate_sink_sql: false`` mode). The writer runs it for every
row inside the epoch's transaction (a plain one's rows it appends with COPY instead:
``plain_insert_columns``); here the statement is read: its placeholders become
PostgreSQL's numbered ones, and its target table is found for the commit log and for a
restore's delete of newer epochs (rows found by the transaction's ``xmin``)."""

from __future__ import annotations

import re
from collections.abc import Callable

from ...errors import ConfigError

#: the table an INSERT writes: a possibly schema-qualified, possibly quoted name
_INSERT_TARGET = re.compile(
    r'^\s*INSERT\s+INTO\s+((?:"(?:[^"]|"")+"|[A-Za-z_][\w$]*)(?:\s*\.\s*(?:"(?:[^"]|"")+"|[A-Za-z_][\w$]*))?)',
    re.IGNORECASE,
)


#: parameter types a row's Arrow column is bound as directly (ADBC sends its binary form);
#: a parameter of any other type (uuid, json, jsonb, xml, geometry...) is bound as text and
#: cast in the statement, as SeaTunnel's driver has the server read a string into it
BOUND_AS_IS = frozenset(
    {
        "boolean", "smallint", "integer", "bigint", "real", "double precision", "numeric", "bytea", "date",
        "timestamp without time zone", "timestamp with time zone", "time without time zone", "interval",
    }
)  # fmt: skip
TEXT_TYPES = frozenset({"text", "character varying", "character"})


def typed(query: str, parameter_types: list[str], text_columns: list[bool]) -> tuple[str, list[int]]:
    """``query`` with its placeholders numbered, each one cast to its parameter's type
    where the row's column is bound as text: a type not in BOUND_AS_IS, or a string column
    for a parameter of another type. And the (0-based) columns to bind as text."""
    as_text = [
        i
        for i, kind in enumerate(parameter_types)
        if kind not in TEXT_TYPES and (kind not in BOUND_AS_IS or (i < len(text_columns) and text_columns[i]))
    ]
    cast = set(as_text)
    sql, _ = numbered(query, lambda k: f"${k}::text::{parameter_types[k - 1]}" if k - 1 in cast else f"${k}")
    return sql, as_text


def numbered(query: str, placeholder: Callable[[int], str] = lambda k: f"${k}") -> tuple[str, int]:
    """``query`` with each ``?`` outside quotes and comments as ``$1``, ``$2``... (or what
    ``placeholder`` makes of its number); and how many there are. (JDBC's positional
    markers; libpq numbers them.)"""
    out: list[str] = []
    count = 0
    i, n = 0, len(query)
    while i < n:
        c = query[i]
        if c in ("'", '"'):  # a literal or a quoted name: up to its closing quote ('' and "" escape)
            end = i + 1
            while end < n and not (query[end] == c and (end + 1 >= n or query[end + 1] != c)):
                end += 2 if query[end] == c else 1
            out.append(query[i : end + 1])
            i = end + 1
        elif query.startswith("--", i):
            end = query.find("\n", i)
            end = n if end < 0 else end
            out.append(query[i:end])
            i = end
        elif query.startswith("/*", i):
            end = query.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(query[i:end])
            i = end
        elif c == "?":
            count += 1
            out.append(placeholder(count))
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out), count


_IDENT = r'(?:"(?:[^"]|"")+"|[A-Za-z_][\w$]*)'
#: an INSERT whose VALUES are its placeholders and nothing else, one per listed column
_PLAIN_INSERT = re.compile(
    rf"^\s*INSERT\s+INTO\s+{_IDENT}(?:\s*\.\s*{_IDENT})?\s*"
    rf"\(\s*(?P<columns>{_IDENT}(?:\s*,\s*{_IDENT})*)\s*\)\s*"
    r"VALUES\s*\(\s*(?P<values>\?(?:\s*,\s*\?)*)\s*\)\s*;?\s*$",
    re.IGNORECASE,
)


def plain_insert_columns(query: str) -> list[str] | None:
    """The columns of ``INSERT INTO t (a, b) VALUES (?, ?)``: a query that only appends each
    row's fields, in order, to the columns it lists, which COPY does too (one round trip
    per batch instead of one per row). As PostgreSQL names them: unquoted names folded to
    lower case, quoted ones as written. None for any other query (expressions, ``ON
    CONFLICT``, ``RETURNING``, comments, no column list)."""
    match = _PLAIN_INSERT.match(query)
    if match is None:
        return None
    columns = re.findall(_IDENT, match.group("columns"))
    if len(columns) != match.group("values").count("?"):
        return None
    return [c[1:-1].replace('""', '"') if c.startswith('"') else c.lower() for c in columns]


def insert_target(query: str) -> str:
    """The table the INSERT names, as written (``schema.table``, quotes kept)."""
    match = _INSERT_TARGET.match(query)
    if match is None:
        raise ConfigError(
            "query",
            "expected an INSERT INTO <table> ... VALUES (?, ...) statement (the Jdbc sink writes rows with it "
            "and deletes a restored job's newer rows from that table)",
        )
    return re.sub(r"\s*\.\s*", ".", match.group(1))
