"""Connections to PostgreSQL through the ADBC driver, and one-line errors.

Every connector in this package connects here, so there is one place that knows how
libpq reports a refused connection, a wrong password or a missing relation, and turns
it into a message that names the target (never its password) and the option to fix.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from ...errors import ConfigError, ConnectorError
from .target import PgTarget

#: SQLSTATEs that mean "the object does not exist"
UNDEFINED_OBJECT = "42704"
UNDEFINED_TABLE = "42P01"
UNDEFINED_COLUMN = "42703"
INVALID_PASSWORD = "28P01"
INVALID_AUTHORIZATION = "28000"
UNKNOWN_DATABASE = "3D000"
DUPLICATE_OBJECT = ("42P07", "42710", "23505")
#: a statement waited longer than its session's lock_timeout
LOCK_NOT_AVAILABLE = "55P03"
#: a row with a key a unique index already holds
UNIQUE_VIOLATION = "23505"

_PREFIXES = re.compile(
    r"^(?:[A-Z_]+: )?(?:\[libpq\] )?(?:Failed to (?:connect|prepare query|execute query(?: '[^']*')?)\s*: ?)?"
)
_SEVERITY = re.compile(r"^(?:ERROR|FATAL|PANIC):\s+")


def sqlstate(err: BaseException) -> str | None:
    state = getattr(err, "sqlstate", None)
    if state:
        return str(state)
    match = re.search(r"SQLSTATE: ([0-9A-Z]{5})", str(err))
    return match.group(1) if match else None


def reason(err: BaseException, target: PgTarget | None = None) -> str:
    """The server's or libpq's own words, on one line, without a password."""
    text = str(err).replace("\\n", "\n")
    text = re.split(r"\n\s*Query was:|\. SQLSTATE:", text)[0]
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith(("LINE ", "^"))]
    first = _PREFIXES.sub("", lines[0]) if lines else type(err).__name__
    first = re.sub(r'^connection to server at "[^"]*"(?: \([^)]*\))?, port \d+ failed: ', "", first)
    first = _SEVERITY.sub("", first)
    if len(lines) > 1 and lines[1].lower().startswith("is the server running"):
        first += " (is the server running and reachable?)"
    if target is not None and target.password:
        first = first.replace(target.password, "***")
    return first.rstrip(". ")[:400]


def detail(err: BaseException) -> str | None:
    """The server's DETAIL line (``Key (id)=(7) already exists``), which ``reason`` leaves
    out: it names the row an error is about."""
    match = re.search(r"DETAIL:\s+(.+?)\s*(?:\n|$)", str(err).replace("\\n", "\n"))
    return match.group(1).rstrip(". ")[:400] if match else None


class Unreachable(ConnectorError):
    """The server could not be reached (refused, timed out, shutting down)."""


#: SQLSTATE classes of a lost or refused connection, and a server shutting down
_CONNECTION_STATES = ("08", "57P01", "57P02", "57P03")


def is_connection_error(err: BaseException) -> bool:
    """The server could not be reached or went away: worth reconnecting and retrying."""
    if isinstance(err, Unreachable):
        return True
    state = sqlstate(err) or ""
    if state.startswith(_CONNECTION_STATES):
        return True
    text = str(err).lower()
    return any(
        words in text
        for words in (
            "server closed the connection",
            "connection refused",
            "terminating connection",
            "no connection to the server",
            "the database system is",
            "could not connect",
        )
    )


def connect(target: PgTarget, autocommit: bool = True) -> Any:
    """An ADBC DB-API connection; errors name the option a user has to change."""
    import adbc_driver_postgresql.dbapi as adbc

    try:
        return adbc.connect(target.uri(), autocommit=autocommit)
    except Exception as err:  # the driver raises its own error tree; map it to ours
        why = reason(err, target)
        lowered = why.lower()
        if "password authentication failed" in lowered or "no password supplied" in lowered:
            raise ConfigError("password", f"{target.describe()} refused the login: {why}") from None
        if re.search(r"role .* does not exist", lowered):
            raise ConfigError("user", f"{target.describe()}: {why}") from None
        if re.search(r"database .* does not exist", lowered):
            raise ConfigError("url", f"{target.describe()}: {why}") from None
        raise Unreachable(f"cannot connect to {target.describe()}: {why}") from None


def query(connection: Any, sql: str, parameters: Sequence[Any] | None = None) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, parameters)
        return list(cursor.fetchall())


def execute(connection: Any, sql: str, parameters: Sequence[Any] | None = None) -> None:
    with connection.cursor() as cursor:
        cursor.execute(sql, parameters)


def begin_durable(connection: Any) -> None:
    """``BEGIN`` a transaction whose ``COMMIT`` returns only once it is durable, whatever the
    server's ``synchronous_commit``. The committer's own transactions (an epoch's apply, a
    restore's delete) are part of the two-phase commit: acknowledged but lost in a server
    crash, an epoch the engine counts as committed would be missing. ``COMMIT PREPARED``
    needs none of this: the server always flushes it."""
    execute(connection, "BEGIN")
    execute(connection, "SET LOCAL synchronous_commit = on")


def close_quietly(connection: Any) -> None:
    if connection is None:
        return
    try:
        connection.close()
    except Exception:  # a connection to a server that went away: nothing to release
        pass


# ---- SQL text -----------------------------------------------------------------------------
def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def quote_literal(text: str) -> str:
    # standard_conforming_strings is on by default since PostgreSQL 9.1: only ' is special
    if "\x00" in text:
        raise ValueError("a SQL literal cannot hold a NUL character")
    return "'" + text.replace("'", "''") + "'"


def split_table_name(value: str, key: str = "table") -> tuple[str | None, str]:
    """``schema.table`` or ``table`` (double quotes keep dots and case) -> (schema, table)."""
    parts: list[str] = []
    current, quoted, i = "", False, 0
    text = value.strip()
    while i < len(text):
        ch = text[i]
        if quoted:
            if ch == '"' and i + 1 < len(text) and text[i + 1] == '"':
                current += '"'
                i += 1
            elif ch == '"':
                quoted = False
            else:
                current += ch
        elif ch == '"':
            quoted = True
        elif ch == ".":
            parts.append(current)
            current = ""
        else:
            current += ch.lower() if not ch.isspace() else ch
        i += 1
    parts.append(current)
    if quoted or any(not p.strip() for p in parts) or len(parts) > 3:
        raise ConfigError(key, f"expected table, schema.table or database.schema.table, got {value!r}")
    parts = [p.strip() for p in parts]
    if len(parts) == 3:  # SeaTunnel's table_path names the database too; the url already does
        parts = parts[1:]
    return (parts[0], parts[1]) if len(parts) == 2 else (None, parts[0])


def qualified(schema: str | None, table: str) -> str:
    return f"{quote_ident(schema)}.{quote_ident(table)}" if schema else quote_ident(table)


def in_list(values: Iterable[str]) -> str:
    return ", ".join(quote_literal(v) for v in values)
