"""Jdbc connectors: our PostgreSQL read and exactly-once write vs the plain ways.

A real PostgreSQL server (the tests' ``tests/servers/postgres.py``: Debian's server on a
free loopback port, ``fsync=off``) and one SparkSession (``local[2]``) for every run.

**Read** (``jdbc_read_ratio_vs_spark_jdbc``): copy the same table (id bigint primary key,
an integer, a double, a 32-character text and a timestamp) to parquet files,

* ``ours``   the engine's job ``Jdbc`` (``partition_column: id``, 4 splits) -> ``File``
             parquet, parallelism 2, a checkpoint every 1 s;
* ``spark``  Spark's own JDBC reader, ``spark.read.jdbc(partitionColumn=id, numPartitions=4,
             fetchsize=<ours>)`` with the PostgreSQL JDBC driver of Debian's
             ``libpostgresql-jdbc-java``, ``.write.parquet``: same 2 task slots, no checkpoints.

**Write** (``jdbc_sink_ratio_vs_copy_limit``): put the same rows (``Sequence`` ids ->
``bench.workloads:transform``: id, bucket, score) into an empty table with a primary key;
10 million rows, so that a job's fixed cost (Spark job start, preflight, the final
checkpoint and commit: about 0.6 s) weighs as little as in the long copies the connector is for,

* ``ours``   ``Sequence`` -> ``Python`` transform -> ``Jdbc`` sink, exactly-once (one
             prepared transaction per subtask and checkpoint, committed after the
             checkpoint), parallelism 2, a checkpoint every 1 s;
* ``copy``   the limit the issue names: the same Arrow batches, no engine, one psycopg
             connection, one ``COPY ... FROM STDIN`` fed CSV that pyarrow encodes (C++);
* ``adbc``   for reference: the same batches through ADBC's bulk ingest (binary COPY),
             one connection, no engine.

**Write by key** (``--keys``, ``jdbc_sink_upsert_ratio_vs_append``): the same write into the
same table, the sink given ``primary_keys: [id]``, 2 million rows by default,

* ``upsert`` the default, SeaTunnel's ``enable_upsert: true``: each subtask copies its rows
             into the sink's stage inside its prepared transaction, and the driver
             upserts each epoch's rows by key after ``COMMIT PREPARED`` (issue 47);
* ``append`` ``enable_upsert: false``: the rows are appended with COPY inside the prepared
             transactions, as without keys;
* ``copy``   the plain ``COPY`` above.

Variants run interleaved in ABBA order. Time = the whole ``JobRun.run`` (preflight, claim,
the Spark job, the final checkpoint and commit) for ours; the whole write for Spark's
reader and the baselines. The SparkSession and the server start once and are not timed.
Every run's output is counted id by id (parquet with pyarrow, tables with SQL).

``python bench/jdbc_bench.py [--quick] [--out] [--repeat N] [--rows N] [--write-rows N] [--keys]``
"""

from __future__ import annotations

import contextlib
import gc
import io
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import emit, machine_info, progress, summary
from bench.engine_runs import (
    INTERVAL_MS,
    MASTER,
    PARALLELISM,
    bench_arguments,
    described,
    job_env,
    paired,
    ratio_figures,
    run_abba,
    run_engine,
    spark_session,
)
from bench.workloads import (
    TRANSFORM_FUNCTION,
    make_importable_on_executors,
    parquet_ids_once,
    sequence_batches,
    transform,
)

NAME = "jdbc"
SPLITS = 4
FETCH_SIZE = 100_000
JDBC_JAR = Path("/usr/share/java/postgresql.jar")
SOURCE_TABLE = "public.bench_source"
READ_GOAL = 1.0
WRITE_GOAL = 0.8


def _log(message: str) -> None:
    progress(NAME, message)


