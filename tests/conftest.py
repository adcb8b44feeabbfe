"""Session-wide fixtures shared by every suite: a real PostgreSQL server, and moto's S3
behind the fault proxy (tests/servers/s3.py)."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.spark_class_archive import spark_submit_opts
from tests.support.spark_starts import MARKER as SPARK
from tests.support.spark_starts import SparkStarts

# Most tests start many short local jobs. The preloading Python daemon (engine/preload.py)
# adds ~2.5 s to each start and pays off only when a subtask fails over, so it is off for
# the suite as a machine-wide default; the tests of the daemon (random executor-worker
# kills, the standalone cluster's) turn it on with --conf spark.seatunnel.preloadDaemon.
os.environ.setdefault("SEATUNNEL_CKPT_PRELOAD_DAEMON", "false")
# Every Spark driver the tests start is a short-lived JVM that mostly waits, and the whole
# suite is CPU-bound on two cores: its options (tests/support/spark_class_archive.py) are
# the client compiler, the serial collector and, once built, a class-data-sharing archive.
# spark-submit adds SPARK_SUBMIT_OPTS to the driver JVM's command line (local mode: the
# executors too). The benchmarks do not import this file: they keep Java's defaults.
os.environ.setdefault("SPARK_SUBMIT_OPTS", spark_submit_opts())


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


# --- real JVM servers (tests/servers/jvm, docs/testing.md#jvm-test-servers) ---------------
# Built on first use (scripts/jvm-servers); each started once per session, on loopback.


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[Any]:
    """A real Apache Kafka 4.1 broker: one KRaft node (broker and controller)."""
    from tests.servers.kafka_broker import KafkaBroker

    with KafkaBroker(nodes=1) as broker:
        yield broker


@pytest.fixture(scope="session")
def kafka_brokers_3() -> Iterator[Any]:
    """Three real KRaft nodes (replication factor 3), for tests that lose a broker:
    ``kill_node(n)`` / ``start_node(n)`` + ``wait_ready([n])``; leave all three up."""
    from tests.servers.kafka_broker import KafkaBroker

    with KafkaBroker(nodes=3) as brokers:
        yield brokers


def _hadoop(mode: str) -> Iterator[Any]:
    from tests.servers.hadoop import HadoopCluster

    with HadoopCluster(mode) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def hdfs_cluster() -> Iterator[Any]:
    """Hadoop 3.5's MiniDFSCluster: one NameNode (WebHDFS at ``webhdfs_url``), one DataNode."""
    yield from _hadoop("hdfs")


@pytest.fixture(scope="session")
def hdfs_ha_cluster() -> Iterator[Any]:
    """MiniDFSCluster with two NameNodes (nn1 active, nn2 standby); ``failover()`` swaps
    them: a test that fails over leaves nn1 active again."""
    yield from _hadoop("hdfs-ha")


@pytest.fixture(scope="session")
def hdfs_kerberos_cluster() -> Iterator[Any]:
    """MiniDFSCluster secured by a MiniKdc (Kerberos RPC, SPNEGO on WebHDFS)."""
    yield from _hadoop("hdfs-kerberos")


@pytest.fixture(scope="session")
def yarn_cluster() -> Iterator[Any]:
    """MiniYARNCluster (ResourceManager, one NodeManager) over a MiniDFSCluster."""
    yield from _hadoop("yarn")


#: what a test starts, as markers from the fixtures it uses (directly or through other
#: fixtures): ``pytest -m "kafka_broker or hdfs_cluster or yarn"`` selects every test on
#: the real JVM systems (docs/testing.md), ``-m "not spark"`` the tests that start no Spark,
#: as scripts/test does. A test that starts Spark by other means marks its module
#: (``pytestmark = pytest.mark.spark``); tests/support/spark_starts.py fails one that forgot.
NEEDS = {
    "kafka_broker": "kafka_broker",
    "kafka_brokers_3": "kafka_broker",
    "hdfs_cluster": "hdfs_cluster",
    "hdfs_ha_cluster": "hdfs_cluster",
    "hdfs_kerberos_cluster": "hdfs_cluster",
    "yarn_cluster": "yarn",
    # the Spark processes of tests/support/workspace.py (spark_env: every engine workspace,
    # the standalone cluster), the connector contract suite's workspace, the Airflow
    # deployment and the networked cluster
    "spark_env": SPARK,
    "ws": SPARK,
    "deployment": SPARK,
    "net_cluster": SPARK,
}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--cpu-durations",
        type=int,
        default=0,
        metavar="N",
        help="show the N tests that cost the most CPU (tests/support/cpu_durations.py)",
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("cpu_durations") > 0:
        from tests.support.cpu_durations import CpuDurations

        config.pluginmanager.register(CpuDurations(config.getoption("cpu_durations")), "cpu_durations")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for marker in sorted({NEEDS[f] for f in getattr(item, "fixturenames", ()) if f in NEEDS}):
            item.add_marker(marker)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile`` with tests/deployment on one worker (tests/support/file_groups.py)."""
    from tests.support.file_groups import make_scheduler

    return make_scheduler(config, log)


_spark_starts = SparkStarts()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    _spark_starts.begin()  # before the test's fixtures, which may start Spark themselves
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    try:
        result = yield
    finally:
        started = _spark_starts.end()
    if started and item.get_closest_marker(SPARK) is None:
        pytest.fail(
            "this test started Spark but is not marked spark: use a fixture that starts it "
            "(NEEDS in tests/conftest.py) or mark the module (pytestmark = pytest.mark.spark)",
            pytrace=False,
        )
    return result


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The chaos report (tests/support/chaos.py), for the chaos and the cluster suites."""
    chaos = sys.modules.get("tests.support.chaos")
    if chaos is None or not chaos.RECORDS:
        return
    RECORDS, SEED = chaos.RECORDS, chaos.SEED
    terminalreporter.section("chaos report")
    terminalreporter.write_line(f"seed {SEED} (set SEATUNNEL_CKPT_CHAOS_SEED to replay another)")
    for record in RECORDS:
        terminalreporter.write_line(record.summary())
        for point in record.kill_points:
            terminalreporter.write_line(f"    {point}")
        for note in record.notes:
            terminalreporter.write_line(f"    note: {note}")
    total = sum(len(r.kill_points) for r in RECORDS)
    terminalreporter.write_line(f"total kill points: {total}")
    log = os.environ.get("SEATUNNEL_CKPT_CHAOS_REPORT")
    if log:
        with open(Path(log), "a") as f:
            for record in RECORDS:
                f.write(record.summary() + "\n")
            f.write(f"total kill points: {total}\n")
