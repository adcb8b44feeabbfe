"""Local-disk checkpoint storage on an ``fs`` connection (or none)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import ConfigError
from .base import CheckpointStorageHook, ConnectionStorage, connection_extra

if TYPE_CHECKING:
    from airflow.sdk import Connection


class LocalCheckpointHook(CheckpointStorageHook):
    """Checkpoints on the local file system (SeaTunnel ``fs.defaultFS: file:///``).

    ``fs`` connection (the standard File (path) type): extra ``path`` is the checkpoint
    namespace, an absolute directory, used when the config file sets no ``namespace``.
    Without a connection, the config file's ``namespace`` is used.
    Only useful where every process (Airflow worker, Spark driver and executors) sees the
    same directory: one machine, or a shared mount. ``test_connection`` checks the disk of
    the host that runs it (the API server for the UI's *Test*), and says so.
    """

    conn_type = "fs"
    hook_name = "SeaTunnel checkpoints on the local file system"
    backend = "local"

    def connection_storage(self, conn: Connection) -> ConnectionStorage:
        extra = connection_extra(conn)
        defaults = {}
        path = extra.get("path")
        if path:
            if not isinstance(path, str) or not path.startswith(("/", "file:/")):
                raise ConfigError(
                    f"connection {conn.conn_id!r}.extra.path", f"must be an absolute directory, got {path!r}"
                )
            defaults["namespace"] = path if path.endswith("/") else path + "/"
        return ConnectionStorage(overrides={"storage.type": "local"}, defaults=defaults, backend="local")


class SeaTunnelLocalCheckpointHook(LocalCheckpointHook):
    """The same, on the provider's own ``seatunnel_checkpoint_fs`` type (the fields of an
    ``fs`` connection), so that the UI's *Test* runs this check rather than the standard
    provider's File (path) check."""

    conn_type = "seatunnel_checkpoint_fs"
    hook_name = "SeaTunnel checkpoints on the local file system (File (path) fields)"