# ---- the database ---------------------------------------------------------------------------
class Database:
    """One database on the benchmark's server: setup and counting in SQL."""

    def __init__(self, server: Any, name: str):
        self.server = server
        self.name = name
        self.uri = server.uri(name)
        self.jdbc_url = server.jdbc_url(name)

    def execute(self, sql: str) -> list[tuple[Any, ...]]:
        return self.server.execute(sql, database=self.name)

    def check_ids(self, table: str, rows: int) -> None:
        count, distinct, low, high = self.execute(
            f"SELECT count(*), count(DISTINCT id), min(id), max(id) FROM {table}"
        )[0]
        if (count, distinct, low, high) != (rows, rows, 0, rows - 1):
            raise RuntimeError(
                f"{table}: {count} rows, {distinct} distinct ids in [{low}, {high}]; expected every id "
                f"of 0..{rows - 1} once"
            )


def fill_source(db: Database, rows: int) -> None:
    db.execute(
        f"CREATE TABLE {SOURCE_TABLE} (id bigint PRIMARY KEY, k integer NOT NULL, score double precision, "
        "name text, created timestamp)"
    )
    db.execute(
        f"INSERT INTO {SOURCE_TABLE} SELECT g, g % 1000, g * 0.5, md5(g::text), "
        f"timestamp '2024-01-01' + g * interval '1 second' FROM generate_series(0, {rows - 1}) g"
    )
    db.execute(f"VACUUM ANALYZE {SOURCE_TABLE}")


def _connection(db: Database) -> dict[str, Any]:
    return {"url": db.jdbc_url, "user": "postgres", "password": db.server.password}


# ---- read ---------------------------------------------------------------------------------
def read_ours(spark: Any, db: Database, workdir: Path, rows: int, tag: str) -> dict[str, Any]:
    output = workdir / tag
    job = {
        "env": job_env(f"bench-{tag}"),
        "source": [
            {
                "plugin_name": "Jdbc",
                **_connection(db),
                "table": SOURCE_TABLE,
                "partition_column": "id",
                "partition_num": SPLITS,
                "fetch_size": FETCH_SIZE,
            }
        ],
        "sink": [{"plugin_name": "File", "path": f"file://{output}/", "format": "parquet"}],
    }
    result = run_engine(spark, job, workdir, tag)
    result["files"] = parquet_ids_once(output, rows)
    shutil.rmtree(output, ignore_errors=True)
    return result


def read_spark(spark: Any, db: Database, workdir: Path, rows: int, tag: str) -> dict[str, Any]:
    output = workdir / tag
    gc.collect()
    started = time.perf_counter()
    frame = spark.read.jdbc(
        db.jdbc_url,
        SOURCE_TABLE,
        column="id",
        lowerBound=0,
        upperBound=rows,
        numPartitions=SPLITS,
        properties={
            "user": "postgres",
            "password": db.server.password,
            "driver": "org.postgresql.Driver",
            "fetchsize": str(FETCH_SIZE),
        },
    )
    frame.write.mode("overwrite").parquet(str(output))
    seconds = time.perf_counter() - started
    result = {"seconds": round(seconds, 4), "files": parquet_ids_once(output, rows)}
    shutil.rmtree(output, ignore_errors=True)
    return result


# ---- write --------------------------------------------------------------------------------
def _target(db: Database, tag: str) -> str:
    table = f"public.sink_{tag}"
    db.execute(f"DROP TABLE IF EXISTS {table}")
    db.execute(f"CREATE TABLE {table} (id bigint PRIMARY KEY, bucket bigint, score double precision)")
    return table


def _finish_write(db: Database, table: str, rows: int, seconds: float, **extra: Any) -> dict[str, Any]:
    db.check_ids(table, rows)
    db.execute(f"DROP TABLE {table}")
    return {"seconds": round(seconds, 4), **extra}


