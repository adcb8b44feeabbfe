"""WebHDFS's name node addresses from SeaTunnel's ``plugin-config``: ``fs.defaultFS`` names
the RPC address, WebHDFS needs the HTTP one; one name node, an HA name service (one URL
per name node, which the client fails over between) or a federated name service. The
rules, first match wins, are in docs/storage.md ("HDFS", "HDFS HA"). Errors are
``ConfigError("plugin-config.<key>", problem)``, naming the key the user wrote."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from ..errors import ConfigError

DEFAULT_HTTP_PORT = 9870
DEFAULT_HTTPS_PORT = 9871
HADOOP_PREFIX = "seatunnel.hadoop."

# ---- URL / config helpers -------------------------------------------------------------
_HOST_NAME = re.compile(r"^[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_])?$")


def _valid_host(host: str) -> bool:
    if ":" in host:  # an IPv6 literal (urlsplit already stripped the brackets)
        return all(c in "0123456789abcdefABCDEF:." for c in host)
    return bool(_HOST_NAME.match(host))


def _format_url(scheme: str, host: str, port: int) -> str:
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"{scheme}://{host}:{port}"


def _host_port(value: str, key: str, default_port: int | None) -> tuple[str, int]:
    text = value.strip()
    try:
        parts = urlsplit(f"//{text}")
        host, port = parts.hostname, parts.port
    except ValueError:
        host = port = None
        parts = None
    if not host or parts is None or parts.path or parts.query or parts.username or not _valid_host(host):
        raise ConfigError(key, f"{value!r} is not a host:port address")
    if port is None:
        if default_port is None:
            raise ConfigError(key, f"{value!r} has no port (expected host:port)")
        port = default_port
    return host, port


def parse_urls(value: str | Sequence[str], key: str) -> list[str]:
    items = re.split(r"[;,]", value) if isinstance(value, str) else list(value)
    urls = []
    for item in items:
        item = str(item).strip()
        if not item:
            continue
        try:
            parts = urlsplit(item)
            port = parts.port
        except ValueError:
            raise ConfigError(key, f"{item!r} is not a valid URL") from None
        if parts.scheme not in ("http", "https") or not parts.hostname or not _valid_host(parts.hostname):
            raise ConfigError(key, f"{item!r} is not a WebHDFS HTTP address (expected http://namenode:9870)")
        if parts.path.rstrip("/") or parts.query or parts.username or parts.password:
            raise ConfigError(key, f"{item!r} must be only scheme://host:port (no path, query or credentials)")
        default = DEFAULT_HTTPS_PORT if parts.scheme == "https" else DEFAULT_HTTP_PORT
        urls.append(_format_url(parts.scheme, parts.hostname, port or default))
    if not urls:
        raise ConfigError(key, "no WebHDFS URL given")
    return urls


def config_get(cfg: Mapping[str, Any], key: str) -> str | None:
    value = cfg.get(key)
    if value is None:
        return None
    text = str(value).strip()
    return text or None


class HadoopConf:
    """Hadoop keys from plugin-config: ``seatunnel.hadoop.<name>``, else a bare ``<name>``.

    Remembers which key supplied each value so errors name the key the user wrote.
    """

    def __init__(self, cfg: Mapping[str, Any]):
        self._values: dict[str, tuple[str, str]] = {}
        for key in cfg:
            if key.startswith(("dfs.", "hadoop.")):
                value = config_get(cfg, key)
                if value is not None:
                    self._values[key] = (value, key)
        for key in cfg:
            if key.startswith(HADOOP_PREFIX):
                value = config_get(cfg, key)
                if value is not None:
                    self._values[key[len(HADOOP_PREFIX) :]] = (value, key)

    def get(self, name: str) -> str | None:
        found = self._values.get(name)
        return found[0] if found else None

    def key(self, name: str) -> str:
        found = self._values.get(name)
        return f"plugin-config.{found[1] if found else HADOOP_PREFIX + name}"


def urls_from_plugin_config(cfg: Mapping[str, Any]) -> list[str]:
    explicit = cfg.get("webhdfs.url")
    if explicit is not None and (not isinstance(explicit, str) or explicit.strip()):
        if not isinstance(explicit, (str, list, tuple)):
            raise ConfigError("plugin-config.webhdfs.url", "must be a URL or a list of URLs")
        return parse_urls(explicit, "plugin-config.webhdfs.url")

    hadoop = HadoopConf(cfg)
    https = (hadoop.get("dfs.http.policy") or "HTTP_ONLY").upper() == "HTTPS_ONLY"
    scheme = "https" if https else "http"
    default_port = DEFAULT_HTTPS_PORT if https else DEFAULT_HTTP_PORT
    addr = "dfs.namenode.https-address" if https else "dfs.namenode.http-address"
    rpc = "dfs.namenode.rpc-address"
    fs_key = "plugin-config.fs.defaultFS"

    default_fs = config_get(cfg, "fs.defaultFS")
    fs_host: str | None = None
    fs_port: int | None = None
    fs_scheme = ""
    if default_fs is not None:
        try:
            parts = urlsplit(default_fs)
            fs_scheme, fs_host, fs_port = parts.scheme.lower(), parts.hostname, parts.port
        except ValueError:
            raise ConfigError(fs_key, f"{default_fs!r} is not a valid URI") from None
        if fs_scheme in ("http", "https"):  # the WebHDFS address itself
            return parse_urls(default_fs, fs_key)
        if fs_scheme not in ("hdfs", "webhdfs", "swebhdfs"):
            raise ConfigError(
                fs_key,
                f"{default_fs!r} is not an HDFS URI; expected hdfs://namenode:8020 or "
                "hdfs://<nameservice> (file:/// is the local backend)",
            )
        if not fs_host:
            raise ConfigError(fs_key, f"{default_fs!r} has no host or name service")
        if parts.path.rstrip("/") or parts.query:
            raise ConfigError(fs_key, f"{default_fs!r} must not contain a path; put directories in 'namespace'")

    plain = hadoop.get(addr)
    if plain is not None:
        host, port = _host_port(plain, hadoop.key(addr), default_port)
        if host in ("0.0.0.0", "::"):  # a bind address: the server is the fs.defaultFS host
            if not fs_host:
                raise ConfigError(hadoop.key(addr), f"{plain!r} is a bind address; set fs.defaultFS or webhdfs.url")
            host = fs_host
        return [_format_url(scheme, host, port)]

    if default_fs is None or fs_host is None:
        raise ConfigError(
            fs_key,
            "is required for HDFS storage (for example hdfs://namenode:8020), "
            "or set webhdfs.url to the name node's HTTP address",
        )
    if fs_scheme in ("webhdfs", "swebhdfs"):
        web_scheme = "https" if fs_scheme == "swebhdfs" else "http"
        port = fs_port or (DEFAULT_HTTPS_PORT if web_scheme == "https" else DEFAULT_HTTP_PORT)
        return [_format_url(web_scheme, fs_host, port)]

    ns = fs_host
    nameservices = {s.strip() for s in (hadoop.get("dfs.nameservices") or "").split(",") if s.strip()}
    namenodes = hadoop.get(f"dfs.ha.namenodes.{ns}")
    if fs_port is None and namenodes is not None:  # an HA name service
        urls = [
            _namenode_url(
                hadoop,
                scheme,
                default_port,
                f"{addr}.{ns}.{nn}",
                f"{rpc}.{ns}.{nn}",
                what=f"name node {nn} of name service {ns}",
            )
            for nn in (n.strip() for n in namenodes.split(","))
            if nn
        ]
        if not urls:
            raise ConfigError(hadoop.key(f"dfs.ha.namenodes.{ns}"), f"{namenodes!r} lists no name node")
        return urls
    if fs_port is None and (ns in nameservices or hadoop.get(f"{addr}.{ns}") or hadoop.get(f"{rpc}.{ns}")):
        if not (hadoop.get(f"{addr}.{ns}") or hadoop.get(f"{rpc}.{ns}")):
            raise ConfigError(
                hadoop.key(f"dfs.ha.namenodes.{ns}"),
                f"is required: {ns!r} is listed in dfs.nameservices (list its name nodes, "
                f"for example nn1,nn2, and give each a {HADOOP_PREFIX}{rpc}.{ns}.<nn>)",
            )
        return [_namenode_url(hadoop, scheme, default_port, f"{addr}.{ns}", f"{rpc}.{ns}", what=f"name service {ns}")]
    return [_format_url(scheme, fs_host, default_port)]


def _namenode_url(hadoop: HadoopConf, scheme: str, default_port: int, http_name: str, rpc_name: str, what: str) -> str:
    rpc = hadoop.get(rpc_name)
    rpc_host = _host_port(rpc, hadoop.key(rpc_name), 8020)[0] if rpc else None
    http = hadoop.get(http_name)
    if http is not None:
        host, port = _host_port(http, hadoop.key(http_name), default_port)
        if host in ("0.0.0.0", "::"):
            if rpc_host is None:
                raise ConfigError(hadoop.key(http_name), f"{http!r} is a bind address and {rpc_name} is not set")
            host = rpc_host
        return _format_url(scheme, host, port)
    if rpc_host is None:
        raise ConfigError(
            hadoop.key(rpc_name),
            f"is required to reach {what} (or set {HADOOP_PREFIX}{http_name} to its HTTP address)",
        )
    return _format_url(scheme, rpc_host, default_port)
