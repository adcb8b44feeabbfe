"""Airflow hooks for checkpoint storage: one per backend, on standard connection types
(``fs``, ``webhdfs``, ``aws``, ``oss``), the provider's ``seatunnel_checkpoint`` (a whole
plugin-config), and ``seatunnel_checkpoint_{fs,webhdfs,aws,oss}``: the same fields as the
standard type, registered by this provider so that the UI's *Test* runs the
checkpoint-storage check (a standard type's *Test* runs its own provider's hook).

Use :func:`get_checkpoint_hook` to get the right one for a connection id.
"""

from .base import CheckpointStorageHook, ConnectionStorage, FailureStreak
from .factory import HOOKS_BY_CONN_TYPE, UnsupportedConnectionType, get_checkpoint_hook
from .local import LocalCheckpointHook, SeaTunnelLocalCheckpointHook
from .oss import OssCheckpointHook, SeaTunnelOssCheckpointHook
from .s3 import S3CheckpointHook, SeaTunnelS3CheckpointHook
from .seatunnel import SeaTunnelCheckpointHook
from .webhdfs import SeaTunnelWebHdfsCheckpointHook, WebHdfsCheckpointHook

__all__ = [
    "HOOKS_BY_CONN_TYPE",
    "CheckpointStorageHook",
    "ConnectionStorage",
    "FailureStreak",
    "LocalCheckpointHook",
    "OssCheckpointHook",
    "S3CheckpointHook",
    "SeaTunnelCheckpointHook",
    "SeaTunnelLocalCheckpointHook",
    "SeaTunnelOssCheckpointHook",
    "SeaTunnelS3CheckpointHook",
    "SeaTunnelWebHdfsCheckpointHook",
    "UnsupportedConnectionType",
    "WebHdfsCheckpointHook",
    "get_checkpoint_hook",
]