def write_ours(spark: Any, db: Database, workdir: Path, rows: int, tag: str, **sink: Any) -> dict[str, Any]:
    table = _target(db, tag)
    job = {
        "env": job_env(f"bench-{tag}"),
        "source": [{"plugin_name": "Sequence", "rows": rows, "payload_bytes": 0}],
        "transform": [{"plugin_name": "Python", "function": TRANSFORM_FUNCTION}],
        "sink": [{"plugin_name": "Jdbc", **_connection(db), "table": table, "is_exactly_once": True, **sink}],
    }
    result = run_engine(spark, job, workdir, tag)
    return _finish_write(db, table, rows, result.pop("seconds"), **result)


def write_copy(spark: Any, db: Database, workdir: Path, rows: int, tag: str) -> dict[str, Any]:
    """The limit: the same batches, one psycopg ``COPY`` fed CSV that pyarrow encodes."""
    import psycopg
    import pyarrow.csv as pacsv

    table = _target(db, tag)
    gc.collect()
    started = time.perf_counter()
    with psycopg.connect(db.uri) as conn, conn.cursor() as cur:
        with cur.copy(f"COPY {table} (id, bucket, score) FROM STDIN (FORMAT csv)") as copy:
            for batch in sequence_batches(rows, payload_bytes=0):
                buffer = io.BytesIO()
                pacsv.write_csv(transform(batch), buffer, pacsv.WriteOptions(include_header=False))
                copy.write(buffer.getbuffer())
    seconds = time.perf_counter() - started
    return _finish_write(db, table, rows, seconds)


def write_adbc(spark: Any, db: Database, workdir: Path, rows: int, tag: str) -> dict[str, Any]:
    """Reference: the same batches through ADBC's bulk ingest (binary COPY), one connection."""
    import adbc_driver_postgresql.dbapi as adbc
    import pyarrow as pa

    table = _target(db, tag)
    batches = (transform(b) for b in sequence_batches(rows, payload_bytes=0))
    first = next(batches)
    gc.collect()
    started = time.perf_counter()
    with adbc.connect(db.uri) as conn, conn.cursor() as cur:
        reader = pa.RecordBatchReader.from_batches(first.schema, _chain(first, batches))
        cur.adbc_ingest(table.split(".")[1], reader, mode="append", db_schema_name="public")
        conn.commit()
    seconds = time.perf_counter() - started
    return _finish_write(db, table, rows, seconds)


def _chain(first: Any, rest: Any) -> Any:
    yield first
    yield from rest


# ---- the benchmark ------------------------------------------------------------------------
READ = {"ours": read_ours, "spark": read_spark}
WRITE = {"ours": write_ours, "copy": write_copy, "adbc": write_adbc}
#: ``--keys``: the sink with primary_keys, upserting (the default) or appending
WRITE_BY_KEY = {
    "upsert": partial(write_ours, primary_keys=["id"]),
    "append": partial(write_ours, primary_keys=["id"], enable_upsert=False),
    "copy": write_copy,
}


