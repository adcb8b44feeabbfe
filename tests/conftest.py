"""Session-wide fixtures shared by every suite: a real PostgreSQL server, and moto's S3
behind the fault proxy (tests/servers/s3.py)."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Iterator

import pytest

# Most tests start many short local jobs. The preloading Python daemon (engine/preload.py)
# adds ~2.5 s to each start and pays off only when a subtask fails over, so it is off for
# the suite as a machine-wide default; the tests of the daemon (random executor-worker
# kills, the standalone cluster's) turn it on with --conf spark.seatunnel.preloadDaemon.
os.environ.setdefault("SEATUNNEL_CKPT_PRELOAD_DAEMON", "false")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """On pytest-xdist workers with ``--dist loadgroup`` (scripts/test): the tests of one
    file run on one worker, so its module fixtures start once, and every test of the
    network-namespace cluster (fixed addresses and names, tests/cluster) on the same one."""
    for item in items:
        path = item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group("cluster" if path.startswith("tests/cluster/") else path))


@pytest.fixture
def package_logging_restored() -> Iterator[None]:
    """``cli.main()`` configures the package logger for a terminal; undo it after the test."""
    logger = logging.getLogger("airflow_provider_seatunnel_ckpt")
    saved = logger.handlers[:], logger.level, logger.propagate
    yield
    logger.handlers[:], logger.level, logger.propagate = saved


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


#: the chaos report of every test that ran (tests/chaos/conftest.py), gathered from the
#: test reports, so that runs on pytest-xdist workers are reported by the controller too
_CHAOS_REPORTS: list[list[str]] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "teardown":
        _CHAOS_REPORTS.extend(lines for key, lines in report.user_properties if key == "chaos")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The chaos report, for the chaos and the cluster suites."""
    if not _CHAOS_REPORTS:
        return
    from tests.chaos.conftest import SEED

    terminalreporter.section("chaos report")
    terminalreporter.write_line(f"seed {SEED} (set SEATUNNEL_CKPT_CHAOS_SEED to replay another)")
    for lines in _CHAOS_REPORTS:
        for line in lines:
            terminalreporter.write_line(line)
    total = sum(1 for lines in _CHAOS_REPORTS for line in lines[1:] if not line.startswith("    note: "))
    terminalreporter.write_line(f"total kill points: {total}")
    log = os.environ.get("SEATUNNEL_CKPT_CHAOS_REPORT")
    if log:
        with open(Path(log), "a") as f:
            for lines in _CHAOS_REPORTS:
                f.write(lines[0] + "\n")
            f.write(f"total kill points: {total}\n")
