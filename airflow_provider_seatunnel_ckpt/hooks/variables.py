"""Job-file variables from Airflow connections (``CheckpointedSparkSubmitOperator(connections=...)``).

``connections={"PG": "postgres_default"}`` makes ``${PG_URL}``, ``${PG_USER}``,
``${PG_PASSWORD}``, ``${PG_HOST}``, ``${PG_PORT}`` and ``${PG_DATABASE}`` available to the
job file. For a ``postgres`` connection (the official Postgres provider's type)
``PG_URL`` is ``jdbc:postgresql://host:port/database``, with ``sslmode`` from the extra
when set; for other types it is the connection's URI without credentials.

The values travel to the engine in a private (0600) file, like the storage secrets:
never on a command line, in the task log, in XCom or in a rendered template field.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from airflow.sdk import BaseHook

from ..errors import ConfigError

_PREFIX = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
POSTGRES_TYPES = ("postgres", "postgresql")


def connection_variables(prefix: str, conn_id: str) -> dict[str, str]:
    if not isinstance(prefix, str) or not _PREFIX.fullmatch(prefix):
        raise ConfigError("connections", f"variable prefix {prefix!r} must be a name like PG (letters, digits, _)")
    connection = BaseHook.get_connection(conn_id)
    return variables_of(prefix, connection)


def variables_of(prefix: str, connection: Any) -> dict[str, str]:
    conn_type = (connection.conn_type or "").lower()
    extra: Mapping[str, Any] = connection.extra_dejson or {}
    host = connection.host or ""
    port = connection.port
    database = connection.schema or ""
    values = {
        "HOST": host,
        "PORT": str(port) if port else "",
        "USER": connection.login or "",
        "PASSWORD": connection.password or "",
        "DATABASE": database,
    }
    if conn_type in POSTGRES_TYPES:
        query = f"?sslmode={quote(str(extra['sslmode']))}" if extra.get("sslmode") else ""
        values["URL"] = f"jdbc:postgresql://{host}:{port or 5432}/{database or 'postgres'}{query}"
    else:
        netloc = f"{host}:{port}" if port else host
        values["URL"] = f"{conn_type}://{netloc}/{database}"
    return {f"{prefix}_{name}": value for name, value in values.items()}


def variables_for(connections: Mapping[str, str] | None) -> dict[str, str]:
    """Every variable of ``connections`` (prefix -> connection id)."""
    if not connections:
        return {}
    if not isinstance(connections, Mapping):
        raise ConfigError(
            "connections", f"expected a mapping of variable prefix to connection id, got {type(connections).__name__}"
        )
    result: dict[str, str] = {}
    for prefix, conn_id in connections.items():
        result.update(connection_variables(prefix, conn_id))
    return result
