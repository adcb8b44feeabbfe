"""Chaos, exactly-once, into lakehouse tables: Sequence -> Iceberg (sqlite catalog, data
on local disk and on moto's S3), parallelism 2, under executor-worker kills and driver
SIGKILLs with reruns (``--restore latest``). Every id is counted with pyiceberg's scan
and with DuckDB; every snapshot of the job is one completed checkpoint, none empty."""

from __future__ import annotations

import random
import re
import time
from typing import Any

import pytest

from tests.integration.engine.support import Workspace, completed_ids, tally
from tests.integration.lakehouse.conftest import Warehouse, duckdb_iceberg, warehouse  # noqa: F401 - fixture

from .conftest import ChaosRecord
from .runs import chaos_runs

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

ROWS = 400_000


def test_sequence_to_iceberg_under_kills(workspace: Workspace, warehouse: Warehouse,  # noqa: F811
                                         chaos: tuple[random.Random, ChaosRecord]) -> None:
    from airflow_provider_seatunnel_ckpt.engine.connectors import load_sink

    rng, record = chaos
    started = time.monotonic()
    sink_options = warehouse.iceberg(table="chaos")
    job = workspace.write_job({"plugin_name": "Sequence", "rows": ROWS, "rows_per_second": 40_000, "batch_size": 4_000},
                              sink_options)
    config = workspace.write_config(interval=500, tolerable_failure=10, max_retained=1000)
    logs = chaos_runs(workspace, record, rng, job, config, "chaos-iceberg")
    record.elapsed_s = time.monotonic() - started

    table = load_sink(sink_options).load_table()
    result = tally(table.scan().to_arrow().column("id").combine_chunks(), ROWS)
    record.rows, record.lost, record.duplicated = result.rows, result.lost, result.duplicated
    assert result.exactly_once, f"seed {record.seed}: {result}; kill points: {record.kill_points}"
    duck = duckdb_iceberg(table.metadata_location, warehouse.storage)
    assert duck.execute(f"SELECT count(*), count(DISTINCT id), min(id), max(id) FROM iceberg_scan('{table.metadata_location}')"
                        ).fetchall() == [(ROWS, ROWS, 0, ROWS - 1)]

    # one snapshot per completed checkpoint that had rows: distinct, completed, none empty
    ours = [s for s in table.snapshots() if s.summary.get("seatunnel.job-id") == "chaos-iceberg"]
    checkpoints = [int(s.summary["seatunnel.checkpoint-id"]) for s in ours]
    assert checkpoints == sorted(set(checkpoints)), checkpoints
    assert set(checkpoints) <= set(completed_ids(config, "chaos-iceberg")) | _completed_in(logs)
    assert all(int(s.summary["added-records"]) > 0 for s in ours)
    assert len(record.kill_points) >= 4, record.kill_points


def _completed_in(logs: list[str]) -> set[int]:
    """Checkpoint ids the drivers reported completed (retention may have deleted them)."""
    return {int(m) for text in logs for m in re.findall(r"checkpoint (\d+) \((?:checkpoint|final)\) completed", text)}


def test_a_kill_right_after_the_table_commit_is_replayed_as_a_skip(workspace: Workspace, tmp_path: Any) -> None:
    """SIGKILL the driver the moment a snapshot of the job appears in the table (before its
    next checkpoint can complete): the restored run replays that checkpoint's commit, finds
    it in the table and skips it."""
    from airflow_provider_seatunnel_ckpt.engine.connectors import load_sink
    from tests.integration.lakehouse.conftest import Warehouse as Lake

    rows = 200_000
    options = Lake("local", f"file://{tmp_path}/warehouse", tmp_path / "catalog.db", {}).iceberg(table="replay")
    job = workspace.write_job({"plugin_name": "Sequence", "rows": rows, "rows_per_second": 20_000}, options)
    config = workspace.write_config(interval=2000, max_retained=100)
    sink = load_sink(options)
    with workspace.start(job, config, "replay") as driver:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and driver.poll() is None:
            table = sink.load_table()
            if table is not None and table.current_snapshot() is not None:
                driver.kill()
                break
            time.sleep(0.01)
        committed = sink.load_table().current_snapshot().summary["seatunnel.checkpoint-id"]
    result = workspace.run(job, config, "replay", "--restore", "latest")
    assert result.returncode == 0, result.explain()
    assert f"checkpoint {committed} of job replay is already in" in result.stderr, result.explain()
    table = sink.load_table()
    ids = table.scan().to_arrow().column("id")
    assert tally(ids.combine_chunks(), rows).exactly_once
    checkpoints = [s.summary["seatunnel.checkpoint-id"] for s in table.snapshots()]
    assert len(checkpoints) == len(set(checkpoints)) and committed in checkpoints
