"""Chaos, exactly-once, for the Jdbc source on a real PostgreSQL: a 1,000,000-row table read
in 4 key-range splits into parquet, under executor-worker kills, a PostgreSQL
crash-restart (``pg_ctl restart -m immediate``) and driver SIGKILLs with reruns
(``--restore latest``). Every id is counted with pyarrow in the parquet output. The Jdbc
sink's chaos run is the job with every sink's (test_every_sink_chaos.py)."""

from __future__ import annotations

import random
import time
from typing import Any

import pytest

from tests.integration.jdbc.conftest import PG_OPTIONS, Database, variables_file
from tests.support.chaos import ChaosRecord, chaos_runs
from tests.support.postgres import restart_postgres
from tests.support.workspace import Workspace, read_output, tally

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

ROWS = 1_000_000
THROTTLE = {"plugin_name": "Python", "function": "tests.chaos.throttle:rows_30k"}


@pytest.fixture
def db(postgres_server: Any, pg_database: str) -> Database:
    return Database(postgres_server, pg_database)


def _chaos_runs(
    workspace: Workspace, db: Database, record: ChaosRecord, rng: random.Random, job: Any, job_id: str
) -> None:
    """Worker kills, a PostgreSQL crash and a driver kill, then driver kills and reruns."""
    config = workspace.write_config(interval=500, tolerable_failure=10)
    variables = str(variables_file(db, workspace.root))
    chaos_runs(
        workspace,
        record,
        rng,
        job,
        config,
        job_id,
        "--variables",
        variables,
        disrupt=lambda driver: restart_postgres(db, driver, record),
    )


def test_postgres_table_to_parquet_under_kills(
    workspace: Workspace, db: Database, chaos: tuple[random.Random, ChaosRecord]
) -> None:
    rng, record = chaos
    started = time.monotonic()
    db.sql("CREATE TABLE src (id bigint PRIMARY KEY, payload text)")
    db.sql(f"INSERT INTO src SELECT g, md5(g::text) FROM generate_series(0, {ROWS - 1}) g")
    job = workspace.write_job(
        {"plugin_name": "Jdbc", **PG_OPTIONS, "table": "src", "partition_num": 4, "fetch_size": 10_000},
        transforms=[THROTTLE],
        env={"batch_size": 5_000},
    )
    _chaos_runs(workspace, db, record, rng, job, "chaos-pg-source")
    record.elapsed_s = time.monotonic() - started
    table = read_output(f"file://{workspace.output}/", columns=["id"])
    result = tally(table.column("id").combine_chunks(), ROWS)
    record.rows, record.lost, record.duplicated = result.rows, result.lost, result.duplicated
    assert result.exactly_once, f"seed {record.seed}: {result}; kill points: {record.kill_points}"
    assert len(record.kill_points) >= 5, record.kill_points
