"""SeaTunnel's ``HdfsFile`` connector (its connector-file-hadoop), over WebHDFS:
``fs.defaultFS = "hdfs://nn:8020"`` and ``path = /dir`` (or a URL); ``hdfs_site_path``'s
properties become ``seatunnel.hadoop.*`` (HA name services), ``remote_user`` and the
``kerberos_*`` options the storage's. It has no catalog: the sink's save modes do nothing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import ConfigError
from ..options import Option
from .seatunnel_sink import SeaTunnelFileSink
from .seatunnel_source import SeaTunnelFileSource
from .storage import FileStorage, Put


def _hdfs_site(path: Any, key: str = "hdfs_site_path") -> dict[str, str]:
    """The properties of an ``hdfs-site.xml``."""
    import xml.etree.ElementTree as ET

    if not isinstance(path, str) or not path.strip():
        raise ConfigError(key, f"expected the path of an hdfs-site.xml, got {path!r}")
    try:
        root = ET.parse(path.strip()).getroot()
    except (OSError, ET.ParseError) as exc:
        raise ConfigError(key, f"cannot read {path!r}: {exc}") from None
    properties = {}
    for prop in root.iter("property"):
        name, value = prop.findtext("name"), prop.findtext("value")
        if name and value is not None:
            properties[name.strip()] = value.strip()
    return properties


class HdfsFileStorage(FileStorage):
    plugin = "HdfsFile"
    connection_options = (
        Option("hdfs_site_path", "value", "an hdfs-site.xml whose properties (HA name services) apply"),
        Option("remote_user", "value", "the HDFS user (sets hdfs.user)"),
        Option("kerberos_principal", "value", "the Kerberos principal"),
        Option("kerberos_keytab_path", "value", "the principal's keytab"),
        Option("krb5_path", "value", "the krb5.conf"),
    )
    storage_keys = {
        "remote_user": "hdfs.user",
        "kerberos_principal": "kerberosPrincipal",
        "kerberos_keytab_path": "kerberosKeytabFilePath",
        "krb5_path": "krb5Path",
    }
    has_catalog = False

    def url(self, path: str, scheme: str, options: Mapping[str, Any], storage: dict[str, Any], put: Put) -> str:
        if options.get("hdfs_site_path") is not None:
            for name, value in _hdfs_site(options["hdfs_site_path"]).items():
                storage.setdefault(f"seatunnel.hadoop.{name}", value)
        if scheme:
            return path
        default_fs = options.get("fs.defaultFS")
        if not isinstance(default_fs, str) or not default_fs.strip():
            raise ConfigError("fs.defaultFS", "is required for HdfsFile (hdfs://namenode:8020) unless path is a URL")
        return f"{default_fs.strip().rstrip('/')}/{path.lstrip('/')}"


class HdfsFileSource(SeaTunnelFileSource):
    plugin_name = "HdfsFile"
    storage = HdfsFileStorage()


class HdfsFileSink(SeaTunnelFileSink):
    plugin_name = "HdfsFile"
    storage = HdfsFileStorage()
