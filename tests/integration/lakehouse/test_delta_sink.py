"""What is Delta's own in the Delta sink, with the real delta-rs library, on local disk and
on moto's S3: partitions, and bad input (the shared protocol is in test_table_sinks.py)."""

from __future__ import annotations

import datetime
from typing import Any

import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.connectors import load_sink
from airflow_provider_seatunnel_ckpt.errors import ConfigError

from .conftest import Warehouse, duckdb_lake, ids_batch
from .formats import Delta, data_files

FORMAT = Delta()


def test_partitioned_table(warehouse: Warehouse) -> None:
    sink = load_sink(warehouse.delta(partition_by=["day"]))
    writer = sink.create_writer("job-p", 0, 0)
    ids = pa.array(range(300), pa.int64())
    days = pa.array([datetime.date(2024, 1, 1 + i % 3) for i in range(300)], pa.date32())
    writer.write(pa.record_batch([ids, days], names=["id", "day"]))
    info = writer.prepare_commit(1)
    assert sorted(f["partition"]["day"] for f in info["files"]) == ["2024-01-01", "2024-01-02", "2024-01-03"]
    sink.create_committer("job-p").commit([info])
    table = sink.load_table()
    assert table.metadata().partition_columns == ["day"]
    one_day = table.to_pyarrow_table(filters=[("day", "=", datetime.date(2024, 1, 2))])
    assert sorted(one_day.column("id").to_pylist()) == list(range(1, 300, 3))
    duck = duckdb_lake(warehouse.storage)
    assert duck.execute(
        f"SELECT count(DISTINCT id), count(DISTINCT day) FROM delta_scan('{sink.location.url}')"
    ).fetchall() == [(300, 3)]


def test_bad_input_is_one_clear_error_before_data_is_written(warehouse: Warehouse) -> None:
    with pytest.raises(ConfigError) as err:
        load_sink(warehouse.delta(table="missing", schema_save_mode="ERROR_WHEN_SCHEMA_NOT_EXIST")).preflight()
    assert err.value.key == "path" and "does not exist" in err.value.problem

    sink = load_sink(warehouse.delta())
    first = sink.create_writer("job-b", 0, 0)
    first.write(ids_batch(0, 10))
    sink.create_committer("job-b").commit([first.prepare_commit(1)])
    before = data_files(FORMAT, sink)
    with pytest.raises(ConfigError) as err:
        sink.create_writer("job-b", 0, 1).write(pa.record_batch([pa.array(["a"])], names=["id"]))
    assert (
        err.value.key == "sink[0].path" and "column 'id' is string in the job's output but int64" in err.value.problem
    )
    assert data_files(FORMAT, sink) == before

    with pytest.raises(ConfigError) as err:
        load_sink(warehouse.delta(partition_by=["id"])).preflight()
    assert err.value.key == "partition_by" and "partitioned by nothing" in err.value.problem

    with pytest.raises(ConfigError) as err:
        load_sink(warehouse.delta(table="p", partition_by=["nope"])).create_writer("j", 0, 0).write(ids_batch(0, 1))
    assert err.value.key == "sink[0].partition_by" and "nope not in the job's output" in err.value.problem


@pytest.mark.parametrize(
    "options, key, words",
    [
        ({"mode": "overwrite"}, "mode", "is not one of"),
        ({"partition_by": "day"}, "partition_by", "expected a non-empty list"),
        ({"compression": "lzo"}, "compression", "is not one of"),
        ({"path": "ftp://x/y"}, "path", "unsupported scheme"),
    ],
)
def test_option_errors_name_the_option(options: dict, key: str, words: str, tmp_path: Any) -> None:
    with pytest.raises(ConfigError) as err:
        load_sink({"plugin_name": "Delta", "path": f"file://{tmp_path}/t", **options})
    assert err.value.key == f"sink[0].{key}" and words in err.value.problem
