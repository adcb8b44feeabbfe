"""Sinks get their own commit infos on restore, whatever the order of the job's sink blocks
(issue 47, defect 5). A job checkpoints with one set of sinks, its driver dies before the
checkpoint's output is committed, and the next run restores with the sink blocks reordered,
added, removed, or with another table: each ends with every id exactly once in each sink
that was there all along (a new sink: every id read after the checkpoint), or is refused in
one line naming the sink before anything changes. No Spark: the runner's claim and restore,
the driver's ``_metadata`` write and the real File sinks (tests/claimed_runs.py)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_seatunnel_ckpt.errors import ConfigError
from tests.claimed_runs import JOB_ID, ClaimedRun

ROWS = 30
#: ids the first run's checkpoint 1 covers; its driver dies before committing them
CUT = 12


def file_sink(root: Path, name: str) -> dict[str, Any]:
    return {"plugin_name": "File", "path": f"file://{root}/{name}/", "format": "jsonl"}


def local_file_sink(root: Path, name: str) -> dict[str, Any]:
    return {"plugin_name": "LocalFile", "path": f"{root}/{name}/", "file_format_type": "json"}


def committed(directory: Path) -> Counter[int]:
    """Every id in the committed (visible) files of ``directory``, counted."""
    ids: Counter[int] = Counter()
    for path in sorted(directory.glob("*")) if directory.exists() else ():
        if path.is_file() and not path.name.startswith(("_", ".")):
            ids.update(json.loads(line)["id"] for line in path.read_text().splitlines() if line)
    return ids


def once(ids: range) -> Counter[int]:
    return Counter(ids)


def checkpoint_then_die(root: Path, sinks: list[dict[str, Any]], **run: Any) -> None:
    """A first run reads ids 0..CUT-1, completes checkpoint 1 and dies before its commit."""
    tables = _tables(run)
    first = ClaimedRun(root, sinks, **run).claim()
    first.complete(1, first.epoch(1, range(CUT), **tables))


def finish(root: Path, sinks: list[dict[str, Any]], **run: Any) -> ClaimedRun:
    """The next run restores checkpoint 1 and reads the rest."""
    tables = _tables(run)
    second = ClaimedRun(root, sinks, **run).claim()
    assert second.run.restored_id == 1
    second.finish(2, second.epoch(2, range(CUT, ROWS), **tables))
    return second


def _tables(run: dict[str, Any]) -> dict[str, Any]:
    return {"tables": run.pop("tables")} if "tables" in run else {}


def staged(root: Path, name: str) -> list[str]:
    staging = root / name / "_staging" / JOB_ID
    return sorted(p.name for p in staging.rglob("*") if p.is_file()) if staging.exists() else []


def test_reordered_sinks_each_commit_their_own_output(tmp_path: Path) -> None:
    checkpoint_then_die(tmp_path, [file_sink(tmp_path, "a"), local_file_sink(tmp_path, "b")])
    second = finish(tmp_path, [local_file_sink(tmp_path, "b"), file_sink(tmp_path, "a")])
    assert committed(tmp_path / "a") == once(range(ROWS))
    assert committed(tmp_path / "b") == once(range(ROWS))
    assert not second.lines[1:], second.lines  # nothing dropped, nothing new


def test_an_added_sink_starts_after_the_checkpoint_and_the_others_stay_exact(tmp_path: Path) -> None:
    checkpoint_then_die(tmp_path, [file_sink(tmp_path, "a")])
    second = finish(tmp_path, [local_file_sink(tmp_path, "c"), file_sink(tmp_path, "a")])
    assert committed(tmp_path / "a") == once(range(ROWS))
    assert committed(tmp_path / "c") == once(range(CUT, ROWS))
    assert any(f"sink LocalFile (file://{tmp_path}/c) is new since checkpoint 1" in line for line in second.lines)


def test_a_removed_sink_is_refused_in_one_line_then_dropped_when_allowed(tmp_path: Path) -> None:
    checkpoint_then_die(tmp_path, [file_sink(tmp_path, "a"), local_file_sink(tmp_path, "b")])
    staged_before = staged(tmp_path, "a"), staged(tmp_path, "b")

    with pytest.raises(ConfigError) as refused:
        ClaimedRun(tmp_path, [file_sink(tmp_path, "a")]).claim()
    line = str(refused.value)
    assert "\n" not in line
    assert line.startswith(
        f"--restore: checkpoint 1 holds output of sink LocalFile (file://{tmp_path}/b) that this job no longer has; "
    )
    assert "--allow-non-restored-state" in line
    # before anything changed: the checkpoint, the staged output, nothing committed
    assert (staged(tmp_path, "a"), staged(tmp_path, "b")) == staged_before and all(staged_before)
    assert not committed(tmp_path / "a") and not committed(tmp_path / "b")

    second = finish(tmp_path, [file_sink(tmp_path, "a")], allow_non_restored_state=True)
    assert committed(tmp_path / "a") == once(range(ROWS))
    assert not committed(tmp_path / "b")  # its epoch was never committed, and is dropped
    assert any("LocalFile" in line and "dropped as --allow-non-restored-state asks" in line for line in second.lines)


def test_two_sinks_of_one_plugin_swapped_are_refused_in_one_line(tmp_path: Path) -> None:
    """Sinks of one plugin are named by their place among them (``Sink.instance``), and
    sinks name their resources by it (the Jdbc sink's transactions): swapped, neither is the
    sink it was, and the restore is refused rather than handing one's output to the other."""
    checkpoint_then_die(tmp_path, [file_sink(tmp_path, "a"), file_sink(tmp_path, "b")])
    with pytest.raises(ConfigError) as refused:
        ClaimedRun(tmp_path, [file_sink(tmp_path, "b"), file_sink(tmp_path, "a")]).claim()
    line = str(refused.value)
    assert "\n" not in line
    assert line.startswith(
        f"--restore: checkpoint 1 holds output of sink File (file://{tmp_path}/a) that this job no "
        f"longer has (this job's sink File 'sink[1]' (file://{tmp_path}/a) writes there too"
    )
    assert not committed(tmp_path / "a") and not committed(tmp_path / "b")
    finish(tmp_path, [file_sink(tmp_path, "a"), file_sink(tmp_path, "b")])  # as it was: exact
    assert committed(tmp_path / "a") == once(range(ROWS)) == committed(tmp_path / "b")


def _tables_source(*tables: str) -> dict[str, Any]:
    return {
        "plugin_name": "FakeSource",
        "tables_configs": [{"schema": {"table": t, "fields": {"id": "bigint"}}, "row.num": 1} for t in tables],
    }


def test_a_table_added_after_the_others_starts_after_the_checkpoint(tmp_path: Path) -> None:
    sink = local_file_sink(tmp_path, "out/${table_name}")
    checkpoint_then_die(tmp_path, [sink], source=_tables_source("db.t1", "db.t2"), tables=("db.t1", "db.t2"))
    finish(tmp_path, [sink], source=_tables_source("db.t1", "db.t2", "db.t3"), tables=("db.t1", "db.t2", "db.t3"))
    assert committed(tmp_path / "out/t1") == once(range(ROWS)) == committed(tmp_path / "out/t2")
    assert committed(tmp_path / "out/t3") == once(range(CUT, ROWS))


def test_a_table_added_before_the_others_is_refused_in_one_line(tmp_path: Path) -> None:
    sink = local_file_sink(tmp_path, "out/${table_name}")
    checkpoint_then_die(tmp_path, [sink], source=_tables_source("db.t1", "db.t2"), tables=("db.t1", "db.t2"))
    with pytest.raises(ConfigError) as refused:
        ClaimedRun(tmp_path, [sink], source=_tables_source("db.t0", "db.t1", "db.t2")).claim()
    line = str(refused.value)
    assert "\n" not in line and f"holds output of sink LocalFile (file://{tmp_path}/out/t1)" in line
    assert not any(committed(tmp_path / f"out/t{i}") for i in range(3))


def test_a_checkpoint_of_an_earlier_release_restores_by_place(tmp_path: Path) -> None:
    """Checkpoints written before sinks had identities name none: their commit infos are
    taken by place, as then."""
    sinks = [file_sink(tmp_path, "a"), local_file_sink(tmp_path, "b")]
    first = ClaimedRun(tmp_path, sinks).claim()
    first.run.sink_layout = ()  # what an earlier release recorded
    first.complete(1, first.epoch(1, range(CUT)))
    assert first.run.store.latest_restorable().sinks == ()
    finish(tmp_path, sinks)
    assert committed(tmp_path / "a") == once(range(ROWS)) == committed(tmp_path / "b")


def test_the_checkpoint_records_each_sinks_identity(tmp_path: Path) -> None:
    sinks = [file_sink(tmp_path, "a"), local_file_sink(tmp_path, "b"), file_sink(tmp_path, "c")]
    first = ClaimedRun(tmp_path, sinks).claim()
    first.complete(1, first.epoch(1, range(CUT)))
    assert first.run.store.latest_restorable().sinks == (
        {"plugin": "File", "instance": None, "datasets": [["file", f"{tmp_path}/a"]], "path": [0]},
        {"plugin": "LocalFile", "instance": None, "datasets": [["file", f"{tmp_path}/b"]], "path": [1]},
        {"plugin": "File", "instance": "sink[2]", "datasets": [["file", f"{tmp_path}/c"]], "path": [2]},
    )
