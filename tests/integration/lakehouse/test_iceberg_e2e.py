"""Iceberg jobs end to end with real Spark (``seatunnel-ckpt run``): a copy with one
snapshot per checkpoint, a restore older than the table's newest snapshot refused before
anything changes, and bad input refused as one line (before Spark starts where it can be
known then; before any data file is written otherwise)."""

from __future__ import annotations

import time

import pytest

from airflow_provider_seatunnel_ckpt.connectors import load_sink
from tests.support.workspace import Workspace, completed_ids

from .conftest import Warehouse, local_warehouse  # noqa: F401 - fixture

pytestmark = [pytest.mark.slow, pytest.mark.timeout(500)]


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error: ")]


def test_copy_then_restore_older_is_refused(workspace: Workspace, local_warehouse: Warehouse) -> None:
    rows = 200_000
    sink = local_warehouse.iceberg(table="events", partition_by=["bucket(4, id)"])
    job = workspace.write_job({"plugin_name": "Sequence", "rows": rows, "rows_per_second": 100_000}, sink)
    config = workspace.write_config(interval=300, max_retained=100)
    result = workspace.run(job, config, "ice")
    assert result.returncode == 0, result.explain()
    table = load_sink(sink).load_table()
    ids = table.scan().to_arrow().column("id").to_pylist()
    assert len(ids) == rows and len(set(ids)) == rows
    ours = [s for s in table.snapshots() if s.summary.get("seatunnel.job-id") == "ice"]
    assert len(ours) >= 3, "expected several periodic checkpoints to commit"
    completed = completed_ids(config, "ice")
    assert {int(s.summary["seatunnel.checkpoint-id"]) for s in ours} <= set(completed)

    older = completed[len(completed) // 2]
    before = table.metadata_location
    refused = workspace.run(job, config, "ice", "--restore", str(older))
    assert refused.returncode != 0, refused.explain()
    lines = _error_lines(refused.stderr)
    assert len(lines) == 1 and "a table commit cannot be undone" in lines[0] and f"checkpoint {older}" in lines[0], (
        refused.explain()
    )
    assert "Traceback" not in refused.stderr
    assert load_sink(sink).load_table().metadata_location == before


def test_bad_input_is_one_line(workspace: Workspace, local_warehouse: Warehouse) -> None:
    config = workspace.write_config()
    source = {"plugin_name": "Sequence", "rows": 1000}
    cases = [
        (
            "bad-catalog",
            {**local_warehouse.iceberg(), "iceberg.catalog.config": {"type": "nessie-ish"}},
            "sink[0].iceberg.catalog.config",
            "nessie-ish",
        ),
        (
            "no-table",
            local_warehouse.iceberg(table="nope", schema_save_mode="ERROR_WHEN_SCHEMA_NOT_EXIST"),
            "sink[0].table",
            "does not exist",
        ),
    ]
    for name, sink, key, words in cases:
        started = time.monotonic()
        result = workspace.run(workspace.write_job(source, sink, name=name), config, name, timeout=120)
        assert result.returncode == 2, f"{name}\n{result.explain()}"
        lines = _error_lines(result.stderr)
        assert len(lines) == 1 and lines[0].startswith(f"error: {key}: ") and words in lines[0], result.explain()
        assert "attempt 1:" not in result.stderr, f"{name}: Spark started\n{result.explain()}"
        assert time.monotonic() - started < 60

    # a table whose id column is a string: the job's int64 ids do not fit, and no file is written
    import pyarrow as pa
    from pyiceberg.catalog import load_catalog

    options = local_warehouse.iceberg(table="strings")
    catalog = load_catalog("test", **options["iceberg.catalog.config"])
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.strings", schema=pa.schema([pa.field("id", pa.string())]))
    result = workspace.run(workspace.write_job(source, options, name="changed"), config, "changed", timeout=300)
    assert result.returncode == 2, result.explain()
    lines = _error_lines(result.stderr)
    assert (
        len(lines) == 1
        and "sink[0].table: column 'id' is int64 in the job's output but string in Iceberg table ns.strings" in lines[0]
    ), result.explain()
    assert "attempt 1:" not in result.stderr, f"Spark started\n{result.explain()}"
    data = load_sink(options).location_of(table)
    assert not data.fs.exists(f"{data.root}/data") or not list(data.fs.walk_files(f"{data.root}/data"))


def test_delta_bad_input_is_one_line(workspace: Workspace, local_warehouse: Warehouse) -> None:
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    config = workspace.write_config()
    source = {"plugin_name": "Sequence", "rows": 1000}
    missing = local_warehouse.delta(table="nope", schema_save_mode="ERROR_WHEN_SCHEMA_NOT_EXIST")
    result = workspace.run(
        workspace.write_job(source, missing, name="delta-missing"), config, "delta-missing", timeout=120
    )
    assert result.returncode == 2, result.explain()
    lines = _error_lines(result.stderr)
    assert len(lines) == 1 and lines[0].startswith("error: sink[0].path: ") and "does not exist" in lines[0], (
        result.explain()
    )
    assert "attempt 1:" not in result.stderr, result.explain()

    # a table whose id column is a string: the job's int64 ids do not fit, and nothing is committed
    changed = local_warehouse.delta(table="strings")
    path = load_sink(changed).uri
    write_deltalake(path, pa.table({"id": pa.array(["a"], pa.string())}))
    files_before = set(DeltaTable(path).file_uris())
    result = workspace.run(
        workspace.write_job(source, changed, name="delta-changed"), config, "delta-changed", timeout=300
    )
    assert result.returncode == 2, result.explain()
    lines = _error_lines(result.stderr)
    assert len(lines) == 1 and "column 'id' is int64 in the job's output but string in Delta table" in lines[0], (
        result.explain()
    )
    assert "Traceback" not in result.stderr, result.explain()
    assert "attempt 1:" not in result.stderr, result.explain()
    table = DeltaTable(path)
    assert table.version() == 0 and set(table.file_uris()) == files_before
