"""The Iceberg sink's commit protocol with the real pyiceberg library, on local disk and on
moto's S3, without Spark: one snapshot per checkpoint, replays skipped, a concurrent
writer, orphan cleanup, the refusal to restore past a committed snapshot, and bad input.
Rows are counted with pyiceberg's scan and with DuckDB."""

from __future__ import annotations

import datetime
import threading
from typing import Any

import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.engine.connectors import load_sink
from airflow_provider_seatunnel_ckpt.errors import ConfigError

from .conftest import Warehouse, duckdb_iceberg, ids_batch


def _ids(table: Any) -> list[int]:
    return sorted(table.scan().to_arrow().column("id").to_pylist())


def _ours(table: Any) -> list[tuple[str, str]]:
    return [(s.summary.get("seatunnel.job-id"), s.summary.get("seatunnel.checkpoint-id"))
            for s in table.snapshots() if s.summary.get("seatunnel.job-id")]


def _data_files(sink: Any) -> set[str]:
    table = sink.load_table()
    location = sink.location(table)
    return {f.path for f in location.fs.walk_files(f"{location.root}/data")} if location.fs.exists(
        f"{location.root}/data") else set()


def test_one_snapshot_per_checkpoint_and_replays_are_skipped(warehouse: Warehouse) -> None:
    sink = load_sink(warehouse.iceberg())
    sink.preflight()
    writers = [sink.create_writer("job-a", subtask, 0) for subtask in range(2)]
    committer = sink.create_committer("job-a")
    writers[0].write(ids_batch(0, 500))
    writers[1].write(ids_batch(500, 1000))
    first = [w.prepare_commit(1) for w in writers]
    committer.commit(first)
    assert [w.prepare_commit(2) for w in writers] == [None, None]  # an empty epoch: nothing to commit
    writers[1].write(ids_batch(1000, 1200))
    third = [w.prepare_commit(3) for w in writers]
    committer.commit(third)
    # the driver died after the table commit, before its own bookkeeping: restore replays
    committer.commit(third)
    committer.commit(first)
    table = sink.load_table()
    assert _ours(table) == [("job-a", "1"), ("job-a", "3")]
    assert _ids(table) == list(range(1200))
    duck = duckdb_iceberg(table.metadata_location, warehouse.storage)
    assert duck.execute(f"SELECT count(*), count(DISTINCT id), min(id), max(id) FROM iceberg_scan('{table.metadata_location}')"
                        ).fetchall() == [(1200, 1200, 0, 1199)]
    assert committer.pending()[0]["last_committed_checkpoint"] == 3


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
    assert _ids(table) == list(range(400))
    one_day = table.scan(row_filter="ts >= '2024-01-02T00:00:00' and ts < '2024-01-03T00:00:00'")
    assert len(one_day.plan_files()) == 4  # partition pruning works: the manifests carry the partitions
    assert sorted(one_day.to_arrow().column("id").to_pylist()) == list(range(1, 400, 3))


def test_a_concurrent_writer_is_retried_not_lost(local_warehouse: Warehouse) -> None:
    sink = load_sink(local_warehouse.iceberg())
    writer = sink.create_writer("job-c", 0, 0)
    writer.write(ids_batch(0, 10))
    committer = sink.create_committer("job-c")
    committer.commit([writer.prepare_commit(1)])
    other_rows: list[int] = []

    def other_writer() -> None:  # another application appending to the same table, 8 times
        from pyiceberg.exceptions import CommitFailedException

        table = sink.load_table()
        next_id = 1_000_000
        while len(other_rows) < 8:
            try:
                table.append(pa.table({"id": pa.array([next_id], pa.int64())}))
            except CommitFailedException:
                table = sink.load_table()
                continue
            other_rows.append(next_id)
            next_id += 1

    thread = threading.Thread(target=other_writer)
    thread.start()
    checkpoint = 1
    while thread.is_alive() and checkpoint < 500:
        checkpoint += 1
        writer.write(ids_batch(checkpoint * 10, checkpoint * 10 + 10))
        committer.commit([writer.prepare_commit(checkpoint)])
    thread.join()
    table = sink.load_table()
    assert len(other_rows) == 8 and checkpoint > 2
    assert _ids(table) == sorted([*range(10), *range(20, checkpoint * 10 + 10), *other_rows])
    assert [c for _, c in _ours(table)] == [str(c) for c in range(1, checkpoint + 1)]


