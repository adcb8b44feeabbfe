"""The provider's own connection type, ``seatunnel_checkpoint``: a whole SeaTunnel
``plugin-config`` in one connection."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from .base import CheckpointStorageHook, ConnectionStorage, connection_extra, mask_secret_values

if TYPE_CHECKING:
    from airflow.sdk import Connection

log = logging.getLogger(__name__)

CONN_TYPE = "seatunnel_checkpoint"

#: extra fields of the connection form (``conn-fields`` in get_provider_info)
FORM_FIELDS = ("storage_type", "storage_plugin", "namespace", "plugin_config")
#: where login / password go, per ``plugin-config.storage.type``
_LOGIN_KEYS = {
    "s3": ("fs.s3a.access.key", "fs.s3a.secret.key"),
    "oss": ("fs.oss.accessKeyId", "fs.oss.accessKeySecret"),
    "hdfs": ("hdfs.user", None),
}
_LOCATION_KEYS = ("namespace", "s3.bucket", "oss.bucket")


class SeaTunnelCheckpointHook(CheckpointStorageHook):
    """Checkpoint storage configured by a ``seatunnel_checkpoint`` connection.

    The extra holds SeaTunnel ``plugin-config`` keys, exactly as in ``seatunnel.yaml``:
    either under ``plugin_config`` (a JSON object, or its text as the connection form
    stores it) or at the top level. Form fields, all optional:

    * ``storage_type``: ``local``, ``hdfs``, ``s3`` or ``oss`` (``plugin-config.storage.type``)
    * ``storage_plugin``: ``checkpoint.storage.type`` (default ``hdfs``; a third-party
      plugin's name)
    * ``namespace``: the checkpoint namespace
    * login / password: the access key and secret key (S3, OSS), or the HDFS user; the
      password field keeps the secret encrypted and masked by Airflow.

    Merged with a config file like every hook (the file's namespace and bucket win;
    everything else in the connection replaces the file's keys).
    """

    conn_type = CONN_TYPE
    hook_name = "SeaTunnel Checkpoint Storage"

    def connection_storage(self, conn: Connection) -> ConnectionStorage:
        extra = connection_extra(conn)
        where = f"connection {conn.conn_id!r}.extra"
        plugin: dict[str, Any] = {k: v for k, v in extra.items() if k not in FORM_FIELDS}
        nested = extra.get("plugin_config")
        if isinstance(nested, str) and nested.strip():
            try:
                nested = json.loads(nested)
            except json.JSONDecodeError as err:
                raise ConfigError(f"{where}.plugin_config", f"is not valid JSON ({err.msg})") from None
        if nested:
            if not isinstance(nested, Mapping):
                raise ConfigError(f"{where}.plugin_config", "must be a JSON object of plugin-config keys")
            plugin.update(nested)
        if extra.get("storage_type"):
            plugin["storage.type"] = extra["storage_type"]
        if extra.get("namespace"):
            plugin["namespace"] = extra["namespace"]

        subtype = str(plugin.get("storage.type") or "").strip().lower()
        login_key, password_key = _LOGIN_KEYS.get(subtype, (None, None))
        if conn.login:
            if login_key is None:
                raise ConfigError(
                    f"connection {conn.conn_id!r}.login", f"is not used by storage.type {subtype or 'local'!r}"
                )
            plugin[login_key] = conn.login
        if conn.password:
            if password_key is None:
                raise ConfigError(
                    f"connection {conn.conn_id!r}.password", f"is not used by storage.type {subtype or 'local'!r}"
                )
            plugin[password_key] = conn.password
        mask_secret_values(conn.password)

        defaults = {k: plugin.pop(k) for k in _LOCATION_KEYS if k in plugin}
        storage_plugin = extra.get("storage_plugin") or None
        return ConnectionStorage(overrides=plugin, defaults=defaults, storage_type=storage_plugin)
