"""The Jdbc sink on the session's real PostgreSQL: exactly once by two-phase commit, with
and without primary keys (an upsert by ``id``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from ..contexts import SinkUnderTest, SourceUnderTest, unique


class JdbcSink(SinkUnderTest):
    keeps_change_rows = True
    shares_target = True

    def __init__(self, name: str, server: Any, database: str, **extra: Any):
        self.name, self.server, self.database, self.extra = name, server, database, extra
        self.upsert = "primary_keys" in extra
        # without keys nothing can be applied by key: change rows are refused before the job starts
        self.keeps_change_rows = self.upsert

    def new_target(self) -> str:
        return f"public.{unique('t')}"

    def sink(self, target: str) -> dict[str, Any]:
        return {
            "plugin_name": "Jdbc",
            "url": self.server.jdbc_url(self.database),
            "user": "postgres",
            "password": self.server.password,
            "table": target,
            **self.extra,
        }

    def _sql(self, statement: str) -> list[tuple]:
        return self.server.execute(statement, database=self.database)

    def committed(self, target: str) -> list[int]:
        schema, table = target.split(".")
        exists = self._sql(
            f"SELECT count(*) FROM information_schema.tables WHERE table_schema = '{schema}' AND table_name = '{table}'"
        )[0][0]
        return [row[0] for row in self._sql(f"SELECT id FROM {target}")] if exists else []

    def leftovers(self, target: str) -> list[str]:
        return [row[0] for row in self._sql(f"SELECT gid FROM pg_prepared_xacts WHERE database = '{self.database}'")]


@contextlib.contextmanager
def exactly_once(request: pytest.FixtureRequest) -> Iterator[SinkUnderTest]:
    server, database = request.getfixturevalue("postgres_server"), request.getfixturevalue("pg_database")
    yield JdbcSink("Jdbc (exactly once)", server, database)


@contextlib.contextmanager
def exactly_once_by_key(request: pytest.FixtureRequest) -> Iterator[SinkUnderTest]:
    server, database = request.getfixturevalue("postgres_server"), request.getfixturevalue("pg_database")
    yield JdbcSink("Jdbc (exactly once, primary_keys)", server, database, primary_keys=["id"])


class JdbcSource(SourceUnderTest):
    """A table keyed by ``id``. Splits are key ranges, the last open above: rows inserted
    later with higher keys are read by a run that has not finished that range."""

    name = "Jdbc"

    def __init__(self, server: Any, database: str):
        self.server, self.database = server, database

    def new_dataset(self) -> str:
        table = f"public.{unique('src')}"
        self.server.execute(f"CREATE TABLE {table} (id bigint PRIMARY KEY)", database=self.database)
        return table

    def append(self, dataset: str, ids: Any) -> None:
        self.server.execute(
            f"INSERT INTO {dataset} SELECT generate_series({ids[0]}, {ids[-1]})", database=self.database
        )

    def source(self, dataset: str) -> dict[str, Any]:
        return {
            "plugin_name": "Jdbc",
            "url": self.server.jdbc_url(self.database),
            "user": "postgres",
            "password": self.server.password,
            "table": dataset,
            "fetch_size": 100,
        }

    def expected(self, before: Any, during: Any, after: Any) -> list[int]:
        return [*before, *during, *after]


@contextlib.contextmanager
def source(request: pytest.FixtureRequest) -> Iterator[SourceUnderTest]:
    server, database = request.getfixturevalue("postgres_server"), request.getfixturevalue("pg_database")
    yield JdbcSource(server, database)
