"""A database on the session's real PostgreSQL server (tests/servers/postgres.py), and
the Jdbc connector options a user would write for it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from tests.integration.engine.conftest import spark_env, workspace  # noqa: F401 - fixtures re-exported


@dataclass
class Database:
    server: Any
    name: str

    @property
    def url(self) -> str:
        return self.server.jdbc_url(self.name)

    def options(self, **extra: Any) -> dict[str, Any]:
        return {"url": self.url, "user": "postgres", "password": self.server.password, **extra}

    def sql(self, statement: str) -> list[tuple]:
        return self.server.execute(statement, database=self.name)

    def ids(self, table: str) -> tuple[int, int, int | None, int | None]:
        """count, distinct count, min and max of ``id``."""
        return tuple(self.sql(f"SELECT count(*), count(DISTINCT id), min(id), max(id) FROM {table}")[0])  # type: ignore[return-value]


@pytest.fixture
def db(postgres_server: Any, pg_database: str) -> Database:
    return Database(postgres_server, pg_database)


def variables_file(db: Database, directory: Any) -> Any:
    """What the Airflow operator hands the engine: ${PG_*} values in a private file."""
    import os

    import yaml

    path = directory / "variables.yaml"
    path.write_text(yaml.safe_dump({"PG_URL": db.url, "PG_USER": "postgres", "PG_PASSWORD": db.server.password}))
    os.chmod(path, 0o600)
    return path


#: the credentials as a job file names them
PG_OPTIONS = {"url": "${PG_URL}", "user": "${PG_USER}", "password": "${PG_PASSWORD}"}


def on_our_server(text: str, db: Database) -> str:
    """A SeaTunnel e2e job file's text with its test container's PostgreSQL (``postgresql:5432``,
    database, user and password ``test``) replaced by ``db`` (nothing else)."""
    import re

    text = re.sub(r'url = "jdbc:postgresql://postgresql:5432/test[^"]*"', f'url = "{db.url}"', text)
    return (
        text.replace("user = test", "user = postgres")
        .replace("password = test", f'password = "{db.server.password}"')
        .replace("database = test", f"database = {db.name}")
    )


def prepared_gids(db: Database) -> list[str]:
    return [r[0] for r in db.sql(f"SELECT gid FROM pg_prepared_xacts WHERE database = '{db.name}'")]
