"""The plugin registry: storage type name -> factory, discovered lazily.

Built-in factories are listed here as dotted strings *and* published through the
``seatunnel_ckpt.storage`` entry-point group in pyproject.toml. The in-code list keeps
the engine working where no distribution metadata exists (the engine shipped to Spark
executors as a ``--py-files`` archive). Third-party plugins only need the entry point.
Nothing is imported until a type is used, so a broken plugin fails only its own users.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Mapping
from importlib.metadata import entry_points
from types import MappingProxyType
from typing import Any

from ..errors import CheckpointStorageError, ConfigError

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "seatunnel_ckpt.storage"

_BUILTIN = {
    "hdfs": "airflow_provider_seatunnel_ckpt.storage.plugins:HdfsStorageFactory",
    "localfile": "airflow_provider_seatunnel_ckpt.storage.plugins:LocalFileStorageFactory",
    "memory": "airflow_provider_seatunnel_ckpt.storage.plugins:MemoryStorageFactory",
}

_registry: dict[str, str | type] = dict(_BUILTIN)
_conflicts: dict[str, set[str]] = {}
#: read-only view of the registered storage types
registry: Mapping[str, str | type] = MappingProxyType(_registry)
_lock = threading.Lock()
_discovered = False


def _target(value: str | type) -> str:
    return value if isinstance(value, str) else f"{value.__module__}:{value.__qualname__}"


def register_storage(identifier: str, factory: str | type, clobber: bool = False) -> None:
    """Register a factory class (or ``"module:Class"``) for ``storage.type: identifier``."""
    identifier = identifier.strip().lower()
    with _lock:
        existing = _registry.get(identifier)
        if existing is not None and not clobber and _target(existing) != _target(factory):
            _conflicts.setdefault(identifier, {_target(existing)}).add(_target(factory))
            return
        _registry[identifier] = factory
        _conflicts.pop(identifier, None)


def discover(force: bool = False) -> None:
    """Read the entry-point group once (again with ``force``)."""
    global _discovered
    if _discovered and not force:
        return
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        register_storage(entry.name, entry.value)
    _discovered = True


def storage_types() -> list[str]:
    discover()
    return sorted(_registry)


def get_factory(storage_type: str, key: str = "storage.type") -> Any:
    """The factory instance for a type; ``ConfigError`` naming ``key`` when unknown."""
    discover()
    name = storage_type.strip().lower()
    if name in _conflicts:
        raise ConfigError(
            key,
            f"storage type {name!r} is registered by more than one plugin "
            f"({', '.join(sorted(_conflicts[name]))}); uninstall all but one",
        )
    target = _registry.get(name)
    if target is None:
        raise ConfigError(key, f"unknown storage type {storage_type!r}; registered types: {', '.join(storage_types())}")
    if isinstance(target, str):
        module_name, _, attr = target.partition(":")
        try:
            target = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as err:
            raise CheckpointStorageError(f"storage plugin {name!r} ({_target(target)}) failed to load: {err}") from err
    factory = target() if isinstance(target, type) else target
    if not hasattr(factory, "create"):
        raise CheckpointStorageError(f"storage plugin {name!r} ({_target(target)}) has no create() method")
    return factory


def validate_storage(storage_config: Any, prefix: str, warnings: list[str]) -> Any:
    """Let the plugin check its own plugin-config; used by ``config.load_config``."""
    factory = get_factory(storage_config.type, f"{prefix}.type")
    warnings.extend(factory.validate(storage_config.plugin_config, f"{prefix}.plugin-config"))
    return storage_config


def create_storage(storage_config: Any) -> Any:
    """Build the ``CheckpointStorage`` for a ``StorageConfig`` (or a whole ``CheckpointConfig``)."""
    storage_config = getattr(storage_config, "storage", storage_config)
    factory = get_factory(storage_config.type)
    return factory.create(storage_config.plugin_config, max_retained=storage_config.max_retained)
