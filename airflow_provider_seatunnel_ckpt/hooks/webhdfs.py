"""HDFS checkpoint storage (through WebHDFS) on a standard ``webhdfs`` connection."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from .base import CheckpointStorageHook, ConnectionStorage, connection_extra

if TYPE_CHECKING:
    from airflow.sdk import Connection

log = logging.getLogger(__name__)

DEFAULT_PORT = 9870
DEFAULT_SSL_PORT = 9871


class WebHdfsCheckpointHook(CheckpointStorageHook):
    """Checkpoints on HDFS through the storage plugin's WebHDFS client.

    ``webhdfs`` connection, as the Airflow HDFS provider reads it:

    ================================================  =========================================
    connection                                        plugin-config
    ================================================  =========================================
    host: one name node, or several separated by      ``webhdfs.url`` with one URL per name
    commas for HA (``nn1.example,nn2.example``;       node (the client fails over between them)
    an item may carry its own ``:port``)
    port (default 9870, 9871 with ``use_ssl``)        the port of each URL without one
    extra ``use_ssl``                                 ``https`` URLs
    login                                             ``hdfs.user`` (simple authentication)
    extra ``kerberos_principal`` +                    ``kerberosPrincipal`` +
    ``kerberos_keytab`` (path of the keytab file)     ``kerberosKeytab``; the ticket is renewed
                                                      before it expires
    extra ``krb5_conf``                               ``krb5Path``
    extra ``timeout`` (seconds)                       ``webhdfs.timeout``
    extra ``namespace``                               ``namespace`` when the config file has none
    ================================================  =========================================

    ``fs.defaultFS`` (required by the plugin) defaults to ``hdfs://<first host>``; a
    config file's own ``fs.defaultFS`` (an HA name service) is kept.

    What the HDFS provider's ``WebHDFSHook`` reads but the storage plugin's client cannot do
    the same way on every Spark node is refused with the key named, never ignored: a
    password (HTTP basic auth), a schema (a URL path prefix, e.g. behind a gateway),
    ``verify`` other than true, ``cert`` / ``key`` (mTLS). The provider's Kerberos mode
    (``[core] security = kerberos``, a ticket cache kept by ``airflow kerberos``) does not
    reach Spark executors either: give ``kerberos_principal`` + ``kerberos_keytab``.
    """

    conn_type = "webhdfs"
    hook_name = "SeaTunnel checkpoints on HDFS (WebHDFS)"
    backend = "webhdfs"

    def connection_storage(self, conn: Connection) -> ConnectionStorage:
        extra = connection_extra(conn)
        where = f"connection {conn.conn_id!r}"
        hosts = [h.strip() for h in (conn.host or "").replace(";", ",").split(",") if h.strip()]
        if not hosts:
            raise ConfigError(f"{where}.host", "is required: the name node host, or several separated by commas (HA)")
        _refuse_unsupported(conn, extra, where)
        use_ssl = str(extra.get("use_ssl", "false")).strip().lower() in ("true", "1", "yes")
        scheme = "https" if use_ssl else "http"
        port = conn.port or (DEFAULT_SSL_PORT if use_ssl else DEFAULT_PORT)
        urls = []
        for host in hosts:
            if "://" in host:
                raise ConfigError(f"{where}.host", f"{host!r}: give host names (and ports), not URLs")
            urls.append(f"{scheme}://{host}" if _has_port(host) else f"{scheme}://{host}:{port}")
        overrides: dict[str, Any] = {"storage.type": "hdfs", "webhdfs.url": ";".join(urls)}
        principal = extra.get("kerberos_principal")
        if not principal and _airflow_kerberos_mode():
            log.warning(
                "%s: [core] security is kerberos, but the connection has no kerberos_principal / kerberos_keytab "
                "extras; checkpoint storage uses simple authentication (the Spark nodes do not share Airflow's "
                "ticket cache)",
                where,
            )
        if conn.login:
            overrides["hdfs.user"] = conn.login
        keytab = extra.get("kerberos_keytab")
        if principal or keytab:
            overrides["kerberosPrincipal"] = principal
            overrides["kerberosKeytab"] = keytab
        if extra.get("krb5_conf"):
            overrides["krb5Path"] = extra["krb5_conf"]
        if extra.get("timeout") is not None:
            overrides["webhdfs.timeout"] = extra["timeout"]
        first_host = hosts[0].rsplit(":", 1)[0] if _has_port(hosts[0]) else hosts[0]
        defaults = {"fs.defaultFS": f"hdfs://{first_host}"}
        if extra.get("namespace"):
            defaults["namespace"] = extra["namespace"]
        return ConnectionStorage(overrides=overrides, defaults=defaults, backend="webhdfs")


def _refuse_unsupported(conn: Connection, extra: dict[str, Any], where: str) -> None:
    refused = []
    if conn.password:
        refused.append(("password", "HTTP basic authentication"))
    if conn.schema:
        refused.append(("schema", "a URL path prefix"))
    verify = extra.get("verify")
    if verify is not None and str(verify).strip().lower() not in ("true", "1", "yes"):
        refused.append(
            ("extra.verify", "a custom CA or disabled certificate checks (set REQUESTS_CA_BUNDLE on every node)")
        )
    for key in ("cert", "key"):
        if extra.get(key):
            refused.append((f"extra.{key}", "mutual TLS"))
    if refused:
        key, what = refused[0]
        raise ConfigError(f"{where}.{key}", f"is not supported for checkpoint storage ({what})")


def _airflow_kerberos_mode() -> bool:
    try:
        from airflow.sdk import conf
    except ImportError:  # pragma: no cover - older SDKs
        return False
    return str(conf.get("core", "security", fallback="")).strip().lower() == "kerberos"


def _has_port(host: str) -> bool:
    if host.startswith("["):  # [v6]:port
        return "]:" in host
    return host.count(":") == 1


class SeaTunnelWebHdfsCheckpointHook(WebHdfsCheckpointHook):
    """The same, on the provider's own ``seatunnel_checkpoint_webhdfs`` type (the fields of
    a ``webhdfs`` connection), so that the UI's *Test* runs this check: a ``webhdfs``
    connection's runs the HDFS provider's, or fails with ``Unknown hook type`` without it."""

    conn_type = "seatunnel_checkpoint_webhdfs"
    hook_name = "SeaTunnel checkpoints on HDFS (WebHDFS connection fields)"
