"""What a job reads and writes, named for Airflow assets and for OpenLineage.

One place turns a (rendered) job-file entry into the datasets it touches, so an Asset
URI and an OpenLineage dataset of the same table always agree. Names follow the
OpenLineage naming spec (``postgres://host:port`` + ``database.schema.table``,
``s3://bucket`` + key, ``kafka://host:port`` + topic, ``file`` + path); a URI follows
Airflow's conventions (``file://``, ``s3://``, ``postgres://host:port/db/schema/table``,
``kafka://host:port/topic``). Neither spec names a catalog table, so an Iceberg table is
``iceberg://<catalog>`` + ``<namespace>.<table>`` and ``iceberg://<catalog>/<ns>/<table>``.

No credentials: a URL's user and password never reach a name. An entry that names no
lasting dataset (``Sequence``, ``Console``, a Kafka topic pattern) gives none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..connectors.jdbc.client import split_table_name
from ..connectors.jdbc.target import parse_target
from ..errors import ConfigError

#: path schemes under the name Airflow and OpenLineage use
_SCHEMES = {"s3a": "s3", "s3n": "s3", "webhdfs": "hdfs"}


@dataclass(frozen=True)
class DatasetRef:
    #: OpenLineage namespace and name
    namespace: str
    name: str
    #: Airflow asset URI
    uri: str


def source_datasets(source: Mapping[str, Any]) -> list[DatasetRef]:
    """The datasets a job's source entry reads."""
    plugin = _plugin(source)
    if plugin == "jdbc":
        return _jdbc_source(source)
    if plugin == "kafka":
        if source.get("pattern") in (True, "true", "True"):
            return []  # a regular expression names no dataset until the job runs
        topics = source.get("topic")
        return [ref for t in ([topics] if isinstance(topics, str) else topics or []) for ref in _kafka(source, t)]
    return _one(plugin, source)


def sink_datasets(sink: Mapping[str, Any]) -> list[DatasetRef]:
    """The datasets a job's sink entry writes."""
    plugin = _plugin(sink)
    if plugin == "jdbc" and sink.get("table"):
        return _postgres(sink, str(sink["table"]), sink.get("database"))
    if plugin == "kafka" and sink.get("topic"):
        return _kafka(sink, str(sink["topic"]))
    return _one(plugin, sink)


def _plugin(entry: Mapping[str, Any]) -> str:
    return str(entry.get("plugin_name") or "").strip().lower()


def _one(plugin: str, entry: Mapping[str, Any]) -> list[DatasetRef]:
    """Entries named the same way as a source and as a sink: paths and catalog tables."""
    if plugin in ("file", "delta") and entry.get("path"):
        return [_path(str(entry["path"]))]
    if plugin == "iceberg" and entry.get("table") and entry.get("namespace"):
        catalog = entry.get("catalog_name") or "default"
        namespace, table = entry["namespace"], entry["table"]
        return [DatasetRef(f"iceberg://{catalog}", f"{namespace}.{table}", f"iceberg://{catalog}/{namespace}/{table}")]
    return []


def _path(path: str) -> DatasetRef:
    """Without a trailing slash: Airflow drops it from ``file://`` URIs, so a directory has
    one name whichever way the job wrote it."""
    parts = urlsplit(path)
    scheme = _SCHEMES.get(parts.scheme.lower(), parts.scheme.lower()) or "file"
    key = parts.path.rstrip("/") or "/"
    if scheme == "file":
        return DatasetRef("file", key, f"file://{key}")
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    if scheme in ("s3", "oss", "gs"):  # object stores: the bucket is the namespace, the key has no leading slash
        return DatasetRef(f"{scheme}://{host}", key.lstrip("/") or "/", f"{scheme}://{host}{key}")
    return DatasetRef(f"{scheme}://{host}", key, f"{scheme}://{host}{key}")


def _postgres(entry: Mapping[str, Any], table: str, database: Any = None) -> list[DatasetRef]:
    try:
        target = parse_target({"url": entry.get("url")})
        schema, relation = split_table_name(table)
    except ConfigError:
        return []  # the job's own validation says what is wrong; lineage is not the place
    database = str(database or target.database)
    schema = schema or target.current_schema or "public"
    authority = f"{target.host}:{target.port}"
    return [DatasetRef(f"postgres://{authority}", f"{database}.{schema}.{relation}",
                       f"postgres://{authority}/{database}/{schema}/{relation}")]


def _jdbc_source(source: Mapping[str, Any]) -> list[DatasetRef]:
    table = source.get("table") or source.get("table_path")
    if table:
        return _postgres(source, str(table))
    query = source.get("query")
    if not query:
        return []
    try:  # the tables a query reads, with OpenLineage's SQL parser when it is installed
        from openlineage_sql import parse
    except ImportError:
        return []
    parsed = parse([str(query)], dialect="postgres")
    if parsed is None:
        return []
    found: list[DatasetRef] = []
    for table_meta in parsed.in_tables:
        database = table_meta.database
        qualified = f"{table_meta.schema}.{table_meta.name}" if table_meta.schema else table_meta.name
        found += _postgres(source, qualified, database)
    return found


def _kafka(entry: Mapping[str, Any], topic: str) -> list[DatasetRef]:
    broker = str(entry.get("bootstrap.servers") or "").split(",")[0].strip()
    if not broker:
        return []
    authority = broker if ":" in broker else f"{broker}:9092"
    return [DatasetRef(f"kafka://{authority}", topic, f"kafka://{authority}/{topic}")]
