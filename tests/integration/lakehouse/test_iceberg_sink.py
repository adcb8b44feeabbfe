"""What is Iceberg's own in the Iceberg sink, with the real pyiceberg library, on local disk
and on moto's S3: partition transforms and pruning, and bad input (the shared protocol is
in test_table_sinks.py)."""

from __future__ import annotations

import datetime
from typing import Any

import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.connectors import load_sink
from airflow_provider_seatunnel_ckpt.errors import ConfigError

from .conftest import Warehouse, ids_batch
from .formats import Iceberg, data_files

FORMAT = Iceberg()


def test_partitioned_by_day_and_bucket(warehouse: Warehouse) -> None:
    sink = load_sink(warehouse.iceberg(partition_by=["day(ts)", "bucket(4, id)"]))
    writer = sink.create_writer("job-p", 0, 0)
    ids = pa.array(range(400), pa.int64())
    ts = pa.array([datetime.datetime(2024, 1, 1 + i % 3, 12) for i in range(400)], pa.timestamp("us"))
    writer.write(pa.record_batch([ids, ts], names=["id", "ts"]))
    info = writer.prepare_commit(1)
    assert len(info["files"]) == 12  # 3 days x 4 buckets, one file each
    sink.create_committer("job-p").commit([info])
    table = sink.load_table()
    assert [str(f.transform) for f in table.spec().fields] == ["day", "bucket[4]"]
    assert FORMAT.ids(sink) == list(range(400))
    one_day = table.scan(row_filter="ts >= '2024-01-02T00:00:00' and ts < '2024-01-03T00:00:00'")
    assert len(one_day.plan_files()) == 4  # partition pruning works: the manifests carry the partitions
    assert sorted(one_day.to_arrow().column("id").to_pylist()) == list(range(1, 400, 3))


def test_bad_input_is_one_clear_error_before_data_is_written(warehouse: Warehouse) -> None:
    with pytest.raises(ConfigError) as err:
        load_sink({**warehouse.iceberg(), "iceberg.catalog.config": {"type": "nessie-ish"}}).preflight()
    assert err.value.key == "iceberg.catalog.config" and "nessie-ish" in err.value.problem

    with pytest.raises(ConfigError) as err:
        load_sink(warehouse.iceberg(table="missing", schema_save_mode="ERROR_WHEN_SCHEMA_NOT_EXIST")).preflight()
    assert err.value.key == "table" and "ns.missing in catalog 'test' does not exist" in err.value.problem

    sink = load_sink(warehouse.iceberg())
    first = sink.create_writer("job-b", 0, 0)
    first.write(ids_batch(0, 10))
    sink.create_committer("job-b").commit([first.prepare_commit(1)])
    before = data_files(FORMAT, sink)
    changed = sink.create_writer("job-b", 0, 1)
    with pytest.raises(ConfigError) as err:
        changed.write(pa.record_batch([pa.array(["a"])], names=["id"]))
    assert (
        err.value.key == "sink[0].table" and "column 'id' is string in the job's output but int64" in err.value.problem
    )
    assert data_files(FORMAT, sink) == before

    with pytest.raises(ConfigError) as err:
        load_sink(warehouse.iceberg(partition_by=["day(ts)"])).preflight()
    assert err.value.key == "partition_by" and "exists and is partitioned by nothing" in err.value.problem


@pytest.mark.parametrize(
    "options, key, words",
    [
        ({"partition_by": ["bucket(id)"]}, "partition_by", "needs a width"),
        ({"partition_by": ["weird(id)"]}, "partition_by", "is not a partition field"),
        ({"partition_by": "id"}, "partition_by", "expected a list"),
        ({"schema_save_mode": "RECREATE_SCHEMA"}, "schema_save_mode", "is not one of"),
        ({"iceberg.table.write-props": {"write.parquet.compression-codec": "lzo"}}, "iceberg.table.write-props", "lzo"),
        ({"iceberg.catalog.config": None}, "iceberg.catalog.config", "is required"),
        ({"fs.s3a.nonsense": None, "nope": 1}, "nope", "unknown option"),
    ],
)
def test_option_errors_name_the_option(options: dict, key: str, words: str, tmp_path: Any) -> None:
    base = {
        "plugin_name": "Iceberg",
        "namespace": "ns",
        "table": "t",
        "iceberg.catalog.config": {
            "type": "sql",
            "uri": f"sqlite:///{tmp_path}/c.db",
            "warehouse": f"file://{tmp_path}",
        },
    }
    with pytest.raises(ConfigError) as err:
        load_sink({**base, **options})
    assert err.value.key == f"sink[0].{key}" and words in err.value.problem


