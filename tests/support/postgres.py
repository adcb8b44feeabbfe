"""PostgreSQL faults the Jdbc suites share (real Spark, the ``postgres_server`` fixture): a
crash-restart of the server under a chaos run, and a driver killed at a moment when it
holds prepared transactions; the runs of ids a table lacks, to name the epochs a loss hit."""

from __future__ import annotations

import os
import signal
import time

from tests.integration.jdbc.conftest import Database, prepared_gids
from tests.support.chaos import ChaosRecord
from tests.support.workspace import Driver, kill_tree


def restart_postgres(db: Database, driver: Driver, record: ChaosRecord) -> None:
    started = time.monotonic()
    db.server.restart_immediate()
    record.kill_points.append(
        f"postgres: crash-restart (-m immediate) at {time.monotonic() - driver.started:.1f} s, "
        f"back after {time.monotonic() - started:.1f} s"
    )


def kill_with_prepared_in_flight(driver: Driver, db: Database, deadline_s: float = 60) -> int:
    """SIGKILL the driver at a moment when this job has prepared, uncommitted transactions:
    freeze it (SIGSTOP) until PostgreSQL shows some, then kill the whole tree."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        time.sleep(0.05)
        os.kill(driver.pid, signal.SIGSTOP)
        in_flight = prepared_gids(db)
        if in_flight:
            kill_tree(driver.pid)
            driver.wait(60)
            return len(in_flight)
        os.kill(driver.pid, signal.SIGCONT)
    raise AssertionError(f"no prepared transaction seen in {deadline_s} s\n{driver.stderr()}")


def missing_ranges(db: Database, table: str, rows: int, limit: int = 20) -> list[tuple[int, int]]:
    """The first ``limit`` runs of ids 0..rows-1 absent from ``table`` (first, last): which
    epochs a loss hit, for the next engineer to find in the drivers' logs."""
    return [
        (int(first), int(last))
        for first, last in db.sql(
            f"SELECT min(g), max(g) FROM (SELECT g, g - row_number() OVER (ORDER BY g) AS run "
            f"FROM generate_series(0, {rows - 1}) g WHERE NOT EXISTS (SELECT 1 FROM {table} t WHERE t.id = g)) m "
            f"GROUP BY run ORDER BY 1 LIMIT {limit}"
        )
    ]
