"""Session-wide fixtures shared by every suite: a real PostgreSQL server."""

from __future__ import annotations

from typing import Any, Iterator

import pytest


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Any]:
    from tests.servers.postgres import PostgresServer

    with PostgresServer() as server:
        yield server


@pytest.fixture
def pg_database(postgres_server: Any) -> Iterator[str]:
    name = postgres_server.create_database()
    yield name
    postgres_server.drop_database(name)
