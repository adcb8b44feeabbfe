"""A job's sink blocks changed between a driver killed mid-run and its rerun, under real
Spark (issue 47, defect 5): a sink removed is refused in one line (exit 2) before anything
changes; the two sinks listed the other way round each get their own output back, and the
job ends with every id exactly once in each. Taken by place, the File sink was handed the
LocalFile sink's staged files, and the rerun failed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.workspace import Workspace, assert_exactly_once, committed_files, completed_ids, read_output

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]

ROWS = 120_000
JOB_ID = "identity"


def _job(workspace: Workspace, name: str, sinks: list[dict[str, Any]]) -> Path:
    doc = {
        "env": {"job.name": JOB_ID, "parallelism": 2},
        "source": [{"plugin_name": "Sequence", "rows": ROWS, "rows_per_second": 20_000, "plugin_output": "ids"}],
        "sink": [{**sink, "plugin_input": "ids"} for sink in sinks],
    }
    path = workspace.root / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_sinks_reordered_after_a_kill_each_end_exact_and_one_removed_is_refused(workspace: Workspace) -> None:
    parquet = {"plugin_name": "File", "path": f"file://{workspace.root}/a/", "format": "parquet"}
    json_files = {"plugin_name": "LocalFile", "path": f"{workspace.root}/b/", "file_format_type": "json"}
    config = workspace.write_config(interval=500)

    with workspace.start(_job(workspace, "both", [parquet, json_files]), config, JOB_ID) as first:
        assert first.wait_for(r"checkpoint 3 \(checkpoint\) completed", 120), first.stderr()
        first.kill()  # mid-run, possibly between a checkpoint and its commit
    checkpoints = completed_ids(config, JOB_ID)
    committed = committed_files(workspace.root / "a"), committed_files(workspace.root / "b")

    removed = workspace.run(_job(workspace, "removed", [parquet]), config, JOB_ID)
    assert removed.returncode == 2, removed.explain()
    # when the kill caught a checkpoint in flight, the rerun's claim fences it first and says
    # so on a line of its own (engine/claim.py); the refusal is then the one other line
    lines = [
        line
        for line in removed.stderr.splitlines()
        if line.strip() and not line.startswith(f"job {JOB_ID}: fenced checkpoint ")
    ]
    assert len(lines) == 1 and "Traceback" not in removed.stderr, removed.explain()
    assert lines[0].startswith(
        f"error: --restore: checkpoint {checkpoints[-1]} holds output of sink LocalFile "
        f"(file://{workspace.root}/b) that this job no longer has; "
    ), removed.explain()
    assert "--allow-non-restored-state" in lines[0]
    assert completed_ids(config, JOB_ID) == checkpoints
    assert (committed_files(workspace.root / "a"), committed_files(workspace.root / "b")) == committed

    reordered = workspace.run(_job(workspace, "reordered", [json_files, parquet]), config, JOB_ID)
    assert reordered.returncode == 0, reordered.explain()
    assert f"from checkpoint {checkpoints[-1]};" in reordered.stderr, reordered.explain()
    assert_exactly_once(read_output(f"file://{workspace.root}/a/"), ROWS)
    assert_exactly_once(read_output(f"file://{workspace.root}/b/", "jsonl"), ROWS)
