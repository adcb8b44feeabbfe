"""``--restore latest|none|ID``, ``--discard-existing`` and rescaling on restore."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.workspace import (
    Workspace,
    assert_exactly_once,
    committed_files,
    completed_ids,
    open_storage,
    read_output,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]


def _one_line_error(result, *needles: str) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected a one-line error\n{result.explain()}"
    assert "Traceback" not in result.stderr and lines[0].startswith("error: "), result.explain()
    for needle in needles:
        assert needle in lines[0], result.explain()
    return lines[0]


def test_restore_latest_none_discard_and_missing_id(workspace: Workspace) -> None:
    rows = 100_000
    config = workspace.write_config(interval=500)
    job = workspace.write_job({"plugin_name": "Sequence", "rows": rows, "rows_per_second": 50_000})

    # latest (the default) with nothing stored: starts fresh and says so.
    fresh = workspace.run(job, config, "modes", "--restore", "latest")
    assert fresh.returncode == 0, fresh.explain()
    assert re.search(r"job modes: no completed checkpoint in \S+; starting from the beginning", fresh.stderr), (
        fresh.explain()
    )
    first_files = committed_files(workspace.output)
    assert_exactly_once(read_output(f"file://{workspace.output}/"), rows)
    ids = completed_ids(config, "modes")

    # none over existing checkpoints: refused before Spark starts.
    refused = workspace.run(job, config, "modes", "--restore", "none")
    assert refused.returncode == 2, refused.explain()
    _one_line_error(refused, "already has checkpoints", "--discard-existing")
    assert completed_ids(config, "modes") == ids and committed_files(workspace.output) == first_files

    # A checkpoint id that does not exist: exit 2, one line naming it and what exists.
    missing = workspace.run(job, config, "modes", "--restore", "999")
    assert missing.returncode == 2, missing.explain()
    line = _one_line_error(missing, "999", "no completed checkpoint")
    assert str(ids[-1]) in line
    garbage = workspace.run(job, config, "modes", "--restore", "yesterday")
    assert garbage.returncode == 2, garbage.explain()
    _one_line_error(garbage, "--restore", "yesterday")

    # none + --discard-existing: starts over; the first run's committed output stays
    # (docs/jobs.md, "Starting over"), and the new run's output holds every id once.
    first_bytes = {name: (workspace.output / name).read_bytes() for name in first_files}
    again = workspace.run(job, config, "modes", "--restore", "none", "--discard-existing")
    assert again.returncode == 0, again.explain()
    assert "discarding existing checkpoints" in again.stderr
    now = committed_files(workspace.output)
    assert {name: (workspace.output / name).read_bytes() for name in first_files} == first_bytes
    assert_exactly_once(
        pa.concat_tables([pq.read_table(workspace.output / n) for n in now if n not in first_files]), rows
    )
    # The old checkpoints are gone, but ids keep growing: they are never reused.
    assert min(completed_ids(config, "modes")) > max(ids)


def test_restore_an_older_checkpoint_rolls_back_newer_output(workspace: Workspace) -> None:
    rows = 200_000
    config = workspace.write_config(interval=300, max_retained=50)
    job = workspace.write_job({"plugin_name": "Sequence", "rows": rows, "rows_per_second": 50_000, "batch_size": 2_000})
    first = workspace.run(job, config, "older")
    assert first.returncode == 0, first.explain()
    ids = completed_ids(config, "older")
    assert len(ids) >= 6, ids
    older = ids[len(ids) // 2]
    result = workspace.run(job, config, "older", "--restore", str(older))
    assert result.returncode == 0, result.explain()
    assert f"from checkpoint {older};" in result.stderr, result.explain()
    assert re.search(rf"removed \d+ committed file\(s\) newer than checkpoint {older}\b", result.stderr), (
        result.explain()
    )
    # The checkpoints of the abandoned timeline are deleted (restoring one later would
    # point at output that was just rolled back), and their ids are not reused.
    newer = ", ".join(str(i) for i in ids if i > older)
    assert f"discarding checkpoint(s) {newer}, newer than checkpoint {older}" in result.stderr, result.explain()
    after = completed_ids(config, "older")
    assert not [i for i in after if older < i <= ids[-1]], after
    assert max(after) > ids[-1]
    assert_exactly_once(read_output(f"file://{workspace.output}/"), rows)
    _check_history(config, "older", ids, older, after, rows)


def _check_history(config, job_id: str, first_ids: list[int], restored: int, after: list[int], rows: int) -> None:
    """The history keeps the checkpoints retention deleted, says where each attempt
    restored from, and matches every ``_metadata`` still in storage."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "airflow_provider_seatunnel_ckpt",
            "history",
            "--config",
            str(config),
            "--job-id",
            job_id,
            "--json",
            "--limit",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    history = json.loads(result.stdout)
    completed = [c for c in history["checkpoints"] if c["status"] == "completed"]
    first = [c for c in completed if c["attempt"] == 1]
    assert sorted(c["id"] for c in first) == first_ids  # 'discarded' from storage, kept here
    assert sum(c["rows"] for c in first) == rows  # the first attempt read everything, once
    assert [(r["attempt"], r["id"]) for r in history["restores"]] == [(2, restored), (1, None)]
    assert history["summary"]["latest_restore"]["id"] == restored
    storage = open_storage(config)
    for checkpoint_id in after:
        stats = storage.read_manifest(job_id, 1, checkpoint_id).statistics
        entry = next(c for c in completed if c["id"] == checkpoint_id)
        assert (entry["rows"], entry["state_bytes"], entry["trigger_ms"]) == (
            stats["rows"],
            stats["state_bytes"],
            stats["trigger_ms"],
        )
        assert [s["ack_ms"] for s in entry["subtasks"]] == [
            stats["subtasks"][str(i)]["ack_latency_ms"] for i in range(len(entry["subtasks"]))
        ]


