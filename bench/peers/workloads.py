"""The peers comparison's other two workloads, ours and Zeta on the same job file and Flink
on its SQL equivalent: Kafka -> LocalFile (parquet) on a real Kafka broker, and Jdbc ->
Jdbc on a real PostgreSQL.

Each is a SeaTunnel job file run unchanged by both engines, parallelism 2, a checkpoint
every second, as in bench/peers_bench.py's FakeSource workload, and timed the same way: a
whole process from its start to its exit, throughput at the margin (the rows of a large
job over its wall time minus that of a tiny job of the same engine in the same
repetition), the engines taking turns (ABBA), every run's output counted (rows and
distinct ids; a run that lost or added rows fails the benchmark).

* Kafka: a topic of ``PARTITIONS`` partitions filled once with JSON records
  ``{"id", "name", "score"}``; the job reads it from the earliest offsets to the end
  offsets at its start (a BATCH job's Kafka source, in both engines) into LocalFile.
* Jdbc: a table ``source(id, name, score)`` read with ``partition_column = "id"`` and
  written by the Jdbc sink's exactly-once mode (``is_exactly_once``: XA transactions
  committed with the checkpoint, in both engines) into a table of each run's own.

Flink runs the same two pipelines in Flink SQL (bench/peers/flink.py, the connectors from
the peers' Maven profile): the ``kafka`` table bounded at the latest offsets into a parquet
``filesystem`` table, and the ``jdbc`` table read by ``scan.partition.column`` into a
``jdbc`` table. Flink's SQL JDBC sink has no XA mode (its exactly-once JDBC sink is a
DataStream API of Java only), so its sink table has a primary key and the sink writes
upserts, Flink's own way to an exactly-once result in SQL: a replayed row overwrites
itself. That costs PostgreSQL a unique index the other two engines' tables do not have.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from bench.peers.recovery import committed_ids

PARTITIONS = 4
ENGINES = ("ours", "zeta", "flink")
WORKLOADS = ("kafka", "jdbc")
DATABASE = USER = PASSWORD = "peers"  # a throw-away local database's

_ENV = """\
env {
  parallelism = %(parallelism)d
  job.mode = "BATCH"
  checkpoint.interval = %(interval)d
}
"""
_SCHEMA = 'schema = { fields { id = "bigint", name = "string", score = "double" } }'

KAFKA_JOB = (
    _ENV
    + """\
source {
  Kafka {
    topic = "%(topic)s"
    bootstrap.servers = "%(servers)s"
    consumer.group = "%(group)s"
    start_mode = "earliest"
    format = "json"
    """
    + _SCHEMA
    + """
  }
}
sink {
  LocalFile {
    path = "%(out)s"
    file_format_type = "parquet"
  }
}
"""
)

JDBC_JOB = (
    _ENV
    + """\
