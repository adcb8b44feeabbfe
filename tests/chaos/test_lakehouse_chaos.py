"""Chaos, exactly-once, into lakehouse tables: Sequence -> Iceberg (sqlite catalog) and
Sequence -> Delta, data on moto's S3 (Iceberg) and local disk (Delta), parallelism 2, under
executor-worker kills and driver SIGKILLs with reruns (``--restore latest``). Every id is
counted with the format's own library and with DuckDB; every commit of the job is one
completed checkpoint, none empty."""

from __future__ import annotations

import random
import re
import time
from typing import Any

import pyarrow as pa
import pytest

from tests.integration.lakehouse.conftest import Warehouse, duckdb_lake, local_warehouse, warehouse  # noqa: F401 - fixtures
from tests.integration.lakehouse.formats import FORMATS
from tests.support.chaos import ChaosRecord, chaos_runs
from tests.support.workspace import Workspace, completed_ids, read_output, tally

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

ROWS = 400_000
THROTTLE = {"plugin_name": "Python", "function": "tests.chaos.throttle:rows_30k"}


# Each format once, on one storage each: the kills and the protocol are the deterministic
# simulation's (tests/simulation); the table commits on local disk and on S3 are each
# covered by one format here and by both in tests/integration/lakehouse.
@pytest.mark.parametrize(("table_format", "warehouse"), [("iceberg", "s3"), ("delta", "local")], indirect=["warehouse"])
def test_sequence_to_a_table_under_kills(
    workspace: Workspace, warehouse: Warehouse, table_format: str, chaos: tuple[random.Random, ChaosRecord]
) -> None:
    from airflow_provider_seatunnel_ckpt.connectors import load_sink

    rng, record = chaos
    started = time.monotonic()
    job_id = f"chaos-{table_format}"
    adapter = FORMATS[table_format]
    sink_options = adapter.options(warehouse, table="chaos")
    job = workspace.write_job(
        {"plugin_name": "Sequence", "rows": ROWS, "rows_per_second": 40_000, "batch_size": 4_000}, sink_options
    )
    config = workspace.write_config(interval=500, tolerable_failure=10, max_retained=1000)
    logs = chaos_runs(workspace, record, rng, job, config, job_id)
    record.elapsed_s = time.monotonic() - started

    sink = load_sink(sink_options)
    result = tally(pa.array(adapter.ids(sink), pa.int64()), ROWS)
    record.rows, record.lost, record.duplicated = result.rows, result.lost, result.duplicated
    assert result.exactly_once, f"seed {record.seed}: {result}; kill points: {record.kill_points}"
    duck = duckdb_lake(warehouse.storage)
    assert duck.execute(
        f"SELECT count(*), count(DISTINCT id), min(id), max(id) FROM {adapter.duckdb_scan(sink)}"
    ).fetchall() == [(ROWS, ROWS, 0, ROWS - 1)]
    if table_format == "iceberg":  # no empty snapshots (a Delta commit of ours always has add actions)
        ours = [s.summary for s in sink.load_table().snapshots() if s.summary.get("seatunnel.job-id") == job_id]
        assert all(int(summary["added-records"]) > 0 for summary in ours)
    # at most one commit per completed checkpoint, labelled with the newest epoch in it:
    # distinct and increasing (a commit of checkpoint n holds epoch n-1 alone when
    # checkpoint n-1 was declined and epoch n wrote nothing new)
    checkpoints = [int(c) for c in adapter.commits(sink, job_id)]
    completed = set(completed_ids(config, job_id)) | _completed_in(logs)
    assert checkpoints == sorted(set(checkpoints)) and checkpoints, checkpoints
    assert len(checkpoints) <= len(completed) and max(checkpoints) <= max(completed), (checkpoints, completed)
    assert len(record.kill_points) >= 4, record.kill_points


def _completed_in(logs: list[str]) -> set[int]:
    """Checkpoint ids the drivers reported completed (retention may have deleted them)."""
    return {int(m) for text in logs for m in re.findall(r"checkpoint (\d+) \((?:checkpoint|final)\) completed", text)}


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
