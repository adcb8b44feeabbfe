"""Iceberg (pyiceberg's SQL catalog, with and without a branch, and the hadoop catalog)
and Delta (delta-rs) tables on local disk, read back with each format's own library."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.connectors import load_sink

from ..contexts import SinkUnderTest, SourceUnderTest, unique


class IcebergSink(SinkUnderTest):
    commit_seam = "airflow_provider_seatunnel_ckpt.connectors.lakehouse.iceberg_sink:IcebergCommitter.last_committed"

    def __init__(self, name: str, catalog: dict[str, Any], branch: str | None = None):
        self.name, self.catalog, self.branch = name, catalog, branch

    def new_target(self) -> str:
        return unique("t")

    def sink(self, target: str) -> dict[str, Any]:
        block = {
            "plugin_name": "Iceberg",
            "catalog_name": "contract",
            "namespace": "ns",
            "table": target,
            "iceberg.catalog.config": dict(self.catalog),
        }
        if self.branch:
            block["iceberg.table.commit-branch"] = self.branch
        return block

    def committed(self, target: str) -> list[int]:
        table = load_sink(self.sink(target), "sink[0]").load_table()
        if table is None:
            return []
        if self.branch:
            snapshot = table.snapshot_by_name(self.branch)
            if snapshot is None:
                return []
            scan = table.scan(snapshot_id=snapshot.snapshot_id)
        else:
            scan = table.scan()
        return scan.to_arrow().column("id").to_pylist()


class DeltaSink(SinkUnderTest):
    name = "Delta"
    commit_seam = "airflow_provider_seatunnel_ckpt.connectors.lakehouse.delta_sink:DeltaCommitter.last_committed"

    def __init__(self, root: Path):
        self.root = root

    def new_target(self) -> str:
        return f"file://{self.root}/{unique('t')}"

    def sink(self, target: str) -> dict[str, Any]:
        return {"plugin_name": "Delta", "path": target}

    def committed(self, target: str) -> list[int]:
        table = load_sink(self.sink(target), "sink[0]").load_table()
        return [] if table is None else table.to_pyarrow_table(columns=["id"]).column("id").to_pylist()


def _warehouse(request: pytest.FixtureRequest) -> Path:
    return request.getfixturevalue("tmp_path") / "warehouse"


def _sql_catalog(request: pytest.FixtureRequest) -> dict[str, Any]:
    """pyiceberg's SQL catalog in a SQLite file beside the warehouse."""
    root = _warehouse(request)
    return {"type": "sql", "uri": f"sqlite:///{root.parent}/catalog.db", "warehouse": f"file://{root}"}


def _hadoop_catalog(request: pytest.FixtureRequest) -> dict[str, Any]:
    return {"type": "hadoop", "warehouse": f"file://{_warehouse(request)}/"}


@contextlib.contextmanager
def iceberg_sql(request: pytest.FixtureRequest) -> Iterator[SinkUnderTest]:
    yield IcebergSink("Iceberg (sql catalog)", _sql_catalog(request))


@contextlib.contextmanager
def iceberg_sql_branch(request: pytest.FixtureRequest) -> Iterator[SinkUnderTest]:
    yield IcebergSink("Iceberg (sql catalog, branch)", _sql_catalog(request), branch="audit")


@contextlib.contextmanager
def iceberg_hadoop(request: pytest.FixtureRequest) -> Iterator[SinkUnderTest]:
    yield IcebergSink("Iceberg (hadoop catalog)", _hadoop_catalog(request))


@contextlib.contextmanager
def delta(request: pytest.FixtureRequest) -> Iterator[SinkUnderTest]:
    yield DeltaSink(_warehouse(request))


# ---- sources: one snapshot (Iceberg) or version (Delta), pinned when the job first plans ----------
CHUNK = 300


class IcebergSource(SourceUnderTest):
    def __init__(self, name: str, catalog: dict[str, Any]):
        self.name, self.catalog = name, catalog
        self._sink = IcebergSink(name, catalog)

    def new_dataset(self) -> str:
        return unique("src")

    def append(self, dataset: str, ids: Any) -> None:
        sink = load_sink(self._sink.sink(dataset), "sink[0]")
        table = sink.load_table()
        for start in range(0, len(ids), CHUNK):
            data = pa.table({"id": pa.array(ids[start : start + CHUNK], pa.int64())})
            if table is None:
                table = sink.create_table(data.schema)
            table.append(data)

    def source(self, dataset: str) -> dict[str, Any]:
        return self._sink.sink(dataset)


class DeltaSource(SourceUnderTest):
    name = "Delta"

    def __init__(self, root: Path):
        self.root = root

    def new_dataset(self) -> str:
        return f"file://{self.root}/{unique('src')}"

    def append(self, dataset: str, ids: Any) -> None:
        from deltalake import write_deltalake

        for start in range(0, len(ids), CHUNK):
            write_deltalake(dataset, pa.table({"id": pa.array(ids[start : start + CHUNK], pa.int64())}), mode="append")

    def source(self, dataset: str) -> dict[str, Any]:
        return {"plugin_name": "Delta", "path": dataset}


@contextlib.contextmanager
def iceberg_sql_source(request: pytest.FixtureRequest) -> Iterator[SourceUnderTest]:
    yield IcebergSource("Iceberg (sql catalog)", _sql_catalog(request))


@contextlib.contextmanager
def iceberg_hadoop_source(request: pytest.FixtureRequest) -> Iterator[SourceUnderTest]:
    yield IcebergSource("Iceberg (hadoop catalog)", _hadoop_catalog(request))


@contextlib.contextmanager
def delta_source(request: pytest.FixtureRequest) -> Iterator[SourceUnderTest]:
    yield DeltaSource(_warehouse(request))