source {
  Jdbc {
    url = "%(url)s"
    driver = "org.postgresql.Driver"
    user = "%(user)s"
    password = "%(password)s"
    query = "select id, name, score from %(source)s"
    partition_column = "id"
    partition_num = %(parallelism)d
  }
}
sink {
  Jdbc {
    url = "%(url)s"
    driver = "org.postgresql.Driver"
    user = "%(user)s"
    password = "%(password)s"
    query = "insert into %(sink)s (id, name, score) values (?, ?, ?)"
    is_exactly_once = "true"
    xa_data_source_class_name = "org.postgresql.xa.PGXADataSource"
  }
}
"""
)


class Systems:
    """The broker and the database, filled once per size: topics ``peers_<rows>`` and
    tables ``source_<rows>``."""

    def __init__(self, broker: Any, postgres: Any, parallelism: int, interval_ms: int):
        self.broker, self.postgres = broker, postgres
        self.parallelism, self.interval_ms = parallelism, interval_ms
        self._runs = 0

    def fill(self, rows: int) -> None:
        topic = f"peers_{rows}"
        self.broker.create_topic(topic, PARTITIONS)
        records = ({"id": i, "name": f"name-{i}", "score": i / 7} for i in range(rows))
        self.broker.produce_json(topic, records, PARTITIONS)
        self.postgres.execute(
            f"CREATE TABLE source_{rows} AS SELECT i::bigint AS id, 'name-' || i AS name, i / 7.0::float8 AS score "
            f"FROM generate_series(0, {rows - 1}) AS i",
            database=DATABASE,
        )
        self.postgres.execute(f"ALTER TABLE source_{rows} ADD PRIMARY KEY (id)", database=DATABASE)

    def job(self, workload: str, rows: int, work: Path) -> tuple[Path, Callable[[], tuple[int, int]]]:
        """The job file of one run and how to count its output (rows, distinct ids)."""
        self._runs += 1
        values: dict[str, Any] = {"parallelism": self.parallelism, "interval": self.interval_ms}
        if workload == "kafka":
            out = work / "out"
            values |= {
                "topic": f"peers_{rows}",
                "servers": self.broker.bootstrap_servers,
                "group": f"peers-{self._runs}",
                "out": out,
            }
            text, count = KAFKA_JOB % values, lambda: _parquet_ids(out)
        else:
            sink = f"sink_{self._runs}"
            self._create_sink_table(sink)
            values |= {
                "url": self.postgres.jdbc_url(DATABASE),
                "user": USER,
                "password": PASSWORD,
                "source": f"source_{rows}",
                "sink": sink,
            }
            text, count = JDBC_JOB % values, lambda: self._table_ids(sink)
        job = work / "job.conf"
        job.write_text(text)
        return job, count

    def flink_pipeline(self, workload: str, rows: int, work: Path) -> tuple[list[str], Callable[[], tuple[int, int]]]:
        """The Flink SQL of one run (tables, then the pipeline) and how to count its output."""
        self._runs += 1
        columns = "id BIGINT, name STRING, score DOUBLE"
        if workload == "kafka":
            out = work / "out"
            source = f"""CREATE TABLE source ({columns}) WITH (
                'connector' = 'kafka', 'topic' = 'peers_{rows}',
                'properties.bootstrap.servers' = '{self.broker.bootstrap_servers}',
                'properties.group.id' = 'peers-{self._runs}',
                'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset',
                'format' = 'json')"""
            sink = f"""CREATE TABLE sink ({columns}) WITH (
                'connector' = 'filesystem', 'path' = '{out.resolve().as_uri()}', 'format' = 'parquet')"""
            count: Callable[[], tuple[int, int]] = lambda: _parquet_ids(out)  # noqa: E731
        else:
            table = f"sink_{self._runs}"
            self._create_sink_table(table, primary_key=True)
            login = f"'url' = '{self.postgres.jdbc_url(DATABASE)}', 'username' = '{USER}', 'password' = '{PASSWORD}'"
            # the source table's primary key is declared too: it is the query's upsert key,
            # which Flink 2.3 requires to match the sink's
            source = f"""CREATE TABLE source ({columns}, PRIMARY KEY (id) NOT ENFORCED) WITH (
                'connector' = 'jdbc', {login}, 'table-name' = 'source_{rows}',
                'scan.partition.column' = 'id', 'scan.partition.num' = '{self.parallelism}',
                'scan.partition.lower-bound' = '0', 'scan.partition.upper-bound' = '{rows - 1}')"""
            sink = f"""CREATE TABLE sink ({columns}, PRIMARY KEY (id) NOT ENFORCED) WITH (
                'connector' = 'jdbc', {login}, 'table-name' = '{table}')"""
            count = lambda: self._table_ids(table)  # noqa: E731
        return [source, sink, "INSERT INTO sink SELECT id, name, score FROM source"], count

    def _create_sink_table(self, table: str, primary_key: bool = False) -> None:
        key = " PRIMARY KEY" if primary_key else ""
        for statement in (
            f"CREATE TABLE {table} (id bigint{key}, name text, score double precision)",
            f'GRANT ALL ON {table} TO "{USER}"',
        ):
            self.postgres.execute(statement, database=DATABASE)

    def _table_ids(self, table: str) -> tuple[int, int]:
        [(rows, distinct)] = self.postgres.execute(
            f"SELECT count(*), count(DISTINCT id) FROM {table}", database=DATABASE
        )
        self.postgres.execute(f"DROP TABLE {table}", database=DATABASE)
        return int(rows), int(distinct)


def _parquet_ids(out: Path) -> tuple[int, int]:
    ids = committed_ids(out)
    return len(ids), len(np.unique(ids))


@contextmanager
def systems(sizes: tuple[int, ...], parallelism: int, interval_ms: int) -> Iterator[Systems]:
    """A Kafka broker and a PostgreSQL server on loopback, filled for each job size;
    stopped afterwards."""
    from tests.servers.kafka_broker import KafkaBroker
    from tests.servers.postgres import PostgresServer

    with KafkaBroker(nodes=1) as broker, PostgresServer() as postgres:
        postgres.create_user(USER, PASSWORD)
        postgres.execute(f'CREATE DATABASE "{DATABASE}" OWNER "{USER}"')
        ready = Systems(broker, postgres, parallelism, interval_ms)
        for size in sizes:
            ready.fill(size)
        postgres.execute(f'GRANT ALL ON ALL TABLES IN SCHEMA public TO "{USER}"', database=DATABASE)
        postgres.execute(f'GRANT ALL ON SCHEMA public TO "{USER}"', database=DATABASE)
        yield ready