@pytest.mark.parametrize(
    ("before", "after", "splits"),
    [pytest.param(2, 1, None, id="2-to-1"), pytest.param(1, 2, 4, id="1-to-2-splits-4")],
)
def test_rescale_on_restore(workspace: Workspace, before: int, after: int, splits: int | None) -> None:
    rows = 400_000
    source = {"plugin_name": "Sequence", "rows": rows, "rows_per_second": 50_000, "batch_size": 5_000}
    if splits:
        source["splits"] = splits
    config = workspace.write_config(interval=500)
    job_before = workspace.write_job(source, parallelism=before, file_name="before.yaml")
    job_after = workspace.write_job(source, parallelism=after, file_name="after.yaml")
    with workspace.start(job_before, config, "rescale") as first:
        assert first.wait_for(r"checkpoint 3 \(checkpoint\) completed", 120), first.stderr()
        first.kill()
    latest = max(completed_ids(config, "rescale"))
    result = workspace.run(job_after, config, "rescale")
    assert result.returncode == 0, result.explain()
    assert f"rescaling from {before} to {after} subtasks" in result.stderr, result.explain()
    assert re.search(
        rf"attempt 2: {after} subtasks, {splits or before} splits, from checkpoint {latest};", result.stderr
    ), result.explain()
    assert_exactly_once(read_output(f"file://{workspace.output}/"), rows)


def test_a_finished_job_with_delete_on_finish_leaves_nothing_in_storage(workspace: Workspace) -> None:
    """Issue 47, defect 6: a driver killed mid-run, then a run to the end. Everything the
    two attempts wrote (claims, plans, history, records, checkpoints) goes when the job
    finishes, and the output holds every id once."""
    rows = 60_000
    config = workspace.write_config(interval=300, **{"externalized-retention": "delete-on-finish"})
    job = workspace.write_job({"plugin_name": "Sequence", "rows": rows, "rows_per_second": 20_000})
    job_dir = workspace.checkpoints / "forget"
    with workspace.start(job, config, "forget") as driver:
        assert driver.wait_for(r"checkpoint \d+ \(checkpoint\) completed", 180), driver.stderr()
        driver.kill()
    assert {p.name for p in job_dir.iterdir()} >= {
        "fence",
        "plans",
        "history",
        "attempts",
        "heartbeat",
        "job.json",
        "pipeline-1",
    }
    result = workspace.run(job, config, "forget")
    assert result.returncode == 0, result.explain()
    assert re.search(
        r"job forget: finished; deleted from \S+ \(externalized-retention: delete-on-finish\)", result.stderr
    ), result.explain()
    assert not job_dir.exists(), sorted(str(p.relative_to(job_dir)) for p in job_dir.rglob("*"))
    assert_exactly_once(read_output(f"file://{workspace.output}/"), rows)
