"""SeaTunnel-compatible checkpoint configuration: loading, defaults, validation.

Accepts, unchanged, the ``seatunnel.yaml`` documents of SeaTunnel's "Checkpoint Storage"
page: the full ``seatunnel.engine.checkpoint`` tree, a bare ``checkpoint:`` block, the
checkpoint block itself as a dict, plus a job file's ``env`` overrides
(``checkpoint.interval``, ``checkpoint.timeout``).

Text pasted from documentation is often not clean YAML. The document is read as job
files are (jobfile/documents.py: code fences dropped with a warning, duplicate keys an
error); here a pasted ``// comment`` line becomes a warning naming it as an unknown key
and a value with a stray trailing quote gets a warning. Every problem is a
``ConfigError`` whose message is one line: ``<key path>: <problem>``.

The defaults and where each comes from are documented in ``docs/configuration.md``.
"""

from __future__ import annotations

import enum
import logging
import os
import re
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictInt,
    ValidationError,
)

from .errors import ConfigError
from .jobfile.documents import load_document
from .jobfile.secret_keys import is_secret_key, mask_secrets
from .storage.layout import DEFAULT_NAMESPACE
from .storage.registry import validate_storage

log = logging.getLogger(__name__)

__all__ = [
    "CheckpointConfig",
    "CheckpointMode",
    "ConfigError",
    "ExternalizedRetention",
    "StorageConfig",
    "DEFAULT_NAMESPACE",
    "load_config",
    "mask_secrets",
    "read_checkpoint_block",
]

CHECKPOINT_PATH = "seatunnel.engine.checkpoint"

# --------------------------------------------------------------------------- model


def _int_from_digits(value: Any) -> Any:
    # YAML and Airflow templates often hand us "6000"; accept plain digit strings
    # but nothing fuzzier ("6s", "1e3", booleans stay errors).
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        return int(value)
    return value


Int = Annotated[StrictInt, BeforeValidator(_int_from_digits)]


class CheckpointMode(str, enum.Enum):
    EXACTLY_ONCE = "exactly-once"
    AT_LEAST_ONCE = "at-least-once"


class ExternalizedRetention(str, enum.Enum):
    """What happens to checkpoints when a job finishes (a failed job always keeps them)."""

    RETAIN_ON_FINISH = "retain-on-finish"
    DELETE_ON_FINISH = "delete-on-finish"


def _normalise_enum_text(value: Any) -> Any:
    if isinstance(value, str):
        return value.strip().lower().replace("_", "-")
    return value


class StorageConfig(BaseModel):
    """``checkpoint.storage``: which plugin, how many checkpoints to keep, its settings."""

    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="forbid")

    type: str = "hdfs"
    max_retained: Int = Field(3, alias="max-retained", ge=1)
    plugin_config: dict[str, Any] = Field(default_factory=dict, alias="plugin-config")

    @property
    def namespace(self) -> str:
        return self.plugin_config.get("namespace") or DEFAULT_NAMESPACE

    def masked(self) -> dict[str, Any]:
        return mask_secrets(self.model_dump(by_alias=True))


class CheckpointConfig(BaseModel):
    """The effective checkpoint configuration of one job (times in milliseconds)."""

    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="forbid")

    interval: Int = Field(10_000, gt=0)
    timeout: Int = Field(60_000, gt=0)
    min_pause: Int = Field(0, alias="min-pause", ge=0)
    max_concurrent: Int = Field(1, alias="max-concurrent", ge=1)
    tolerable_failure: Int = Field(0, alias="tolerable-failure", ge=0)
    #: checkpoint history entries kept in storage (docs/history.md); 0 records none
    history_size: Int = Field(1000, alias="history-size", ge=0)
    mode: Annotated[CheckpointMode, BeforeValidator(_normalise_enum_text)] = CheckpointMode.EXACTLY_ONCE
    externalized_retention: Annotated[ExternalizedRetention, BeforeValidator(_normalise_enum_text)] = Field(
        ExternalizedRetention.RETAIN_ON_FINISH, alias="externalized-retention"
    )
    storage: StorageConfig = Field(default_factory=StorageConfig)
    #: non-fatal findings (unknown keys, deprecated values, normalisations), one line each
    warnings: tuple[str, ...] = Field(default=(), exclude=True)

    def masked(self) -> dict[str, Any]:
        """The effective configuration as JSON-safe data with secrets masked."""
        return mask_secrets(self.model_dump(mode="json", by_alias=True))

    @property
    def deletes_on_finish(self) -> bool:
        """``externalized-retention: delete-on-finish``: a finished job leaves nothing in
        storage (docs/storage.md), so no reader finds it afterwards."""
        return self.externalized_retention is ExternalizedRetention.DELETE_ON_FINISH

    def with_job_env(self, env: Mapping[str, Any]) -> CheckpointConfig:
        """Apply a job file's ``env`` overrides (``checkpoint.interval`` / ``.timeout``)."""
        updates: dict[str, Any] = {}
        for env_key, field in _ENV_OVERRIDES.items():
            if env_key in env:
                updates[field] = env[env_key]
        if not updates:
            return self
        data = self.model_dump(by_alias=False)
        data.update(updates)
        try:
            return _validated(CheckpointConfig, data, "env", warnings=self.warnings)
        except ConfigError as err:
            field = err.key.split(".", 1)[-1]
            env_key = next((k for k, f in _ENV_OVERRIDES.items() if f == field), field)
            raise ConfigError(f"env.{env_key}", err.problem) from None


