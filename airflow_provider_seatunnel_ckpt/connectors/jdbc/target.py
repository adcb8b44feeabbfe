"""Where a ``Jdbc`` connector connects: host, port, database and credentials.

``url`` is written as in SeaTunnel (``jdbc:postgresql://host:5432/db?currentSchema=s``) or
as a libpq URI (``postgresql://user@host:5432/db``); ``user`` and ``password`` options
win over credentials in the URL. The password is never part of ``describe()``, ``repr``
or an error message: errors name ``postgresql://user@host:port/db``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

from ...errors import ConfigError
from ..options import Option

log = logging.getLogger(__name__)

DEFAULT_PORT = 5432
DEFAULT_CONNECT_TIMEOUT_S = 30
#: JDBC URL parameters with a libpq equivalent
_JDBC_PARAMS = {
    "sslmode": "sslmode",
    "sslrootcert": "sslrootcert",
    "sslcert": "sslcert",
    "sslkey": "sslkey",
    "applicationname": "application_name",
    "connecttimeout": "connect_timeout",
}
_LIBPQ_PARAMS = frozenset(
    {"sslmode", "sslrootcert", "sslcert", "sslkey", "application_name", "connect_timeout", "options"}
)
DRIVER_CLASS = "org.postgresql.Driver"


@dataclass(frozen=True)
class PgTarget:
    host: str
    port: int
    database: str
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    #: libpq connection parameters (sslmode, connect_timeout, options...)
    params: tuple[tuple[str, str], ...] = ()
    #: ``currentSchema`` of a JDBC URL: the schema unqualified table names resolve in
    current_schema: str | None = None

    def describe(self) -> str:
        who = f"{self.user}@" if self.user else ""
        return f"postgresql://{who}{self.host}:{self.port}/{self.database}"

    def uri(self) -> str:
        """The libpq URI, credentials included: for the driver only, never for a message."""
        auth = ""
        if self.user:
            auth = quote(self.user, safe="")
            if self.password is not None:
                auth += ":" + quote(self.password, safe="")
            auth += "@"
        params = dict(self.params)
        if self.current_schema and "options" not in params:
            params["options"] = f"-csearch_path={self.current_schema}"
        query = f"?{urlencode(params)}" if params else ""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"postgresql://{auth}{host}:{self.port}/{quote(self.database, safe='')}{query}"

    def with_database(self, database: str) -> PgTarget:
        return PgTarget(self.host, self.port, database, self.user, self.password, self.params, self.current_schema)


#: the options ``parse_target`` reads (checked there, together: the URL's parameters and
#: ``properties`` may set the user and password too), after the driver's connect timeout
TARGET_OPTIONS = (
    Option(
        "connection_check_timeout_sec", "int", "seconds to wait for a connection", DEFAULT_CONNECT_TIMEOUT_S, minimum=1
    ),
    Option("url", "value", "jdbc:postgresql://host:port/database (or postgresql://...), required"),
    Option("driver", "value", f"{DRIVER_CLASS} only"),
    Option("user", "value", "the user (a string)"),
    Option("password", "value", "the user's password (a string)"),
    Option("properties", "value", "the JDBC driver's connection properties (currentSchema, sslmode...)"),
)


def parse_target(options: Mapping[str, Any], timeout_s: int = DEFAULT_CONNECT_TIMEOUT_S) -> PgTarget:
    """The target of a connector's ``url``, ``user`` and ``password`` options."""
    url = options.get("url")
    if not isinstance(url, str) or not url.strip():
        raise ConfigError(
            "url", "is required: jdbc:postgresql://host:port/database (or postgresql://host:port/database)"
        )
    url = url.strip()
    driver = options.get("driver")
    if driver is not None and str(driver).strip() != DRIVER_CLASS:
        raise ConfigError("driver", f"only PostgreSQL is supported ({DRIVER_CLASS}), got {driver!r}")
    lowered = url.lower()
    if lowered.startswith("jdbc:postgresql:"):
        rest = url[len("jdbc:postgresql:") :]
        if not rest.startswith("//"):
            raise ConfigError("url", f"expected jdbc:postgresql://host:port/database, got {_without_password(url)!r}")
        parts = urlsplit("postgresql:" + rest)
        jdbc = True
    elif lowered.startswith(("postgresql://", "postgres://")):
        parts = urlsplit(url)
        jdbc = False
    else:
        scheme = url.split(":", 1)[0] if ":" in url else url
        raise ConfigError(
            "url",
            f"unsupported database {scheme!r}: the Jdbc connector speaks PostgreSQL "
            "(jdbc:postgresql://host:port/database)",
        )
    try:
        port = parts.port or DEFAULT_PORT
    except ValueError:
        raise ConfigError("url", f"the port is not a number in {_without_password(url)!r}") from None
    host = parts.hostname
    if not host:
        raise ConfigError("url", f"no host in {_without_password(url)!r}")
    database = unquote(parts.path.lstrip("/")) or "postgres"
    user = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password is not None else None
    params: dict[str, str] = {}
    current_schema = None
    # SeaTunnel's properties: the JDBC driver's connection properties, read as the URL's own
    # parameters are; a parameter the URL also sets is the URL's (as PgJDBC does)
    properties = options.get("properties")
    if properties is not None and not isinstance(properties, Mapping):
        raise ConfigError(
            "properties", f"expected a map of JDBC connection properties, got {type(properties).__name__}"
        )
    given = [("properties", str(k), "" if v is None else str(v)) for k, v in (properties or {}).items()]
    given += [("url", k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)]
    for where, key, value in given:
        as_jdbc = jdbc or where == "properties"
        if key == "user":
            user = value
        elif key == "password":
            password = value
        elif as_jdbc and key.lower() == "currentschema":
            current_schema = value
        elif as_jdbc and key.lower() in _JDBC_PARAMS:
            params[_JDBC_PARAMS[key.lower()]] = value
        elif not as_jdbc and key in _LIBPQ_PARAMS:
            params[key] = value
        else:
            what = "property" if where == "properties" else "parameter"
            log.warning("%s: %s %r is not supported by the PostgreSQL connector and is ignored", where, what, key)
    for name in ("user", "password"):
        value = options.get(name)
        if value is not None and not isinstance(value, str):
            raise ConfigError(name, f"expected a string, got {type(value).__name__}")
    if options.get("user"):
        user = options["user"]
    if options.get("password") is not None:
        password = options["password"]
    params.setdefault("connect_timeout", str(timeout_s))
    return PgTarget(host, port, database, user, password, tuple(sorted(params.items())), current_schema)


def _without_password(url: str) -> str:
    """``url`` as it may appear in a message."""
    try:
        parts = urlsplit(url[5:] if url.lower().startswith("jdbc:") else url)
    except ValueError:
        return "<url>"
    if parts.password is None and "password=" not in parts.query.lower():
        return url
    netloc = parts.netloc.rsplit("@", 1)[-1]
    who = f"{parts.username}@" if parts.username else ""
    query = "&".join(p for p in parts.query.split("&") if not p.lower().startswith("password="))
    prefix = "jdbc:" if url.lower().startswith("jdbc:") else ""
    return f"{prefix}{parts.scheme}://{who}{netloc}{parts.path}" + (f"?{query}" if query else "")
