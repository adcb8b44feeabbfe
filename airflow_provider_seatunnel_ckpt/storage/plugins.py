"""Built-in storage plugins, configured exactly like SeaTunnel's ``seatunnel.yaml``.

* ``hdfs``: SeaTunnel's Hadoop-based plugin. ``plugin-config.storage.type`` picks the
  file system: ``hdfs`` (``fs.defaultFS: hdfs://...`` through WebHDFS, or
  ``file:///`` for the local disk), ``local``, ``s3``, ``oss``. With neither
  ``storage.type`` nor ``fs.defaultFS`` it uses the local disk, as Hadoop's default
  ``fs.defaultFS=file:///`` does, and says so in a warning.
* ``localfile``: SeaTunnel's deprecated native local-file plugin; same as local.
* ``memory``: in-process, for development and tests (Flink's JobManagerCheckpointStorage).

The file systems are imported only when used, so an S3 user never imports oss2; the
core installs none of the client libraries (the ``s3``, ``oss`` and ``hdfs`` extras do),
and selecting a backend whose library is missing is a one-line error naming its extra.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError
from .api import DEFAULT_MAX_RETAINED, CheckpointStorageFactory
from .fs_storage import FileSystemCheckpointStorage
from .layout import DEFAULT_NAMESPACE, normalise_namespace

_KNOWN_KEYS = {
    "namespace",
    "storage.type",
    "fs.defaultFS",
    "s3.bucket",
    "oss.bucket",
    "kerberosPrincipal",
    "kerberosKeytab",
    "kerberosKeytabFilePath",
    "krb5Path",
    "hdfs.user",
    "webhdfs.url",
}
_KNOWN_PREFIXES = ("fs.s3a.", "fs.oss.", "fs.hdfs.", "webhdfs.", "seatunnel.hadoop.", "hadoop.", "dfs.", "memory.")

_BACKENDS = {
    # backend -> (module, class, the plugin-config key that selects it: named when the
    # backend's client library is missing). fs.defaultFS for WebHDFS: its scheme is what
    # picks HDFS over the local disk (file:///), with or without storage.type: hdfs.
    "local": ("fs_local", "LocalFileSystem", "storage.type"),
    "webhdfs": ("fs_webhdfs", "WebHdfsFileSystem", "fs.defaultFS"),
    "s3": ("fs_s3", "S3FileSystem", "storage.type"),
    "oss": ("fs_oss", "OssFileSystem", "storage.type"),
}


def _reprefix(err: ConfigError, key_prefix: str) -> ConfigError:
    key = err.key
    if key.startswith("plugin-config."):
        key = f"{key_prefix}.{key[len('plugin-config.') :]}"
    elif not key.startswith(key_prefix):
        key = f"{key_prefix}.{key}"
    return ConfigError(key, err.problem)


def _namespace(plugin_config: Mapping[str, Any], key_prefix: str) -> str:
    try:
        return normalise_namespace(plugin_config.get("namespace") or DEFAULT_NAMESPACE)
    except ConfigError as err:
        raise _reprefix(err, key_prefix) from None


def _unknown_key_warnings(plugin_config: Mapping[str, Any], key_prefix: str) -> list[str]:
    warnings = []
    for key in plugin_config:
        if key in _KNOWN_KEYS or key.startswith(_KNOWN_PREFIXES):
            continue
        if key.lstrip().startswith("//"):
            warnings.append(
                f"{key_prefix}.{key}: unknown key (ignored); it looks like a pasted '//' comment, "
                "YAML comments start with '#'"
            )
        else:
            warnings.append(f"{key_prefix}.{key}: unknown key (ignored)")
    return warnings


def hdfs_backend(plugin_config: Mapping[str, Any], key_prefix: str, warnings: list[str] | None = None) -> str:
    """Which file system a ``type: hdfs`` plugin-config selects."""
    subtype = plugin_config.get("storage.type")
    default_fs = plugin_config.get("fs.defaultFS")
    if default_fs is not None and not isinstance(default_fs, str):
        raise ConfigError(
            f"{key_prefix}.fs.defaultFS", f"expected a URI such as hdfs://namenode:8020, got {default_fs!r}"
        )
    if subtype is None:
        if default_fs is None:
            if warnings is not None:
                warnings.append(
                    f"{key_prefix}: neither storage.type nor fs.defaultFS is set; using the local file system "
                    "(Hadoop's default fs.defaultFS is file:///)"
                )
            return "local"
        subtype = "hdfs"
    if not isinstance(subtype, str):
        raise ConfigError(f"{key_prefix}.storage.type", f"expected one of hdfs, local, s3, oss; got {subtype!r}")
    subtype = subtype.strip().lower()
    if subtype in ("local", "localfile", "file"):
        return "local"
    if subtype in ("s3", "s3a"):
        return "s3"
    if subtype == "oss":
        return "oss"
    if subtype == "hdfs":
        if not default_fs:
            raise ConfigError(
                f"{key_prefix}.fs.defaultFS",
                "required when storage.type is hdfs (e.g. hdfs://namenode:8020, or file:/// for the local disk)",
            )
        scheme = default_fs.split(":", 1)[0].lower()
        if scheme == "file":
            return "local"
        if scheme in ("hdfs", "webhdfs", "http", "https", "swebhdfs"):
            return "webhdfs"
        raise ConfigError(
            f"{key_prefix}.fs.defaultFS",
            f"unsupported scheme in {default_fs!r}; expected hdfs://, webhdfs:// or file:///",
        )
    raise ConfigError(f"{key_prefix}.storage.type", f"unknown value {subtype!r}; expected one of hdfs, local, s3, oss")


def _filesystem(backend: str, plugin_config: Mapping[str, Any], key_prefix: str) -> Any:
    import importlib

    module_name, class_name, selected_by = _BACKENDS[backend]
    filesystem = getattr(importlib.import_module(f"{__package__}.{module_name}"), class_name)
    filesystem.require_client(f"{key_prefix}.{selected_by}")
    try:
        return filesystem.from_plugin_config(dict(plugin_config))
    except ConfigError as err:
        raise _reprefix(err, key_prefix) from None


class HdfsStorageFactory(CheckpointStorageFactory):
    identifier = "hdfs"

    def validate(self, plugin_config: Mapping[str, Any], key_prefix: str) -> list[str]:
        warnings: list[str] = []
        backend = hdfs_backend(plugin_config, key_prefix, warnings)
        _namespace(plugin_config, key_prefix)
        _filesystem(backend, plugin_config, key_prefix)  # builds config only, no I/O
        return warnings + _unknown_key_warnings(plugin_config, key_prefix)

    def create(
        self, plugin_config: Mapping[str, Any], max_retained: int = DEFAULT_MAX_RETAINED
    ) -> FileSystemCheckpointStorage:
        prefix = "plugin-config"
        backend = hdfs_backend(plugin_config, prefix)
        return FileSystemCheckpointStorage(
            _filesystem(backend, plugin_config, prefix),
            _namespace(plugin_config, prefix),
            max_retained=max_retained,
            storage_type=self.identifier,
        )


class LocalFileStorageFactory(CheckpointStorageFactory):
    """SeaTunnel's deprecated ``localfile`` plugin, kept as an alias of local."""

    identifier = "localfile"

    def validate(self, plugin_config: Mapping[str, Any], key_prefix: str) -> list[str]:
        _namespace(plugin_config, key_prefix)
        storage_prefix = key_prefix.rsplit(".", 1)[0]
        return [
            f"{storage_prefix}.type: 'localfile' is deprecated (as in SeaTunnel); use type: hdfs with "
            "plugin-config storage.type: local or fs.defaultFS: file:///"
        ] + _unknown_key_warnings(plugin_config, key_prefix)

    def create(
        self, plugin_config: Mapping[str, Any], max_retained: int = DEFAULT_MAX_RETAINED
    ) -> FileSystemCheckpointStorage:
        return FileSystemCheckpointStorage(
            _filesystem("local", plugin_config, "plugin-config"),
            _namespace(plugin_config, "plugin-config"),
            max_retained=max_retained,
            storage_type=self.identifier,
        )


class MemoryStorageFactory(CheckpointStorageFactory):
    """In-process storage: shared by every instance in one process, lost on exit."""

    identifier = "memory"

    def validate(self, plugin_config: Mapping[str, Any], key_prefix: str) -> list[str]:
        _namespace(plugin_config, key_prefix)
        return _unknown_key_warnings(plugin_config, key_prefix)

    def create(
        self, plugin_config: Mapping[str, Any], max_retained: int = DEFAULT_MAX_RETAINED
    ) -> FileSystemCheckpointStorage:
        from .fs_memory import MemoryFileSystem

        return FileSystemCheckpointStorage(
            MemoryFileSystem.from_plugin_config(dict(plugin_config)),
            _namespace(plugin_config, "plugin-config"),
            max_retained=max_retained,
            storage_type=self.identifier,
        )
