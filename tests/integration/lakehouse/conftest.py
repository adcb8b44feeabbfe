"""Lakehouse tables on local disk and on moto's S3: the sink options a user would write,
and independent readers (pyiceberg's scan, DuckDB's iceberg extension)."""

from __future__ import annotations

import glob
import importlib
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tests.integration.engine.conftest import s3_options, spark_env, workspace  # noqa: F401 - fixtures re-exported


@dataclass
class Warehouse:
    """Where a test's tables live: a sqlite catalog on local disk, the data on ``url``."""

    kind: str  #: "local" or "s3"
    url: str
    catalog_db: Path
    storage: dict[str, str]

    def iceberg(self, table: str = "t", namespace: str = "ns", **extra: Any) -> dict[str, Any]:
        return {
            "plugin_name": "Iceberg",
            "catalog_name": "test",
            "namespace": namespace,
            "table": table,
            "iceberg.catalog.config": {"type": "sql", "uri": f"sqlite:///{self.catalog_db}", "warehouse": self.url},
            **self.storage,
            **extra,
        }

    def delta(self, table: str = "t", **extra: Any) -> dict[str, Any]:
        return {"plugin_name": "Delta", "path": f"{self.url}/delta/{table}", **self.storage, **extra}


@pytest.fixture
def local_warehouse(tmp_path: Path) -> Warehouse:
    return Warehouse("local", f"file://{tmp_path}/warehouse", tmp_path / "catalog.db", {})


@pytest.fixture(params=["local", "s3"])
def warehouse(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Warehouse]:
    if request.param == "local":
        yield Warehouse("local", f"file://{tmp_path}/warehouse", tmp_path / "catalog.db", {})
        return
    server = request.getfixturevalue("s3_process_server")
    bucket = server.create_bucket(f"lake-{uuid.uuid4().hex[:12]}")
    yield Warehouse("s3", f"s3://{bucket}/warehouse", tmp_path / "catalog.db", s3_options(server))


def ids_batch(start: int, stop: int) -> pa.RecordBatch:
    return pa.record_batch([pa.array(range(start, stop), pa.int64())], names=["id"])


def duckdb_lake(storage: dict[str, str]) -> Any:
    """A DuckDB connection with the iceberg and delta extensions (from their wheels: no
    download) and, for S3, a secret for the test server; ``iceberg_scan(metadata file)``
    and ``delta_scan(table URL)`` read."""
    import duckdb

    connection = duckdb.connect()
    for name in ("avro", "iceberg", "delta", "httpfs"):
        module = importlib.import_module(f"duckdb_extension_{name}")
        path = glob.glob(os.path.join(os.path.dirname(module.__file__), "extensions", "*", f"{name}.duckdb_extension"))
        connection.execute(f"LOAD '{path[0]}'")
    if storage:
        endpoint = storage["fs.s3a.endpoint"].split("://", 1)[1]
        connection.execute(
            "CREATE SECRET s3test (TYPE s3, KEY_ID ?, SECRET ?, REGION ?, ENDPOINT ?, URL_STYLE 'path', USE_SSL false)",
            [storage["fs.s3a.access.key"], storage["fs.s3a.secret.key"], storage["fs.s3a.endpoint.region"], endpoint],
        )
    return connection
