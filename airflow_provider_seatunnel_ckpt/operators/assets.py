"""The Airflow Asset a job's sink writes, so downstream DAGs can be scheduled on its output.

A sink's location is usually templated (a path per logical date), so it is known only
when the task runs. The operator therefore declares an ``AssetAlias`` as its outlet when
the DAG is parsed (``seatunnel-ckpt/<dag_id>.<task_id>``: a downstream DAG schedules on
it) and, when a run finishes the job, adds the concrete ``Asset`` of the rendered sink to
it, with the job id and final checkpoint as the event's extra.

The URIs follow Airflow's conventions where one exists (``file://``, ``s3://``,
``postgres://host:port/database/schema/table``, ``kafka://broker/topic``) and say
``iceberg://<catalog>/<namespace>/<table>`` for a catalog table. No credentials: the
user and password of a URL are dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

#: path schemes Airflow knows under another name
_SCHEMES = {"s3a": "s3", "s3n": "s3", "file": "file", "hdfs": "hdfs", "webhdfs": "hdfs", "oss": "oss", "s3": "s3"}


def alias_name(dag_id: str | None, task_id: str) -> str:
    return f"seatunnel-ckpt/{dag_id}.{task_id}" if dag_id else f"seatunnel-ckpt/{task_id}"


def sink_asset_uri(sink: Mapping[str, Any]) -> str | None:
    """The Asset URI of a job's (rendered) sink entry, or None for a sink that writes no
    lasting output (``Console``) or one this does not know."""
    plugin = str(sink.get("plugin_name") or "").strip().lower()
    if plugin in ("file", "delta") and sink.get("path"):
        return _path_uri(str(sink["path"]))
    if plugin == "iceberg" and sink.get("table") and sink.get("namespace"):
        catalog = sink.get("catalog_name") or "default"
        return f"iceberg://{catalog}/{sink['namespace']}/{sink['table']}"
    if plugin == "jdbc" and sink.get("url") and sink.get("table"):
        return _postgres_uri(str(sink["url"]), str(sink["table"]), sink.get("database"))
    if plugin == "kafka" and sink.get("topic") and sink.get("bootstrap.servers"):
        broker = str(sink["bootstrap.servers"]).split(",")[0].strip()
        return f"kafka://{broker}/{sink['topic']}"
    return None


def _path_uri(path: str) -> str:
    """Without a trailing slash: Airflow drops it from ``file://`` URIs, so a directory has
    one name whichever way the job wrote it."""
    parts = urlsplit(path)
    if not parts.scheme:
        return f"file://{path.rstrip('/') or '/'}"
    scheme = _SCHEMES.get(parts.scheme.lower(), parts.scheme.lower())
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((scheme, host, parts.path.rstrip("/") or "/", "", ""))


def _postgres_uri(url: str, table: str, database: Any) -> str:
    parts = urlsplit(url[len("jdbc:"):] if url.startswith("jdbc:") else url)
    host = f"{parts.hostname or 'localhost'}:{parts.port or 5432}"
    name = str(database or parts.path.strip("/") or "postgres")
    schema, _, relation = table.rpartition(".")
    return f"postgres://{host}/{name}/{schema or 'public'}/{relation}"
