"""SeaTunnel's ``LocalFile`` connector (its connector-file-local): files on the local
disk, ``path = /abs/dir`` (or ``file:///abs/dir``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import ConfigError
from .seatunnel_sink import SeaTunnelFileSink
from .seatunnel_source import SeaTunnelFileSource
from .storage import FileStorage, Put


class LocalFileStorage(FileStorage):
    plugin = "LocalFile"

    def url(self, path: str, scheme: str, options: Mapping[str, Any], storage: dict[str, Any], put: Put) -> str:
        if scheme not in ("", "file"):
            raise ConfigError("path", f"{path!r} is not a local path; LocalFile reads and writes the local file system")
        return path


class LocalFileSource(SeaTunnelFileSource):
    plugin_name = "LocalFile"
    storage = LocalFileStorage()


class LocalFileSink(SeaTunnelFileSink):
    plugin_name = "LocalFile"
    storage = LocalFileStorage()