def test_cleanup_deletes_only_this_jobs_uncommitted_files(warehouse: Warehouse) -> None:
    sink = load_sink(warehouse.iceberg())
    committed = sink.create_writer("job-x", 0, 0)
    committed.write(ids_batch(0, 100))
    done = committed.prepare_commit(1)
    committer = sink.create_committer("job-x")
    committer.commit([done])
    orphan = sink.create_writer("job-x", 1, 0)
    orphan.write(ids_batch(100, 200))
    lost = orphan.prepare_commit(2)  # its checkpoint never completes
    kept = sink.create_writer("job-x", 0, 1)
    kept.write(ids_batch(200, 300))
    restored = kept.prepare_commit(3)  # the restored checkpoint: committed after cleanup
    neighbour = sink.create_writer("job-y", 0, 0)
    neighbour.write(ids_batch(900, 901))
    theirs = neighbour.prepare_commit(1)
    committer.cleanup([restored])
    left = _data_files(sink)
    assert {f["path"] for f in lost["files"]}.isdisjoint(left)
    assert {f["path"] for info in (done, restored, theirs) for f in info["files"]} <= left
    committer.commit([restored])
    assert _ids(sink.load_table()) == [*range(100), *range(200, 300)]


def test_writer_close_deletes_files_it_never_handed_out(warehouse: Warehouse) -> None:
    sink = load_sink(warehouse.iceberg(max_file_bytes=1))
    writer = sink.create_writer("job-w", 0, 0)
    writer.write(ids_batch(0, 100))  # over max_file_bytes: written at once
    assert len(_data_files(sink)) == 1
    writer.close()
    assert _data_files(sink) == set()


def test_restore_older_than_a_committed_snapshot_is_refused_and_discard_restarts(warehouse: Warehouse) -> None:
    sink = load_sink(warehouse.iceberg())
    writer = sink.create_writer("job-r", 0, 0)
    committer = sink.create_committer("job-r")
    for checkpoint in (1, 2):
        writer.write(ids_batch(checkpoint * 10, checkpoint * 10 + 10))
        committer.commit([writer.prepare_commit(checkpoint)])
    committer.rollback(2)  # nothing newer: fine
    with pytest.raises(ConfigError) as err:
        committer.rollback(1)
    assert err.value.key == "--restore" and "checkpoint 2" in err.value.problem
    # --discard-existing: a fresh run under the same job id counts checkpoints from 1 again
    committer.discard_job()
    writer.write(ids_batch(100, 110))
    committer.commit([writer.prepare_commit(1)])
    assert _ids(sink.load_table()) == [*range(10, 30), *range(100, 110)]
    committer.rollback(1)


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
    before = _data_files(sink)
    changed = sink.create_writer("job-b", 0, 1)
    with pytest.raises(ConfigError) as err:
        changed.write(pa.record_batch([pa.array(["a"])], names=["id"]))
    assert err.value.key == "sink[0].table" and "column 'id' is string in the job's output but int64" in err.value.problem
    assert _data_files(sink) == before

    with pytest.raises(ConfigError) as err:
        load_sink(warehouse.iceberg(partition_by=["day(ts)"])).preflight()
    assert err.value.key == "partition_by" and "exists and is partitioned by nothing" in err.value.problem


@pytest.mark.parametrize("options, key, words", [
    ({"partition_by": ["bucket(id)"]}, "partition_by", "needs a width"),
    ({"partition_by": ["weird(id)"]}, "partition_by", "is not a partition field"),
    ({"partition_by": "id"}, "partition_by", "expected a list"),
    ({"schema_save_mode": "RECREATE_SCHEMA"}, "schema_save_mode", "is not one of"),
    ({"iceberg.table.write-props": {"write.parquet.compression-codec": "lzo"}}, "iceberg.table.write-props", "lzo"),
    ({"iceberg.catalog.config": None}, "iceberg.catalog.config", "is required"),
    ({"fs.s3a.nonsense": None, "nope": 1}, "nope", "unknown option"),
])
def test_option_errors_name_the_option(options: dict, key: str, words: str, tmp_path: Any) -> None:
    base = {"plugin_name": "Iceberg", "namespace": "ns", "table": "t",
            "iceberg.catalog.config": {"type": "sql", "uri": f"sqlite:///{tmp_path}/c.db", "warehouse": f"file://{tmp_path}"}}
    with pytest.raises(ConfigError) as err:
        load_sink({**base, **options})
    assert err.value.key == f"sink[0].{key}" and words in err.value.problem
