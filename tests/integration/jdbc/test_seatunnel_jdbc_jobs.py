"""SeaTunnel's own Jdbc e2e jobs (tests/fixtures/seatunnel/connector-jdbc-e2e, unchanged
but for the server's address and credentials) on the session's PostgreSQL, run in-process
(tests/seatunnel_jobs.run_in_process) in the order and on the tables their SeaTunnel test
sets up, with the results it expects."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.seatunnel_jobs import run_in_process

from .conftest import Database, on_our_server

FILES = Path(__file__).parents[2] / "fixtures" / "seatunnel" / "connector-jdbc-e2e"

pytestmark = pytest.mark.timeout(180)


def _on_our_server(name: str, db: Database, directory: Path) -> Path:
    path = directory / name
    path.write_text(on_our_server((FILES / name).read_text(), db))
    return path


def test_auto_generated_sql_appends_then_upserts_the_same_keys(db: Database, tmp_path: Path) -> None:
    """JdbcAutoGenerateSQLIT: on the table it creates (``user_id`` its primary key), a job
    without primary_keys appends FakeSource's 100 rows, then one with ``primary_keys =
    ["user_id"]`` writes its rows into the same table. Our FakeSource's values repeat
    from run to run, so the second job writes the same 100 keys again: SeaTunnel's sink
    upserts rows by primary_keys (``enable_upsert``, true by default), and so does ours,
    exactly once. Appended (COPY), the second job failed on the first duplicate key."""
    db.sql("create table sink(user_id BIGINT NOT NULL PRIMARY KEY, name varchar(255), age INT)")
    run_in_process(_on_our_server("jdbc_sink_auto_generate_sql.conf", db, tmp_path), "auto-generate-sql")
    first = db.sql("SELECT user_id, name, age FROM sink ORDER BY user_id")
    assert len(first) == 100
    run_in_process(_on_our_server("jdbc_sink_auto_generate_upsql_sql.conf", db, tmp_path), "auto-generate-upsert")
    assert db.sql("SELECT user_id, name, age FROM sink ORDER BY user_id") == first
    assert db.sql("SELECT count(*) FROM pg_prepared_xacts")[0][0] == 0
