"""Two Jdbc sinks on one database, swapped between a checkpoint and its restore (issue 47,
defect 5): each is named by its place among the job's Jdbc sinks, and names its prepared
transactions and commit-log rows by it, so neither is the sink it was. The restore is
refused in one line before anything changes (taken by place, it went through silently and
handed each table's transactions to the other's sink); restored as it was, every id is in
each table once. Real PostgreSQL, no Spark (tests/claimed_runs.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_seatunnel_ckpt.errors import ConfigError
from tests.claimed_runs import ClaimedRun

from .conftest import Database, prepared_gids

ROWS = 30
CUT = 12


def test_swapped_jdbc_sinks_on_one_database_are_refused_then_restore_as_they_were(tmp_path: Path, db: Database) -> None:
    t1, t2 = (db.options(plugin_name="Jdbc", table=table) for table in ("t1", "t2"))
    first = ClaimedRun(tmp_path, [t1, t2]).claim()
    first.complete(1, first.epoch(1, range(CUT)))  # the driver dies before COMMIT PREPARED
    prepared = sorted(prepared_gids(db))
    assert len(prepared) == 2

    with pytest.raises(ConfigError) as refused:
        ClaimedRun(tmp_path, [t2, t1]).claim()
    line = str(refused.value)
    port = db.server.port
    assert "\n" not in line and "password" not in line and db.server.password not in line
    assert line.startswith(
        f"--restore: checkpoint 1 holds output of sink Jdbc (postgres://127.0.0.1:{port}/"
        f"{db.name}.public.t1) that this job no longer has (this job's sink Jdbc 'sink[1]' "
    ), line
    # nothing changed: both epochs still prepared, neither table has a row
    assert sorted(prepared_gids(db)) == prepared
    assert db.ids("t1")[0] == db.ids("t2")[0] == 0

    second = ClaimedRun(tmp_path, [t1, t2]).claim()  # as it was
    second.finish(2, second.epoch(2, range(CUT, ROWS)))
    assert db.ids("t1") == db.ids("t2") == (ROWS, ROWS, 0, ROWS - 1)
    assert prepared_gids(db) == []


def test_swapped_jdbc_sinks_restoring_an_older_checkpoint_are_refused_not_duplicated(
    tmp_path: Path, db: Database
) -> None:
    """Taken by place, each sink rolled back the newer epoch of the table it now writes by
    the other table's commit-log rows, which deleted nothing, and wrote it again: 40 rows
    for 30 ids in each table."""
    t1, t2 = (db.options(plugin_name="Jdbc", table=table) for table in ("t1", "t2"))
    first = ClaimedRun(tmp_path, [t1, t2]).claim()
    first.finish(1, first.epoch(1, range(10)))
    first.highest = 1
    first.finish(2, first.epoch(2, range(10, 20)))

    with pytest.raises(ConfigError, match=r"^--restore: checkpoint 1 holds output of sink Jdbc \(postgres://"):
        ClaimedRun(tmp_path, [t2, t1], restore="1").claim()
    assert db.ids("t1") == db.ids("t2") == (20, 20, 0, 19)  # nothing rolled back yet

    second = ClaimedRun(tmp_path, [t1, t2], restore="1").claim()
    second.finish(3, second.epoch(3, range(10, ROWS)))
    assert db.ids("t1") == db.ids("t2") == (ROWS, ROWS, 0, ROWS - 1)
