"""Splits dealt on request (issue 51, item 1; engine/split_enumerator.py), on real Spark:
one file twenty times larger than the nine others no longer holds up a fixed share, and
every checkpoint records the pool of splits not dealt yet."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.workspace import Workspace, assert_exactly_once, completed_ids, open_storage, read_output

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

SMALL = 10_000
BIG = 20 * SMALL


def _inputs(root: Path) -> int:
    """``a-big.parquet`` (plan index 0: listed first) and nine small files; the ids in all."""
    root.mkdir()
    start = 0
    for name, rows in [("a-big", BIG), *((f"b-{i}", SMALL) for i in range(9))]:
        pq.write_table(pa.table({"id": pa.array(range(start, start + rows), pa.int64())}), root / f"{name}.parquet")
        start += rows
    return start


def test_a_large_file_does_not_hold_up_a_fixed_share(workspace: Workspace) -> None:
    total = _inputs(workspace.root / "inputs")
    # a batch of SMALL rows, each taking 0.1 s (slow_transforms.pause): reading time, not
    # a worker's start, decides who asks when (the big file: 2 s, a small one: 0.1 s)
    source = {
        "plugin_name": "File",
        "path": f"file://{workspace.root}/inputs/",
        "format": "parquet",
        "batch_size": SMALL,
    }
    config = workspace.write_config(interval=300)
    pause = {"plugin_name": "Python", "function": "tests.integration.engine.slow_transforms:pause"}
    job = workspace.write_job(source, transforms=[pause], parallelism=2)
    result = workspace.run(job, config, "skewed")
    assert result.returncode == 0, result.explain()
    assert_exactly_once(read_output(f"file://{workspace.output}/"), total)

    rows_by_subtask = {0: 0, 1: 0}
    for path in workspace.output.rglob("part-*.parquet"):
        subtask = int(re.match(r"part-[^-]+-(\d{5})-", path.name).group(1))
        rows_by_subtask[subtask] += pq.read_metadata(path).num_rows
    # Round-robin shares would give the big file's subtask 4 small files besides it (24
    # units against 5). Dealt on request it holds at most the one it asked for ahead
    # while the other reads the rest.
    busiest = max(rows_by_subtask.values())
    assert busiest <= BIG + 2 * SMALL, rows_by_subtask
    assert min(rows_by_subtask.values()) >= 7 * SMALL, rows_by_subtask

    # every checkpoint's _metadata records the pool not dealt at its barrier; the final
    # one's is empty
    storage = open_storage(config)
    ids = completed_ids(config, "skewed")
    pools = [storage.read_manifest("skewed", 1, cid).properties["unassigned_splits"] for cid in ids]
    assert pools[-1] == [], pools
    assert all(isinstance(pool, list) for pool in pools), pools
