"""SeaTunnel's ``OssFile`` connector (its connector-file-oss): ``bucket = "oss://b"`` and
``path = /dir`` (or ``path = oss://b/dir``); ``endpoint``, ``access_key`` and
``access_secret`` set the ``fs.oss.*`` storage options."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import ConfigError
from ..options import Option
from .seatunnel_sink import SeaTunnelFileSink
from .seatunnel_source import SeaTunnelFileSource
from .storage import FileStorage, Put, bucket_name


class OssFileStorage(FileStorage):
    plugin = "OssFile"
    connection_options = (
        Option("bucket", "value", "oss://name, when path is not a URL"),
        Option("endpoint", "value", "sets fs.oss.endpoint"),
        Option("access_key", "value", "sets fs.oss.accessKeyId"),
        Option("access_secret", "value", "sets fs.oss.accessKeySecret"),
    )
    storage_keys = {
        "endpoint": "fs.oss.endpoint",
        "access_key": "fs.oss.accessKeyId",
        "access_secret": "fs.oss.accessKeySecret",
    }

    def url(self, path: str, scheme: str, options: Mapping[str, Any], storage: dict[str, Any], put: Put) -> str:
        if scheme:
            if scheme != "oss":
                raise ConfigError("path", f"{path!r} is not an OSS path")
            return path
        if options.get("bucket") is None:
            raise ConfigError("bucket", "is required for OssFile (oss://name)")
        return f"oss://{bucket_name(options['bucket'], ('oss',))}/{path.lstrip('/')}"


class OssFileSource(SeaTunnelFileSource):
    plugin_name = "OssFile"
    storage = OssFileStorage()


class OssFileSink(SeaTunnelFileSink):
    plugin_name = "OssFile"
    storage = OssFileStorage()
