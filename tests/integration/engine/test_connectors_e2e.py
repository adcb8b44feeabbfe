"""Every built-in connector end to end in ``local[2]``, through ``seatunnel-ckpt run``.

Each job runs as a user runs it (a subprocess with a seatunnel.yaml and a job file) and
the committed output is read back and counted id by id.
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.workspace import (
    Workspace,
    assert_exactly_once,
    committed_files,
    completed_ids,
    read_output,
    without_venv_on_path,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

ADD_BUCKET = "airflow_provider_seatunnel_ckpt.examples.transforms:add_bucket"
PART_NAME = re.compile(r"part-[0-9a-f]{8}-\d{5}-\d+-\d{10}-\d+\.(parquet|csv|jsonl)")


def finished(result) -> int:
    """The final checkpoint id the driver reported; asserts a clean exit."""
    assert result.returncode == 0, result.explain()
    match = re.search(r"job \S+ finished: final checkpoint (\d+)", result.stderr)
    assert match, result.explain()
    return int(match.group(1))


def test_sequence_to_parquet(workspace: Workspace) -> None:
    """Also run as a user who calls .venv/bin/seatunnel-ckpt without activating the venv:
    the executors' Python workers must still be the driver's interpreter."""
    rows = 200_000
    config = workspace.write_config(interval=500)
    job = workspace.write_job({"plugin_name": "Sequence", "rows": rows, "rows_per_second": 60_000})
    result = workspace.run(job, config, "seq", env=without_venv_on_path(workspace.env))
    final = finished(result)
    completed = re.findall(r"checkpoint (\d+) \((checkpoint|final)\) completed", result.stderr)
    assert len(completed) >= 3, f"expected periodic checkpoints before the final one\n{result.explain()}"
    assert completed[-1] == (str(final), "final")
    assert_exactly_once(read_output(f"file://{workspace.output}/"), rows)
    # Only committed files are visible; every one has the documented name.
    names = committed_files(workspace.output)
    assert names and all(PART_NAME.fullmatch(n) for n in names), names
    assert not list((workspace.output / "_staging").rglob("*.parquet")), "staged files left after the job finished"
    assert final in completed_ids(config, "seq")


def _write_inputs(directory, fmt: str, files: int, rows_per_file: int) -> int:
    """``files`` input files of ``fmt`` with ids 0..files*rows_per_file-1 and a text column."""
    import json

    import pyarrow.csv as pacsv

    directory.mkdir(parents=True)
    next_id = 0
    for index in range(files):
        ids = np.arange(next_id, next_id + rows_per_file, dtype=np.int64)
        next_id += rows_per_file
        table = pa.table({"id": ids, "name": [f"row-{i}" for i in ids.tolist()], "score": (ids % 97) * 0.5})
        path = directory / f"input-{index:02d}.{fmt}"
        if fmt == "parquet":
            pq.write_table(table, path, row_group_size=max(1, rows_per_file // 3))
        elif fmt == "csv":
            pacsv.write_csv(table, path)
        else:
            with open(path, "w") as f:
                for row in table.to_pylist():
                    f.write(json.dumps(row) + "\n")
    # Files Spark and pyarrow skip must be skipped by the File source too.
    (directory / "_SUCCESS").write_text("")
    (directory / ".input-00.crc").write_text("garbage")
    return next_id


@pytest.mark.parametrize(("in_fmt", "out_fmt"), [("parquet", "csv"), ("csv", "jsonl"), ("jsonl", "parquet")])
def test_file_source_to_file_sink(workspace: Workspace, in_fmt: str, out_fmt: str) -> None:
    """Every input format and every output format once; splits = files (5 over 2 subtasks)."""
    inputs = workspace.root / "input"
    rows = _write_inputs(inputs, in_fmt, files=5, rows_per_file=20_000)
    config = workspace.write_config(interval=500)
    job = workspace.write_job(
        {"plugin_name": "File", "path": f"file://{inputs}/", "format": in_fmt, "batch_size": 4_000},
        {"plugin_name": "File", "path": f"file://{workspace.output}/", "format": out_fmt},
    )
    result = workspace.run(job, config, f"files-{in_fmt}-{out_fmt}")
    finished(result)
    assert "5 splits" in result.stderr, result.explain()
    names = committed_files(workspace.output)
    assert names and all(n.endswith(f".{out_fmt}") and PART_NAME.fullmatch(n) for n in names), names
    table = read_output(f"file://{workspace.output}/", out_fmt)
    assert_exactly_once(table, rows)
    # The other columns came through unchanged.
    by_id = table.sort_by("id")
    ids = by_id.column("id").to_numpy()
    assert by_id.column("name").to_pylist()[:3] == ["row-0", "row-1", "row-2"]
    assert np.allclose(by_id.column("score").to_numpy(), (ids % 97) * 0.5)


@pytest.mark.parametrize("fmt", ["parquet", "csv", "jsonl"])
def test_file_source_resumes_inside_files(workspace: Workspace, fmt: str) -> None:
    """Killed mid-file and restored: a reader resumes at its row offset (parquet skips
    whole row groups by the footer, csv/jsonl re-read and drop), exactly once."""
    inputs = workspace.root / "input"
    rows = _write_inputs(inputs, fmt, files=4, rows_per_file=30_000)
    config = workspace.write_config(interval=400)
    job = workspace.write_job(
        {"plugin_name": "File", "path": f"file://{inputs}/", "batch_size": 1_000},
        {"plugin_name": "File", "path": f"file://{workspace.output}/", "format": "parquet"},
        transforms=[{"plugin_name": "Python", "function": "tests.integration.engine.slow_transforms:pause"}],
    )
    with workspace.start(job, config, f"resume-{fmt}") as first:
        assert first.wait_for(r"checkpoint 3 \(checkpoint\) completed", 120), first.stderr()
        first.kill()
    latest = max(completed_ids(config, f"resume-{fmt}"))
    # The restored position of the first file is inside it (whichever subtask it was dealt to).
    import json

    from airflow_provider_seatunnel_ckpt.engine.split_plan import load_plan
    from tests.support.workspace import open_storage

    storage = open_storage(config)
    manifest = storage.read_manifest(f"resume-{fmt}", 1, latest)
    assert load_plan(storage, f"resume-{fmt}", manifest.properties)[0][0] == f"input-00.{fmt}"
    states = [json.loads(handle.inline)["splits"] for handle in manifest.subtask_states.values()]
    [state] = [splits[f"input-00.{fmt}"] for splits in states if f"input-00.{fmt}" in splits]
    assert not state["finished"] and 0 < state["position"] < 30_000, state
    result = workspace.run(job, config, f"resume-{fmt}")
    finished(result)
    assert f"from checkpoint {latest};" in result.stderr, result.explain()
    table = read_output(f"file://{workspace.output}/")
    assert_exactly_once(table, rows)
    assert sorted(table.column("name").to_pylist()) == sorted(f"row-{i}" for i in range(rows))


def _expected_counts(ids: np.ndarray, rows: int, splits: int, buckets: int = 16) -> np.ndarray:
    """CountByKey's running count for each id: rows of the same split so far with its bucket."""
    bounds = np.array([rows * i // splits for i in range(splits)], dtype=np.int64)
    starts = bounds[np.searchsorted(bounds, ids, side="right") - 1]
    bucket = ids % buckets
    first = starts + (bucket - starts) % buckets
    return (ids - first) // buckets + 1


def test_python_transform_and_count_by_key_survive_a_driver_kill(workspace: Workspace) -> None:
    """Python (add_bucket) -> CountByKey (stateful): counts are consistent across a restore."""
    rows = 600_000
    config = workspace.write_config(interval=500)
    job = workspace.write_job(
        {"plugin_name": "Sequence", "rows": rows, "rows_per_second": 60_000, "batch_size": 5_000},
        transforms=[{"plugin_name": "Python", "function": ADD_BUCKET}, {"plugin_name": "CountByKey", "key": "bucket"}],
    )
    with workspace.start(job, config, "counts") as first:
        assert first.wait_for(r"checkpoint 3 \(checkpoint\) completed", 120), first.stderr()
        first.kill()
    latest = max(completed_ids(config, "counts"))
    result = workspace.run(job, config, "counts")
    finished(result)
    assert f"from checkpoint {latest}" in result.stderr, result.explain()
    table = read_output(f"file://{workspace.output}/", columns=["id", "bucket", "count"])
    assert table.schema.names == ["id", "bucket", "count"]
    assert_exactly_once(table, rows)
    ids = table.column("id").to_numpy()
    assert np.array_equal(table.column("bucket").to_numpy(), ids % 16)
    counts = table.column("count").to_numpy()
    expected = _expected_counts(ids, rows, splits=2)
    bad = np.flatnonzero(counts != expected)
    assert bad.size == 0, (
        f"{bad.size} rows have a wrong running count, e.g. id {ids[bad[0]]}: {counts[bad[0]]} != {expected[bad[0]]}"
    )


def test_filter_rename_select(workspace: Workspace) -> None:
    rows = 90_000
    config = workspace.write_config(interval=500)
    job = workspace.write_job(
        {"plugin_name": "Sequence", "rows": rows, "payload_bytes": 8, "batch_size": 7_000},
        transforms=[
            {"plugin_name": "Python", "function": ADD_BUCKET},
            {"plugin_name": "Filter", "condition": "id % 3 == 0"},
            {"plugin_name": "Rename", "mapping": {"bucket": "b", "id": "key"}},
            {"plugin_name": "Select", "fields": ["b", "key"]},
        ],
    )
    finished(workspace.run(job, config, "columns"))
    table = read_output(f"file://{workspace.output}/")
    assert table.schema.names == ["b", "key"]
    assert_exactly_once(table, range(0, rows, 3), column="key")
    assert np.array_equal(table.column("b").to_numpy(), table.column("key").to_numpy() % 16)


def test_console_sink_prints_on_the_drivers_stdout(workspace: Workspace) -> None:
    """As with Structured Streaming's console sink, rows go to the driver's stdout and
    progress to its stderr (executors' stdout would end up on the JVM's stderr)."""
    config = workspace.write_config()
    job = workspace.write_job(
        {"plugin_name": "Sequence", "rows": 1_000, "batch_size": 250}, {"plugin_name": "Console", "limit": 2}
    )
    result = workspace.run(job, config, "console")
    finished(result)
    blocks = re.findall(
        r"^\[Console subtask (\d)\] checkpoint (\d+): ([\d,]+) rows? in (\d+) batch(?:es)? "
        r"\(total ([\d,]+)\)$",
        result.stdout,
        re.MULTILINE,
    )
    assert blocks, result.explain()
    # every row once, over the subtasks the two splits were dealt to (one may read both)
    assert sum(int(b[2].replace(",", "")) for b in blocks) == 1_000, result.explain()
    for subtask in {b[0] for b in blocks}:
        mine = [b for b in blocks if b[0] == subtask]
        assert int(mine[-1][4].replace(",", "")) == sum(int(b[2].replace(",", "")) for b in mine), result.explain()
        assert len({b[1] for b in mine}) == len(mine), result.explain()
    # the first rows of the first epoch that read split 0 (ids 0..)
    for first_id in (0, 1):
        assert f"  {{'id': {first_id}}}" in result.stdout.splitlines(), result.explain()
    assert "[Console" not in result.stderr and "{'id':" not in result.stderr, result.explain()
    assert "checkpoint" in result.stderr and "completed in" not in result.stdout, result.explain()


def test_a_checkpoint_does_not_wait_for_fakesources_pause_between_splits(workspace: Workspace) -> None:
    """FakeSource reads a split every ``split.read-interval`` (2 s here); checkpoints come
    every 300 ms, most of them while the readers pause. A barrier cuts the pause short
    (ReaderContext.pause): checkpoints keep their interval through the pauses and take a
    few ms of work (when the reader slept through its pause only about one checkpoint
    completed per pause, each waiting for most of it), and every row lands once. The
    median, not the slowest: a loaded machine may hold up any one checkpoint."""
    config = workspace.write_config(interval=300)
    source = {
        "plugin_name": "FakeSource",
        "row.num": 400,
        "split.num": 4,
        "split.read-interval": 2000,
        "schema": {"fields": {"id": "bigint", "name": "string"}},
    }
    result = workspace.run(workspace.write_job(source), config, "paced")
    finished(result)
    durations = [int(ms) for ms in re.findall(r"checkpoint \d+ \(checkpoint\) completed in (\d+) ms", result.stderr)]
    # 3 pauses of 2 s: about 20 checkpoints at 300 ms on a quiet machine, 9 seen under CI
    # load; about 3 when each barrier waited for a pause
    assert len(durations) >= 6, f"checkpoints waited for the readers' pauses: {durations}\n{result.explain()}"
    assert sorted(durations)[len(durations) // 2] < 500, f"checkpoints waited for the readers' pauses: {durations}"
    # FakeSource's values are its own (random, repeatable): rows are counted, and each
    # (split, row) once, by the generated ids, which repeat nowhere in 800 bigints
    ids = read_output(f"file://{workspace.output}/").column("id").to_pylist()
    assert len(ids) == 800 and len(set(ids)) == 800
