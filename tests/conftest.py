"""Session-wide fixtures shared by every suite: a real PostgreSQL server, and moto's S3
behind the fault proxy (tests/servers/s3.py)."""

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


@pytest.fixture(scope="session")
def s3_server() -> Iterator[Any]:
    from tests.servers.s3 import S3Server

    with S3Server(proxy=True) as server:
        yield server


@pytest.fixture(scope="session")
def s3_process_server() -> Iterator[Any]:
    """moto's S3 in its own process, no proxy: for clients that hold the GIL while they
    wait (delta-rs), which an in-process server thread would wait for in turn."""
    from tests.servers.s3 import S3Server

    with S3Server(own_process=True) as server:
        yield server



@pytest.fixture(scope="session")
def kafka_cluster() -> Iterator[Any]:
    """librdkafka's mock Kafka cluster (3 brokers on loopback), in its own process."""
    from tests.servers.kafka import KafkaMockCluster

    with KafkaMockCluster(brokers=3) as cluster:
        yield cluster
