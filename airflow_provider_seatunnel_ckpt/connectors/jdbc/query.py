"""SeaTunnel's hand-written sink ``query``: an ``INSERT`` whose ``?`` placeholders take each
row's fields in order (its ``generate_sink_sql: false`` mode). The writer runs it for every
row inside the epoch's transaction; here the statement is read: its placeholders become
PostgreSQL's numbered ones, and its target table is found for the commit log and for a
restore's delete of newer epochs (rows found by the transaction's ``xmin``)."""

from __future__ import annotations

import re

from ...errors import ConfigError

#: the table an INSERT writes: a possibly schema-qualified, possibly quoted name
_INSERT_TARGET = re.compile(
    r'^\s*INSERT\s+INTO\s+((?:"(?:[^"]|"")+"|[A-Za-z_][\w$]*)(?:\s*\.\s*(?:"(?:[^"]|"")+"|[A-Za-z_][\w$]*))?)',
    re.IGNORECASE,
)


def numbered(query: str) -> tuple[str, int]:
    """``query`` with each ``?`` outside quotes and comments as ``$1``, ``$2``...; and how
    many there are. (JDBC's positional markers; libpq numbers them.)"""
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
            out.append(f"${count}")
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out), count


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
