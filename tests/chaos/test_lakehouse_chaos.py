"""Chaos, exactly-once, at the lakehouse tables' edges that the job with every sink
(test_every_sink_chaos.py, where Iceberg and Delta are sinks under kills) does not aim
at: a driver SIGKILLed right after a table commit, whose restore replays it as a skip,
and Iceberg and Delta as sources under executor-worker and driver kills, reading one
snapshot."""

from __future__ import annotations

import random
import time
from typing import Any

import pyarrow as pa
import pytest

from tests.integration.lakehouse.conftest import Warehouse, local_warehouse  # noqa: F401 - fixture
from tests.integration.lakehouse.formats import FORMATS
from tests.support.chaos import ChaosRecord, chaos_runs
from tests.support.workspace import Workspace, read_output, tally

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

THROTTLE = {"plugin_name": "Python", "function": "tests.chaos.throttle:rows_30k"}


@pytest.mark.parametrize("table_format", ["iceberg", "delta"])
def test_a_kill_right_after_the_table_commit_is_replayed_as_a_skip(
    workspace: Workspace, local_warehouse: Warehouse, table_format: str
) -> None:
    """SIGKILL the driver the moment a commit of the job appears in the table (before its
    next checkpoint can complete): the restored run replays that checkpoint's commit, finds
    it in the table and skips it. The kill waits for the second commit: the first checkpoint
    can complete late (Spark starting) and its successor follow it closely, so a kill on the
    first commit may land after the next checkpoint completed, which the restore would then
    commit afresh."""
    from airflow_provider_seatunnel_ckpt.connectors import load_sink

    rows = 200_000
    adapter = FORMATS[table_format]
    options = adapter.options(local_warehouse, table="replay")
    job = workspace.write_job({"plugin_name": "Sequence", "rows": rows, "rows_per_second": 20_000}, options)
    config = workspace.write_config(interval=2000, max_retained=100)
    sink = load_sink(options)

    def commits() -> list[str]:
        return adapter.commits(sink, "replay") if sink.load_table() is not None else []

    with workspace.start(job, config, "replay") as driver:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and driver.poll() is None and len(commits()) < 2:
            time.sleep(0.01)
        driver.kill()
        committed = commits()[-1]
    result = workspace.run(job, config, "replay", "--restore", "latest")
    assert result.returncode == 0, result.explain()
    assert f"checkpoint {committed} of job replay is already in" in result.stderr, result.explain()
    assert tally(pa.array(adapter.ids(sink), pa.int64()), rows).exactly_once
    checkpoints = commits()
    assert len(checkpoints) == len(set(checkpoints)) and committed in checkpoints


@pytest.mark.parametrize("source_format, sink_kind", [("iceberg", "file"), ("delta", "iceberg")])
def test_a_table_source_under_kills_reads_one_snapshot(
    workspace: Workspace,
    local_warehouse: Warehouse,
    source_format: str,
    sink_kind: str,
    chaos: tuple[random.Random, ChaosRecord],
) -> None:
    """Iceberg -> File and Delta -> Iceberg under worker and driver kills; rows committed
    to the source table while the job runs are not read (its splits name one snapshot)."""
    from airflow_provider_seatunnel_ckpt.connectors import load_sink

    rng, record = chaos
    started = time.monotonic()
    # 30k rows/s through the throttle: 20 s of work, so run 1's kills and the later
    # runs' driver kills all land before the job can finish
    rows, commits = 600_000, 6
    adapter = FORMATS[source_format]
    source_sink = load_sink(adapter.options(local_warehouse, table="source"))
    committer = source_sink.create_committer("fill")
    step = rows // commits
    for checkpoint in range(1, commits + 1):  # several commits of two files: several splits
        infos = []
        for subtask in range(2):
            writer = source_sink.create_writer("fill", subtask, 0)
            low = (checkpoint - 1) * step + subtask * step // 2
            writer.write(pa.record_batch([pa.array(range(low, low + step // 2), pa.int64())], names=["id"]))
            infos.append(writer.prepare_commit(checkpoint))
        committer.commit(infos)
    source = {k: v for k, v in adapter.options(local_warehouse, table="source").items()}
    sink = FORMATS["iceberg"].options(local_warehouse, table="copy") if sink_kind == "iceberg" else None
    job = workspace.write_job(source, sink, transforms=[THROTTLE], env={"batch_size": 5_000})
    config = workspace.write_config(interval=500, tolerable_failure=10)

    def late_commit(driver: Any) -> None:  # rows the pinned snapshot does not have
        writer = source_sink.create_writer("late", 0, 0)
        writer.write(pa.record_batch([pa.array(range(1_000_000, 1_010_000), pa.int64())], names=["id"]))
        source_sink.create_committer("late").commit([writer.prepare_commit(1)])
        record.notes.append("10,000 rows committed to the source table while the job ran")

    chaos_runs(workspace, record, rng, job, config, f"chaos-{source_format}-source", disrupt=late_commit)
    record.elapsed_s = time.monotonic() - started
    if sink_kind == "file":
        ids = read_output(f"file://{workspace.output}/", columns=["id"]).column("id").combine_chunks()
    else:
        ids = pa.array(FORMATS["iceberg"].ids(load_sink(sink)), pa.int64())
    result = tally(ids, rows)
    record.rows, record.lost, record.duplicated = result.rows, result.lost, result.duplicated
    assert result.exactly_once, f"seed {record.seed}: {result}; kill points: {record.kill_points}"
    assert len(record.kill_points) >= 4, record.kill_points
