"""Pick the hook for a connection's type: the one place operators, sensors and
triggers get checkpoint storage from."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from airflow.sdk import BaseHook

from ..errors import ConfigError
from .base import CheckpointStorageHook
from .local import LocalCheckpointHook, SeaTunnelLocalCheckpointHook
from .oss import OssCheckpointHook, SeaTunnelOssCheckpointHook
from .s3 import S3CheckpointHook, SeaTunnelS3CheckpointHook
from .seatunnel import SeaTunnelCheckpointHook
from .webhdfs import SeaTunnelWebHdfsCheckpointHook, WebHdfsCheckpointHook

#: connection type -> hook class: the standard types of other providers, and the
#: provider's own types (registered in get_provider_info, so the UI's Test runs our check)
HOOKS_BY_CONN_TYPE: dict[str, type[CheckpointStorageHook]] = {
    hook.conn_type: hook
    for hook in (
        LocalCheckpointHook,
        WebHdfsCheckpointHook,
        S3CheckpointHook,
        OssCheckpointHook,
        SeaTunnelCheckpointHook,
        SeaTunnelLocalCheckpointHook,
        SeaTunnelWebHdfsCheckpointHook,
        SeaTunnelS3CheckpointHook,
        SeaTunnelOssCheckpointHook,
    )
}


class UnsupportedConnectionType(ConfigError):
    """The connection exists but is of a type no checkpoint-storage hook reads. A
    ``ConfigError``: retrying cannot fix it, so operators fail the task at once."""


def get_checkpoint_hook(
    storage_conn_id: str | None = None,
    config_file: str | os.PathLike | Mapping[str, Any] | None = None,
) -> CheckpointStorageHook:
    """The checkpoint-storage hook for a connection (any supported type) and/or a
    ``seatunnel.yaml``. With no connection, the config file alone describes storage."""
    if not storage_conn_id:
        return CheckpointStorageHook(config_file=config_file)
    conn = BaseHook.get_connection(storage_conn_id)
    hook_class = HOOKS_BY_CONN_TYPE.get(conn.conn_type or "")
    if hook_class is None:
        raise UnsupportedConnectionType(
            f"connection {storage_conn_id!r}",
            f"has type {conn.conn_type!r}; checkpoint storage connections are of type "
            f"{', '.join(sorted(HOOKS_BY_CONN_TYPE))}",
        )
    return hook_class(storage_conn_id, config_file, connection=conn)