@contextlib.contextmanager
def postgres_and_spark(prefix: str, jars: tuple[str, ...] = ()) -> Iterator[tuple[Database, str, Any, Path]]:
    """A PostgreSQL server with a fresh database, a Spark session and a work directory:
    ``(db, server_version, spark, workdir)``, all stopped and removed afterwards."""
    from tests.servers.postgres import PostgresServer

    make_importable_on_executors()
    workdir = Path(tempfile.mkdtemp(prefix=f"{prefix}-"))
    with PostgresServer() as server:
        db = Database(server, server.create_database())
        version = db.execute("SHOW server_version")[0][0]
        _log(f"PostgreSQL {version} on port {server.port}")
        spark = spark_session(prefix, jars=jars)
        try:
            yield db, version, spark, workdir
        finally:
            spark.stop()
            shutil.rmtree(workdir, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = bench_arguments(__doc__, NAME, "rows of the read table (default 2,000,000)")
    parser.add_argument("--write-rows", type=int, help="rows of the write (default 10,000,000; --keys 2,000,000)")
    parser.add_argument(
        "--keys",
        action="store_true",
        help="only the write, with primary_keys: upserting by key vs appending (bench/results/jdbc_keys.json)",
    )
    args = parser.parse_args(argv)
    if args.keys:
        return main_by_key(args)
    rows = args.rows or (100_000 if args.quick else 2_000_000)
    write_rows = args.write_rows or (100_000 if args.quick else 10_000_000)
    repeat = args.repeat or (1 if args.quick else 4)
    if not JDBC_JAR.exists():
        parser.error(
            f"{JDBC_JAR} is missing: the Spark JDBC baseline needs Debian's libpostgresql-jdbc-java "
            "(scripts/bench installs it)"
        )

    machine = machine_info(extra_libraries=("adbc-driver-postgresql", "psycopg"))
    with postgres_and_spark("bench-jdbc", jars=(str(JDBC_JAR),)) as (db, version, spark, workdir):
        _log(f"filling {rows:,} rows")
        fill_source(db, rows)
        _log("warm-up: one run of each variant, not counted (JVM, JDBC driver, Python workers)")
        read_variants = {name: partial(fn, spark, db, workdir) for name, fn in READ.items()}
        write_variants = {name: partial(fn, spark, db, workdir) for name, fn in WRITE.items()}
        run_abba(NAME, read_variants, rows, 1, "warm_read")
        run_abba(NAME, write_variants, max(rows // 10, 1000), 1, "warm_write")
        read = run_abba(NAME, read_variants, rows, repeat, "read")
        write = run_abba(NAME, write_variants, write_rows, repeat, "write")
    read_ratios = paired(read, "ours", "spark")
    copy_ratios = paired(write, "ours", "copy")
    adbc_ratios = paired(write, "ours", "adbc")
    ratios, figures = ratio_figures(
        {
            "jdbc_read_ratio_vs_spark_jdbc": read_ratios,
            "jdbc_sink_ratio_vs_copy_limit": copy_ratios,
            "jdbc_sink_ratio_vs_adbc_ingest": adbc_ratios,
        }
    )
    figures["jdbc_read_rows_per_s"] = summary(r["rows_per_s"] for r in read["ours"])["median"]
    figures["jdbc_sink_rows_per_s"] = summary(r["rows_per_s"] for r in write["ours"])["median"]
    goals = {"jdbc_read_ratio_vs_spark_jdbc": READ_GOAL, "jdbc_sink_ratio_vs_copy_limit": WRITE_GOAL}
    labels = {
        ("read", "ours"): "ours: Jdbc -> File parquet, 1 s checkpoints",
        ("read", "spark"): "spark.read.jdbc -> parquet",
        ("write", "ours"): "ours: Sequence -> Jdbc, exactly-once, 1 s checkpoints",
        ("write", "copy"): "one psycopg COPY (CSV by pyarrow), no engine",
        ("write", "adbc"): "one ADBC bulk ingest (binary COPY), no engine",
    }
    table_rows = []
    for phase, results in (("read", read), ("write", write)):
        for variant, runs in results.items():
            speeds = summary(r["rows_per_s"] for r in runs)
            table_rows.append(
                [
                    phase,
                    labels[(phase, variant)],
                    speeds["median"],
                    f"{speeds['min']:,.0f} - {speeds['max']:,.0f}",
                    summary(r["seconds"] for r in runs)["median"],
                ]
            )
    result = {
        "benchmark": NAME,
        "description": (
            f"read {rows:,} rows, write {write_rows:,} rows, local[2], parallelism {PARALLELISM}, {SPLITS} splits; a real PostgreSQL "
            f"{version.split()[0]} on loopback; {repeat} ABBA repetitions; every output counted id by id."
        ),
        "machine": {**machine, "postgresql": version},
        "settings": {
            "quick": args.quick,
            "rows": rows,
            "write_rows": write_rows,
            "repeat": repeat,
            "master": MASTER,
            "parallelism": PARALLELISM,
            "splits": SPLITS,
            "checkpoint_interval_ms": INTERVAL_MS,
            "fetch_size": FETCH_SIZE,
            "jdbc_driver": JDBC_JAR.resolve().name,
        },
        "summary": figures,
        "ratios": ratios,
        "table": {
            "columns": ["phase", "variant", "rows/s (median)", "rows/s min - max", "seconds (median)"],
            "rows": table_rows,
        },
        "targets": [
            {"figure": key, "target": f">= {goal}", "value": figures[key], "met": figures[key] >= goal}
            for key, goal in goals.items()
        ],
        "notes": [
            "Spark's JDBC reader gets the same fetch size as ours and the same 4 key ranges; it writes no checkpoint "
            "and gives no resume. Ours reads Arrow batches through ADBC with keyset pagination and checkpoints "
            "every second.",
            "The sink figures compare an exactly-once write (a prepared transaction per subtask and checkpoint, "
            "committed by the driver after the checkpoint is durable) with one plain COPY that nothing can "
            "resume; `jdbc_sink_ratio_vs_adbc_ingest` compares with the fastest plain Arrow path we know.",
        ],
        "read": described(read),
        "write": described(write),
    }
    emit(result, NAME, args.out)
    return 0


def main_by_key(args: Any) -> int:
    """``--keys``: what upserting plain rows by key (``enable_upsert``, the default with
    primary_keys) costs against appending them (``enable_upsert: false``)."""
    rows = args.write_rows or (100_000 if args.quick else 2_000_000)
    repeat = args.repeat or (1 if args.quick else 4)
    machine = machine_info(extra_libraries=("adbc-driver-postgresql", "psycopg"))
    with postgres_and_spark("bench-jdbc-keys") as (db, version, spark, workdir):
        variants = {name: partial(fn, spark, db, workdir) for name, fn in WRITE_BY_KEY.items()}
        _log("warm-up: one run of each variant, not counted")
        run_abba(NAME, variants, max(rows // 10, 1000), 1, "warm_keys")
        write = run_abba(NAME, variants, rows, repeat, "keys")
    ratios, figures = ratio_figures(
        {
            "jdbc_sink_upsert_ratio_vs_append": paired(write, "upsert", "append"),
            "jdbc_sink_upsert_ratio_vs_copy_limit": paired(write, "upsert", "copy"),
            "jdbc_sink_append_ratio_vs_copy_limit": paired(write, "append", "copy"),
        }
    )
    labels = {
        "upsert": "ours, primary_keys, enable_upsert true (default): staged, upserted by the driver",
        "append": "ours, primary_keys, enable_upsert false: appended (COPY)",
        "copy": "one psycopg COPY (CSV by pyarrow), no engine",
    }
    table_rows = []
    for variant, runs in write.items():
        speeds = summary(r["rows_per_s"] for r in runs)
        table_rows.append(
            [
                labels[variant],
                speeds["median"],
                f"{speeds['min']:,.0f} - {speeds['max']:,.0f}",
                summary(r["seconds"] for r in runs)["median"],
            ]
        )
    result = {
        "benchmark": f"{NAME}_keys",
        "description": (
            f"write {rows:,} rows into a table with a primary key, the sink given primary_keys; local[2], "
            f"parallelism {PARALLELISM}, checkpoints every {INTERVAL_MS} ms; a real PostgreSQL "
            f"{version.split()[0]} on loopback; {repeat} ABBA repetitions; every output counted id by id."
        ),
        "machine": {**machine, "postgresql": version},
        "settings": {
            "quick": args.quick,
            "write_rows": rows,
            "repeat": repeat,
            "master": MASTER,
            "parallelism": PARALLELISM,
            "checkpoint_interval_ms": INTERVAL_MS,
        },
        "summary": figures,
        "ratios": ratios,
        "table": {
            "columns": ["variant", "rows/s (median)", "rows/s min - max", "seconds (median)"],
            "rows": table_rows,
        },
        "write": described(write),
    }
    emit(result, f"{NAME}_keys", args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