_ENV_OVERRIDES = {"checkpoint.interval": "interval", "checkpoint.timeout": "timeout"}

_CHECKPOINT_KEYS = {
    "interval",
    "timeout",
    "min-pause",
    "max-concurrent",
    "tolerable-failure",
    "history-size",
    "mode",
    "externalized-retention",
    "storage",
}
_STORAGE_KEYS = {"type", "max-retained", "plugin-config"}


# --------------------------------------------------------------------------- loading


def load_config(
    source: str | os.PathLike | Mapping[str, Any] | None = None,
    job_env: Mapping[str, Any] | None = None,
) -> CheckpointConfig:
    """Load and validate a checkpoint configuration.

    ``source`` is a path (``str`` without a newline or ``os.PathLike``), YAML text
    (anything with a newline, or ``key: value``), a parsed mapping, or None for the
    defaults. ``job_env`` is a job file's ``env`` block whose checkpoint overrides win.
    Warnings are logged and also kept on the result's ``warnings``.
    """
    if source is None:
        doc: Any = {}
        origin = "<defaults>"
        warnings: list[str] = []
    else:
        doc, origin, warnings = load_document(source)

    block, prefix = _find_checkpoint_block(doc, origin)
    config = _build(block, prefix, warnings)
    if job_env:
        config = config.with_job_env(job_env)
    for line in config.warnings:
        log.warning("%s", line)
    return config


def read_checkpoint_block(source: str | os.PathLike | Mapping[str, Any]) -> tuple[dict[str, Any], str, list[str]]:
    """The checkpoint block of a document as written (not validated), its key path
    (``seatunnel.engine.checkpoint`` or ``checkpoint``) and the parse warnings.

    For callers that complete a configuration from another source before validating
    it with :func:`load_config`: the Airflow hooks add an Airflow connection's endpoint
    and credentials to a ``seatunnel.yaml`` that leaves them out.
    """
    doc, origin, warnings = load_document(source)
    block, prefix = _find_checkpoint_block(doc, origin)
    return dict(block), prefix, warnings


def _find_checkpoint_block(doc: Any, origin: str) -> tuple[Mapping[str, Any], str]:
    if not isinstance(doc, Mapping):
        raise ConfigError(origin, f"expected a mapping at the top level, got {_type_name(doc)}")
    if not doc:
        return {}, "checkpoint"
    if "seatunnel" in doc:
        node: Any = doc
        path: list[str] = []
        for part in ("seatunnel", "engine", "checkpoint"):
            node = node.get(part) if isinstance(node, Mapping) else None
            path.append(part)
            if node is None:
                return {}, CHECKPOINT_PATH  # SeaTunnel runs on defaults here too
            if not isinstance(node, Mapping):
                raise ConfigError(".".join(path), f"expected a mapping, got {_type_name(node)}")
        return node, CHECKPOINT_PATH
    if "checkpoint" in doc:
        node = doc["checkpoint"]
        if node is None:
            return {}, "checkpoint"
        if not isinstance(node, Mapping):
            raise ConfigError("checkpoint", f"expected a mapping, got {_type_name(node)}")
        return node, "checkpoint"
    if set(doc) <= _CHECKPOINT_KEYS:
        return doc, "checkpoint"
    if "env" in doc and ("source" in doc or "sink" in doc):
        raise ConfigError(origin, "this is a job file, not a checkpoint configuration (seatunnel.yaml)")
    raise ConfigError(
        origin,
        "no 'seatunnel.engine.checkpoint' or 'checkpoint' block found "
        f"(top-level keys: {', '.join(sorted(map(str, doc)))})",
    )


