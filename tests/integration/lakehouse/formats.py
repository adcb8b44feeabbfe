"""One adapter per table format, so the sink tests that are about the shared protocol run
against both: the sink options, and reading back with the format's own library (rows,
this job's commits, data files), a plain append by another writer, DuckDB's scan."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from airflow_provider_seatunnel_ckpt.connectors import load_sink

from .conftest import Warehouse


class Iceberg:
    name = "iceberg"

    def options(self, warehouse: Warehouse, table: str = "t", **extra: Any) -> dict[str, Any]:
        return warehouse.iceberg(table=table, **extra)

    def ids(self, sink: Any) -> list[int]:
        return sorted(sink.load_table().scan().to_arrow().column("id").to_pylist())

    def commits(self, sink: Any, job_id: str) -> list[str]:
        """Checkpoint ids of this job's commits, oldest first."""
        return [
            s.summary["seatunnel.checkpoint-id"]
            for s in sink.load_table().snapshots()
            if s.summary.get("seatunnel.job-id") == job_id
        ]

    def data_dir(self, sink: Any) -> tuple[Any, str]:
        location = sink.location_of(sink.load_table())
        return location.fs, f"{location.root}/data"

    def append_other(self, sink: Any, ids: list[int]) -> None:
        """Another application appending to the same table (retrying its own conflicts)."""
        from pyiceberg.exceptions import CommitFailedException

        while True:
            try:
                sink.load_table().append(pa.table({"id": pa.array(ids, pa.int64())}))
                return
            except CommitFailedException:
                continue

    def duckdb_scan(self, sink: Any) -> str:
        return f"iceberg_scan('{sink.load_table().metadata_location}')"


class Delta:
    name = "delta"

    def options(self, warehouse: Warehouse, table: str = "t", **extra: Any) -> dict[str, Any]:
        return warehouse.delta(table=table, **extra)

    def ids(self, sink: Any) -> list[int]:
        return sorted(sink.load_table().to_pyarrow_table(columns=["id"]).column("id").to_pylist())

    def commits(self, sink: Any, job_id: str) -> list[str]:
        history = sink.load_table().history()
        return [h["seatunnel.checkpoint-id"] for h in reversed(history) if h.get("seatunnel.job-id") == job_id]

    def data_dir(self, sink: Any) -> tuple[Any, str]:
        return sink.location.fs, sink.location.root

    def append_other(self, sink: Any, ids: list[int]) -> None:
        from deltalake import write_deltalake

        write_deltalake(
            sink.uri, pa.table({"id": pa.array(ids, pa.int64())}), mode="append", storage_options=sink.delta_options
        )

    def duckdb_scan(self, sink: Any) -> str:
        return f"delta_scan('{sink.location.url}')"


FORMATS = {"iceberg": Iceberg(), "delta": Delta()}


def data_files(table_format: Any, sink: Any) -> set[str]:
    """Every data file under the table's data directory (not Delta's log)."""
    fs, root = table_format.data_dir(sink)
    if not fs.exists(root):
        return set()
    return {f.path for f in fs.walk_files(root) if "/_delta_log/" not in f.path}


def new_sink(table_format: Any, warehouse: Warehouse, **extra: Any) -> Any:
    return load_sink(table_format.options(warehouse, **extra))
