"""SeaTunnel's ``S3File`` connector (its connector-file-s3): ``bucket = "s3a://b"`` and
``path = /dir`` (or ``path = s3a://b/dir``); ``access_key``, ``secret_key`` and
``hadoop_s3_properties { fs.s3a.* }`` set the S3 client's ``fs.s3a.*`` storage options."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from ...errors import ConfigError
from ..options import Option
from .seatunnel_sink import SeaTunnelFileSink
from .seatunnel_source import SeaTunnelFileSource
from .storage import FileStorage, Put, bucket_name

log = logging.getLogger(__name__)

#: fs.s3a.* keys the S3 backend reads (storage/fs_s3.py); hadoop_s3_properties may hold any
_S3_KEYS_READ = frozenset(
    {
        "fs.s3a.endpoint",
        "fs.s3a.endpoint.region",
        "fs.s3a.path.style.access",
        "fs.s3a.connection.ssl.enabled",
        "fs.s3a.access.key",
        "fs.s3a.secret.key",
        "fs.s3a.session.token",
        "fs.s3a.aws.credentials.provider",
        "fs.s3a.multipart.threshold",
        "fs.s3a.multipart.size",
    }
)
_SCHEMES = ("s3a", "s3n", "s3")


class S3FileStorage(FileStorage):
    plugin = "S3File"
    connection_options = (
        Option("bucket", "value", "s3a://name, when path is not a URL"),
        Option("access_key", "value", "sets fs.s3a.access.key"),
        Option("secret_key", "value", "sets fs.s3a.secret.key"),
        Option("hadoop_s3_properties", "value", "fs.s3a.* properties of the S3 client"),
    )
    storage_keys = {"access_key": "fs.s3a.access.key", "secret_key": "fs.s3a.secret.key"}

    def url(self, path: str, scheme: str, options: Mapping[str, Any], storage: dict[str, Any], put: Put) -> str:
        if scheme:
            if scheme not in _SCHEMES:
                raise ConfigError("path", f"{path!r} is not an S3 path")
            parts = urlsplit(path)
            if options.get("bucket") is not None and bucket_name(options["bucket"], _SCHEMES) != parts.netloc:
                raise ConfigError("bucket", f"disagrees with the bucket in path {path!r}")
            url = f"s3://{parts.netloc}{parts.path}"
        else:
            if options.get("bucket") is None:
                raise ConfigError("bucket", "is required for S3File (s3a://name)")
            url = f"s3://{bucket_name(options['bucket'], _SCHEMES)}/{path.lstrip('/')}"
        props = options.get("hadoop_s3_properties")
        if props is not None:
            if not isinstance(props, Mapping):
                raise ConfigError("hadoop_s3_properties", "expected a mapping of fs.s3a.* keys to values")
            for name, value in props.items():
                if str(name) in _S3_KEYS_READ:
                    put(str(name), value, f"hadoop_s3_properties.{name}")
                else:
                    log.warning("%s: hadoop_s3_properties.%s is not used by this S3 client; ignored", self.plugin, name)
        return url


class S3FileSource(SeaTunnelFileSource):
    plugin_name = "S3File"
    storage = S3FileStorage()


class S3FileSink(SeaTunnelFileSink):
    plugin_name = "S3File"
    storage = S3FileStorage()
