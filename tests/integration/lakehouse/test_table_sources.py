"""The Iceberg and Delta sources with the real libraries, on local disk and on moto's S3,
without Spark: splits pinned to one snapshot/version (later commits are not read), a
reader resumed mid-split, time travel, projection, filters pushed to the scan, and bad
input naming the option."""

from __future__ import annotations

import time
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from airflow_provider_seatunnel_ckpt.connectors import load_source
from airflow_provider_seatunnel_ckpt.connectors.api import ReaderContext
from airflow_provider_seatunnel_ckpt.errors import ConfigError

from .conftest import Warehouse
from .formats import FORMATS, new_sink


@pytest.fixture(params=sorted(FORMATS))
def table_format(request: pytest.FixtureRequest) -> Any:
    return FORMATS[request.param]


def _fill(table_format: Any, warehouse: Warehouse, batches: list[tuple[int, int]], **extra: Any) -> Any:
    """A table written by our sink: one commit per (start, stop) range, two subtasks each."""
    sink = new_sink(table_format, warehouse, **extra)
    committer = sink.create_committer("fill")
    for checkpoint, (start, stop) in enumerate(batches, 1):
        infos = []
        for subtask, (low, high) in enumerate(((start, (start + stop) // 2), ((start + stop) // 2, stop))):
            writer = sink.create_writer("fill", subtask, 0)
            ids = pa.array(range(low, high), pa.int64())
            writer.write(pa.record_batch([ids, pc.divide(ids, 100)], names=["id", "bucket"]))
            infos.append(writer.prepare_commit(checkpoint))
        committer.commit(infos)
    return sink


def _source(table_format: Any, warehouse: Warehouse, **options: Any) -> Any:
    entry = table_format.options(warehouse)
    entry = {k: v for k, v in entry.items() if k not in ("schema_save_mode",)}
    return load_source({**entry, **options})


def _read(source: Any, splits: list, batch_size: int = 64) -> list[int]:
    ids = []
    for split in splits:
        reader = source.create_reader(split, None, ReaderContext(0, 1, batch_size))
        while (batch := reader.read_batch()) is not None:
            ids.extend(batch.column("id").to_pylist())
    return sorted(ids)


def test_splits_are_pinned_and_a_reader_resumes_mid_split(table_format: Any, warehouse: Warehouse) -> None:
    sink = _fill(table_format, warehouse, [(0, 1000), (1000, 2000)])
    source = _source(table_format, warehouse)
    source.preflight()
    splits = source.splits(2)
    assert len(splits) == 4
    # a commit after the job planned its splits is not read by them
    writer = sink.create_writer("late", 0, 0)
    writer.write(pa.record_batch([pa.array([99_999], pa.int64()), pa.array([0], pa.int64())], names=["id", "bucket"]))
    sink.create_committer("late").commit([writer.prepare_commit(1)])
    assert _read(source, splits) == list(range(2000))

    first = splits[0]
    reader = source.create_reader(first, None, ReaderContext(0, 1, 100))
    head = [reader.read_batch(), reader.read_batch()]
    position = reader.position()
    assert position == sum(b.num_rows for b in head) == 200
    resumed = source.create_reader(first, position, ReaderContext(0, 1, 100))
    rest = []
    while (batch := resumed.read_batch()) is not None:
        rest.extend(batch.column("id").to_pylist())
    everything = _read(source, [first])
    assert sorted([*(v for b in head for v in b.column("id").to_pylist()), *rest]) == everything
    assert not set(rest) & {v for b in head for v in b.column("id").to_pylist()}


def test_time_travel_projection_and_filters(table_format: Any, warehouse: Warehouse) -> None:
    sink = _fill(table_format, warehouse, [(0, 1000)])
    # S3 keeps object times in whole seconds, and Delta's time travel reads them
    time.sleep(1.1)
    middle_ms = int(time.time() * 1000)
    time.sleep(1.1)
    writer = sink.create_writer("more", 0, 0)
    writer.write(
        pa.record_batch(
            [pa.array(range(1000, 1500), pa.int64()), pa.array([10] * 500, pa.int64())], names=["id", "bucket"]
        )
    )
    sink.create_committer("more").commit([writer.prepare_commit(1)])

    if table_format.name == "iceberg":
        first = sink.load_table().snapshots()[0].snapshot_id
        pinned = {"snapshot_id": first}
        filtered = {"filter": "bucket >= 5"}
    else:
        pinned = {"version": 1}  # version 0 created the table
        filtered = {"filter": [["bucket", ">=", 5]]}
    by_id = _source(table_format, warehouse, **pinned)
    assert _read(by_id, by_id.splits(1)) == list(range(1000))
    as_of = _source(table_format, warehouse, as_of_timestamp=middle_ms)
    assert _read(as_of, as_of.splits(1)) == list(range(1000))

    projected = _source(table_format, warehouse, read_columns=["id"])
    split = projected.splits(1)[0]
    batch = projected.create_reader(split, None, ReaderContext(0, 1, 1000)).read_batch()
    assert batch.schema.names == ["id"]

    source = _source(table_format, warehouse, **filtered)
    assert _read(source, source.splits(1)) == list(range(500, 1500))


def test_bad_input_names_the_option(table_format: Any, warehouse: Warehouse) -> None:
    _fill(table_format, warehouse, [(0, 10)])
    if table_format.name == "iceberg":
        cases = [
            ({"table": "nope"}, "table", "does not exist"),
            ({"snapshot_id": 42}, "snapshot_id", "has no snapshot 42"),
            ({"read_columns": ["id", "nope"]}, "read_columns", "nope"),
            ({"filter": "id >>> 3"}, "filter", "cannot parse"),
            ({"filter": "nope > 3"}, "filter", "nope"),
        ]
    else:
        cases = [
            ({"path": table_format.options(warehouse, table="nope")["path"]}, "path", "is not a Delta table"),
            ({"version": 42}, "version", ""),
            ({"read_columns": ["id", "nope"]}, "read_columns", "has no column 'nope'"),
            ({"filter": [["nope", "=", 1]]}, "filter", "has no column 'nope'"),
            ({"filter": "id > 3"}, "filter", "expected a list"),
        ]
    for options, key, words in cases:
        with pytest.raises(ConfigError) as err:
            _source(table_format, warehouse, **options).preflight()
        assert err.value.key == f"source[0].{key}" and words in err.value.problem, (options, err.value)
