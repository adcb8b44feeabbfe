"""Checkpoint storage: a microkernel of pluggable backends (knows nothing of Spark or Airflow)."""

from ..errors import BackendMissing, CheckpointStorageError
from .api import CheckpointEntry, CheckpointStorage, CheckpointStorageFactory
from .model import (
    CheckpointIdTaken,
    CheckpointKind,
    CheckpointManifest,
    CheckpointNotFoundError,
    CorruptCheckpointError,
    PipelineState,
    StateHandle,
)
from .registry import create_storage, get_factory, register_storage, storage_types

__all__ = [
    "BackendMissing",
    "CheckpointEntry",
    "CheckpointIdTaken",
    "CheckpointKind",
    "CheckpointManifest",
    "CheckpointNotFoundError",
    "CheckpointStorage",
    "CheckpointStorageError",
    "CheckpointStorageFactory",
    "CorruptCheckpointError",
    "PipelineState",
    "StateHandle",
    "create_storage",
    "get_factory",
    "register_storage",
    "storage_types",
]
