"""Jdbc jobs end to end with real Spark (``seatunnel-ckpt run``) and a real PostgreSQL:
bad input refused before Spark starts, copies both ways, rescaling with prepared
transactions in flight, and restoring an older checkpoint."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pyarrow.compute as pc
import pytest

from airflow_provider_seatunnel_ckpt.connectors.jdbc import transactions
from tests.support.postgres import kill_with_prepared_in_flight
from tests.support.workspace import (
    VENV_BIN,
    Workspace,
    assert_exactly_once,
    completed_ids,
    free_port,
    read_output,
)

from .conftest import PG_OPTIONS, Database, prepared_gids, variables_file

pytestmark = [pytest.mark.slow, pytest.mark.timeout(500)]


def _jdbc(**options: object) -> dict:
    return {"plugin_name": "Jdbc", **PG_OPTIONS, **options}


def _one_error_line(result, key: str) -> str:
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "Traceback" not in result.stderr, result.explain()
    assert errors[0].startswith(f"error: {key}: "), result.explain()
    return errors[0]


def test_bad_input_is_one_line_before_spark_starts(workspace: Workspace, db: Database) -> None:
    db.sql("CREATE TABLE good (id bigint PRIMARY KEY, v text)")
    db.sql("CREATE TABLE dupes (id int, v text)")
    db.sql("INSERT INTO dupes VALUES (1, 'a'), (1, 'a')")  # no column to order one key's rows by
    db.sql("CREATE TABLE odd (id int PRIMARY KEY, addr inet)")
    config = workspace.write_config()
    variables = variables_file(db, workspace.root)
    cases = [
        (
            "missing-table",
            _jdbc(table="public.nope"),
            None,
            2,
            "source[0].table",
            'relation "public.nope" does not exist',
        ),
        ("bad-type", _jdbc(table="odd"), None, 2, "source[0].table", "PostgreSQL type inet"),
        (
            "no-column",
            _jdbc(table="good", partition_column="idd"),
            None,
            2,
            "source[0].partition_column",
            "'idd' is not a column",
        ),
        (
            "not-unique",
            _jdbc(table="dupes", partition_column="id"),
            None,
            2,
            "source[0].partition_column",
            "not unique",
        ),
        (
            "wrong-password",
            {**_jdbc(table="good"), "password": "Wr0ng-Pass-Phrase"},
            None,
            2,
            "source[0].password",
            'password authentication failed for user "postgres"',
        ),
        (
            "sink-missing",
            {"plugin_name": "Sequence", "rows": 10},
            _jdbc(table="nope", schema_save_mode="ERROR_WHEN_SCHEMA_NOT_EXIST"),
            2,
            "sink[0].table",
            "does not exist",
        ),
        (
            "unreachable",
            {
                **_jdbc(table="good"),
                "url": f"jdbc:postgresql://127.0.0.1:{free_port()}/x",
                "connection_check_timeout_sec": 3,
            },
            None,
            1,
            "source[0]",
            "cannot connect to postgresql://postgres@127.0.0.1",
        ),
    ]
    for name, source, sink, code, key, words in cases:
        job = workspace.write_job(source, sink, name=name)
        started = time.monotonic()
        result = workspace.run(job, config, name, "--variables", str(variables), timeout=120)
        assert result.returncode == code, f"{name}\n{result.explain()}"
        line = _one_error_line(result, key)
        assert words in line, f"{name}: {line}"
        assert db.server.password not in result.stderr and "Wr0ng-Pass-Phrase" not in result.stderr, name
        assert "attempt 1:" not in result.stderr, f"{name}: Spark started\n{result.explain()}"
        assert time.monotonic() - started < 60, name
    # nothing was claimed for any of them
    assert not (workspace.checkpoints).exists() or not any(workspace.checkpoints.rglob("job.json"))


def test_postgres_to_parquet_and_sequence_to_postgres(workspace: Workspace, db: Database) -> None:
    rows = 300_000
    db.sql("CREATE TABLE src (id bigint PRIMARY KEY, name text, amount numeric(12, 2), at timestamptz)")
    db.sql(f"INSERT INTO src SELECT g, 'n' || g, g / 7.0, now() FROM generate_series(0, {rows - 1}) g")
    config = workspace.write_config(interval=500)
    variables = variables_file(db, workspace.root)
    read_job = workspace.write_job(_jdbc(table="src", partition_num=4, fetch_size=20_000), name="read")
    result = workspace.run(read_job, config, "pg-read", "--variables", str(variables))
    assert result.returncode == 0, result.explain()
    table = read_output(f"file://{workspace.output}/")
    assert_exactly_once(table, rows)
    assert str(table.schema.field("amount").type) == "decimal128(12, 2)"
    assert pc.sum(table.column("amount")).as_py() == db.sql("SELECT sum(amount) FROM src")[0][0]

    write_job = workspace.write_job(
        {"plugin_name": "Sequence", "rows": rows, "rows_per_second": 150_000},
        _jdbc(table="public.dst", primary_keys=["id"]),
        name="write",
    )
    result = workspace.run(write_job, config, "pg-write", "--variables", str(variables))
    assert result.returncode == 0, result.explain()
    assert db.ids("dst") == (rows, rows, 0, rows - 1)
    assert prepared_gids(db) == []


def test_rescale_with_prepared_transactions_in_flight_then_restore_older(workspace: Workspace, db: Database) -> None:
    rows = 600_000
    config = workspace.write_config(interval=200, max_retained=100, tolerable_failure=5)
    variables = str(variables_file(db, workspace.root))
    source = {"plugin_name": "Sequence", "rows": rows, "rows_per_second": 60_000, "batch_size": 2_000, "splits": 4}
    sink = _jdbc(table="out", primary_keys=["id"])
    jobs = {p: workspace.write_job(source, sink, parallelism=p, file_name=f"p{p}.yaml") for p in (1, 2)}
    in_flight = []
    for parallelism in (2, 1):
        with workspace.start(jobs[parallelism], config, "rescale", "--variables", variables) as driver:
            assert driver.wait_for(r"checkpoint \d+ \(checkpoint\) completed", 120), driver.stderr()
            time.sleep(1.0)
            in_flight.append(kill_with_prepared_in_flight(driver, db))
        # what the dead run left prepared is what ``inspect --job-file`` lists
        listed = _cli(
            workspace,
            "inspect",
            "--config",
            str(config),
            "--job-id",
            "rescale",
            "--json",
            "--job-file",
            str(jobs[parallelism]),
            "--variables",
            variables,
        )
        pending = json.loads(listed.stdout)["sink_pending"]
        assert sorted(p["gid"] for p in pending) == sorted(prepared_gids(db)) != []
        assert db.server.password not in listed.stdout + listed.stderr
    assert all(in_flight), in_flight
    result = workspace.run(jobs[2], config, "rescale", "--variables", variables)
    assert result.returncode == 0, result.explain()
    assert "rescaling from 1 to 2 subtasks" in result.stderr, result.explain()
    assert db.ids("out") == (rows, rows, 0, rows - 1)
    assert prepared_gids(db) == []

    # Restore an older checkpoint of the finished job: rows of newer epochs are deleted
    # first and written again, so every id is still there exactly once.
    ids = completed_ids(Path(config), "rescale")
    older = ids[len(ids) // 2]
    again = workspace.run(jobs[2], config, "rescale", "--restore", str(older), "--variables", variables)
    assert again.returncode == 0, again.explain()
    match = re.search(
        rf"deleted (\d+) row\(s\) of \d+ transaction\(s\) committed after checkpoint {older}", again.stderr
    )
    assert match and int(match.group(1)) > 0, again.explain()
    assert db.ids("out") == (rows, rows, 0, rows - 1)

    # ``delete --yes --job-file`` of a job killed with prepared work rolls that work back
    # and forgets the job's commit log rows; what its completed checkpoints committed stays
    doomed = workspace.write_job(
        source, _jdbc(table="doomed_out", primary_keys=["id"]), parallelism=2, file_name="doomed.yaml"
    )
    with workspace.start(doomed, config, "doomed", "--variables", variables) as driver:
        assert driver.wait_for(r"checkpoint \d+ \(checkpoint\) completed", 120), driver.stderr()
        assert kill_with_prepared_in_flight(driver, db)
    committed = db.ids("doomed_out")
    deleted = _cli(
        workspace,
        "delete",
        "--config",
        str(config),
        "--job-id",
        "doomed",
        "--yes",
        "--job-file",
        str(doomed),
        "--variables",
        variables,
    )
    assert "deleted job doomed" in deleted.stdout, deleted.stderr
    assert prepared_gids(db) == []
    assert db.ids("doomed_out") == committed
    tag = transactions.job_tag("doomed")
    assert db.sql(f"SELECT count(*) FROM {transactions.COMMIT_LOG} WHERE job_tag = '{tag}'")[0][0] == 0


def _cli(workspace: Workspace, *args: str) -> subprocess.CompletedProcess[str]:
    """A ``seatunnel-ckpt`` storage command, as a user runs it; it must succeed."""
    result = subprocess.run(
        [str(VENV_BIN / "seatunnel-ckpt"), *args], env=workspace.env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, f"{args}: exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result


def test_two_jdbc_sinks_of_one_job_each_write_every_row_once_through_a_kill(workspace: Workspace, db: Database) -> None:
    """Two Jdbc sinks in one job, on one database. Both used to name their prepared
    transactions by the job alone, so the second one's first PREPARE waited forever on the
    first one's commit-log row. Now the second has its own tag: both tables get every
    row once through a driver killed with transactions in flight, and nothing is left
    prepared."""
    import yaml

    rows = 200_000
    config = workspace.write_config(interval=500)
    variables = variables_file(db, workspace.root)
    job = workspace.root / "two-sinks.yaml"
    job.write_text(
        yaml.safe_dump(
            {
                "env": {"job.name": "two-sinks", "parallelism": 2},
                "source": [
                    {"plugin_name": "Sequence", "rows": rows, "rows_per_second": 40_000, "plugin_output": "seq"}
                ],
                "sink": [
                    _jdbc(table="public.left_t", primary_keys=["id"], plugin_input="seq"),
                    _jdbc(table="public.right_t", primary_keys=["id"], plugin_input="seq"),
                ],
            },
            sort_keys=False,
        )
    )
    with workspace.start(job, config, "two-sinks", "--variables", str(variables)) as first:
        assert first.wait_for(r"checkpoint 2 \(checkpoint\) completed", 120), first.stderr()
        assert kill_with_prepared_in_flight(first, db) > 0
    tags = {transactions.parse_gid(gid).tag for gid in prepared_gids(db)}
    assert tags <= {transactions.sink_tag("two-sinks", None), transactions.sink_tag("two-sinks", "sink[1]")}, tags
    result = workspace.run(job, config, "two-sinks", "--variables", str(variables))
    assert result.returncode == 0, result.explain()
    assert db.ids("left_t") == (rows, rows, 0, rows - 1)
    assert db.ids("right_t") == (rows, rows, 0, rows - 1)
    assert prepared_gids(db) == []
    logged = dict(db.sql("SELECT job_tag, count(*) FROM seatunnel_ckpt_commit_log GROUP BY job_tag"))
    assert set(logged) == {transactions.sink_tag("two-sinks", None), transactions.sink_tag("two-sinks", "sink[1]")}