def test_maps_lists_and_rows_go_into_the_table_the_sink_created(warehouse: Warehouse) -> None:
    """Iceberg names and flags the children of nested types its own way (a required map
    key): a job's map, list and row columns still fit the table it created, run after run."""
    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("m", pa.map_(pa.string(), pa.string())),
            ("l", pa.list_(pa.int32())),
            ("r", pa.struct([("a", pa.int32()), ("b", pa.map_(pa.string(), pa.int64()))])),
        ]
    )
    rows = [{"id": 1, "m": [("k", "v")], "l": [1, 2], "r": {"a": 3, "b": [("x", 4)]}}]
    for attempt in range(2):
        sink = load_sink(warehouse.iceberg())
        sink.preflight()
        sink.accepts(schema)
        writer = sink.create_writer("job-nested", 0, attempt)
        writer.write(pa.RecordBatch.from_pylist(rows, schema=schema))
        sink.create_committer("job-nested").commit([writer.prepare_commit(attempt + 1)])
    assert sink.load_table().scan().to_arrow().to_pylist() == rows * 2


def test_a_branch_of_a_new_table_starts_with_the_first_commit_and_main_stays_empty(warehouse: Warehouse) -> None:
    """As Java's sink with iceberg.table.commit-branch (IcebergSinkWithBranchIT), on a SQL
    catalog too; a commit replayed after a restore is found on the branch, not committed again."""
    sink = load_sink(warehouse.iceberg(**{"iceberg.table.commit-branch": "audit"}))
    committer = sink.create_committer("job-br")
    infos = []
    for checkpoint, (start, stop) in enumerate([(0, 10), (10, 25)], start=1):
        writer = sink.create_writer("job-br", 0, 0)
        writer.write(ids_batch(start, stop))
        infos.append(writer.prepare_commit(checkpoint))
        committer.commit([infos[-1]])
    committer.commit([infos[-1]])  # a replay
    table = sink.load_table()
    assert table.current_snapshot() is None and len(table.metadata.snapshots) == 2
    branch = table.snapshot_by_name("audit")
    assert sorted(table.scan(snapshot_id=branch.snapshot_id).to_arrow().column("id").to_pylist()) == list(range(25))


def _branch_rows(sink: Any, branch: str) -> list[int]:
    table = sink.load_table()
    head = table.snapshot_by_name(branch)
    return [] if head is None else sorted(table.scan(snapshot_id=head.snapshot_id).to_arrow().column("id").to_pylist())


def test_cleanup_keeps_the_data_files_a_branch_of_a_table_without_main_snapshots_holds(warehouse: Warehouse) -> None:
    """Found by the connector contract suite: with main empty (the rows only on the branch),
    cleanup took every file as unreferenced and deleted the committed data files."""
    sink = load_sink(warehouse.iceberg(**{"iceberg.table.commit-branch": "audit"}))
    committer = sink.create_committer("job-clean")
    writer = sink.create_writer("job-clean", 0, 0)
    writer.write(ids_batch(0, 10))
    committer.commit([writer.prepare_commit(1)])
    committer.cleanup([])  # a restore's or the end's cleanup keeping no infos
    assert _branch_rows(sink, "audit") == list(range(10))


def test_a_discarded_job_restarts_its_checkpoint_ids_on_the_branch_too(warehouse: Warehouse) -> None:
    """After delete-on-finish (discard_job) the same job id starts again at checkpoint 1; its
    first commit must not be taken for the old run's checkpoint 1, on a branch as on main."""
    sink = load_sink(warehouse.iceberg(**{"iceberg.table.commit-branch": "audit"}))
    for start, stop in [(0, 10), (10, 20)]:
        committer = sink.create_committer("job-again")
        writer = sink.create_writer("job-again", 0, 0)
        writer.write(ids_batch(start, stop))
        committer.commit([writer.prepare_commit(1)])
        committer.discard_job()
    assert _branch_rows(sink, "audit") == list(range(20))
