"""The datasets connectors read and write, named as OpenLineage names them.

Each source and sink says what it touches with ``datasets()`` (connectors/api.py); these
helpers give the names, so that every connector of one kind of system names a dataset the
same way. The names follow the OpenLineage naming spec: ``postgres://host:port`` +
``database.schema.table``, ``s3://bucket`` + key, ``kafka://host:port`` + topic, ``file``
+ path. Neither spec names a catalog table, so an Iceberg table is ``iceberg://<catalog>``
+ ``<namespace>.<table>``.

No credentials: a URL's user and password never reach a name. The engine records a sink's
datasets in each checkpoint (its identity, engine/sink_identity.py); Airflow's assets and
OpenLineage events use the same names (operators/datasets.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from .api import Dataset

#: path schemes under the name OpenLineage uses
_SCHEMES = {"s3a": "s3", "s3n": "s3", "webhdfs": "hdfs", "swebhdfs": "hdfs"}
#: stores whose namespace is the bucket, and whose names are keys without a leading slash
OBJECT_STORES = ("s3", "oss", "gs")
DEFAULT_KAFKA_PORT = 9092


def path_dataset(url: str) -> Dataset:
    """A directory or file by its URL (``/abs``, ``file:///abs``, ``s3a://bucket/key``...),
    without a trailing slash: Airflow drops it from ``file://`` URIs, so a directory has one
    name whichever way a job wrote it."""
    parts = urlsplit(url)
    scheme = _SCHEMES.get(parts.scheme.lower(), parts.scheme.lower()) or "file"
    key = parts.path.rstrip("/") or "/"
    if scheme == "file":
        return Dataset("file", key)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    if scheme in OBJECT_STORES:
        return Dataset(f"{scheme}://{host}", key.lstrip("/") or "/")
    return Dataset(f"{scheme}://{host}", key)


def postgres_dataset(host: str, port: int, database: str, schema: str | None, table: str) -> Dataset:
    """A PostgreSQL table; an unqualified one is in ``public``."""
    return Dataset(f"postgres://{host}:{port}", f"{database}.{schema or 'public'}.{table}")


def kafka_datasets(bootstrap_servers: str, topics: Iterable[str]) -> list[Dataset]:
    """Topics of the cluster whose first bootstrap server is named (OpenLineage's rule)."""
    broker = str(bootstrap_servers or "").split(",")[0].strip()
    if not broker:
        return []
    authority = broker if ":" in broker else f"{broker}:{DEFAULT_KAFKA_PORT}"
    return [Dataset(f"kafka://{authority}", topic) for topic in topics]


def iceberg_dataset(catalog: str, namespace: str, table: str) -> Dataset:
    return Dataset(f"iceberg://{catalog}", f"{namespace}.{table}")
