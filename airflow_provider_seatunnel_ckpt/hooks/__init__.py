"""Airflow hooks for checkpoint storage: one per backend, on standard connection types
(``fs``, ``webhdfs``, ``aws``, ``oss``) plus the provider's ``seatunnel_checkpoint``.

Use :func:`get_checkpoint_hook` to get the right one for a connection id.
"""

from .base import CheckpointStorageHook, ConnectionStorage, FailureStreak
from .factory import HOOKS_BY_CONN_TYPE, get_checkpoint_hook
from .local import LocalCheckpointHook
from .oss import OssCheckpointHook
from .s3 import S3CheckpointHook
from .seatunnel import SeaTunnelCheckpointHook
from .webhdfs import WebHdfsCheckpointHook

__all__ = [
    "HOOKS_BY_CONN_TYPE",
    "CheckpointStorageHook",
    "ConnectionStorage",
    "FailureStreak",
    "LocalCheckpointHook",
    "OssCheckpointHook",
    "S3CheckpointHook",
    "SeaTunnelCheckpointHook",
    "WebHdfsCheckpointHook",
    "get_checkpoint_hook",
]