def _build(block: Mapping[str, Any], prefix: str, warnings: list[str]) -> CheckpointConfig:
    data = dict(block)
    for key in list(data):
        if not isinstance(key, str):
            raise ConfigError(f"{prefix}.{key}", "keys must be strings")
        if key not in _CHECKPOINT_KEYS:
            warnings.append(_unknown_key(f"{prefix}.{key}", _CHECKPOINT_KEYS))
            del data[key]
        elif data[key] is None:
            del data[key]  # `interval:` with no value means "use the default"

    storage = data.get("storage")
    if storage is not None:
        data["storage"] = _build_storage(storage, f"{prefix}.storage", warnings)
    return _validated(CheckpointConfig, data, prefix, warnings=tuple(warnings))


def _build_storage(storage: Any, prefix: str, warnings: list[str]) -> StorageConfig:
    if not isinstance(storage, Mapping):
        raise ConfigError(prefix, f"expected a mapping, got {_type_name(storage)}")
    data = {}
    for key, value in storage.items():
        if key not in _STORAGE_KEYS:
            warnings.append(_unknown_key(f"{prefix}.{key}", _STORAGE_KEYS))
        elif value is not None:
            data[key] = value
    storage_type = data.get("type", "hdfs")
    if not isinstance(storage_type, str) or not storage_type.strip():
        raise ConfigError(f"{prefix}.type", f"expected a storage type name, got {storage_type!r}")
    data["type"] = storage_type.strip().lower()

    plugin_config = data.get("plugin-config") or {}
    if not isinstance(plugin_config, Mapping):
        raise ConfigError(f"{prefix}.plugin-config", f"expected a mapping, got {_type_name(plugin_config)}")
    plugin_config = _clean_plugin_config(plugin_config, f"{prefix}.plugin-config", warnings)

    validated = _validated(StorageConfig, {**data, "plugin-config": plugin_config}, prefix)
    # The plugin owns its keys: required ones, known ones, deprecations.
    return validate_storage(validated, prefix, warnings)


def _clean_plugin_config(plugin_config: Mapping[str, Any], prefix: str, warnings: list[str]) -> dict[str, Any]:
    cleaned: dict[str, Any] = {}
    for key, value in plugin_config.items():
        key_path = f"{prefix}.{key}"
        if not isinstance(key, str):
            raise ConfigError(key_path, "keys must be strings")
        if isinstance(value, (Mapping, list)):
            raise ConfigError(key_path, f"expected a single value, got {_type_name(value)}")
        if isinstance(value, str):
            value = value.strip()
            if value.endswith('"') and not value.startswith('"'):
                warnings.append(f"{key_path}: value ends with a stray '\"' (kept as written: {value!r})")
            if value.endswith("'") and not value.startswith("'") and value.count("'") % 2:
                warnings.append(f'{key_path}: value ends with a stray "\'" (kept as written: {value!r})')
        cleaned[key] = value

    namespace = cleaned.get("namespace")
    if namespace is None or namespace == "":
        cleaned.pop("namespace", None)
    elif not isinstance(namespace, str):
        raise ConfigError(f"{prefix}.namespace", f"expected a path, got {_type_name(namespace)}")
    else:
        if "\x00" in namespace:
            raise ConfigError(f"{prefix}.namespace", "contains a NUL character")
        if not namespace.endswith("/"):
            warnings.append(f"{prefix}.namespace: {namespace!r} does not end with '/'; using {namespace + '/'!r}")
            namespace += "/"
        cleaned["namespace"] = namespace
    return cleaned


def _unknown_key(key_path: str, known: set[str]) -> str:
    last = key_path.rsplit(".", 1)[-1]
    if last.lstrip().startswith("//"):
        return f"{key_path}: unknown key (ignored); it looks like a pasted '//' comment, YAML comments start with '#'"
    return f"{key_path}: unknown key (ignored); known keys: {', '.join(sorted(known))}"


def _validated(model: type[BaseModel], data: Mapping[str, Any], prefix: str, **extra: Any) -> Any:
    try:
        return model.model_validate({**data, **extra})
    except ValidationError as err:
        first = err.errors()[0]
        loc = ".".join(str(part) for part in first["loc"])
        key = f"{prefix}.{loc}" if loc else prefix
        got = first.get("input")
        shown = "" if isinstance(got, (Mapping, list)) or is_secret_key(loc) else f" (got {got!r})"
        message = first["msg"][0].lower() + first["msg"][1:]
        raise ConfigError(key, f"{message}{shown}") from None


def _type_name(value: Any) -> str:
    return {
        dict: "a mapping",
        list: "a list",
        str: "a string",
        int: "a number",
        float: "a number",
        bool: "a boolean",
    }.get(type(value), "a mapping" if isinstance(value, Mapping) else type(value).__name__)
