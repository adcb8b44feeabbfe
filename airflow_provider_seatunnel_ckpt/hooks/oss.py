"""Aliyun OSS checkpoint storage on a standard ``oss`` connection."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from .base import CheckpointStorageHook, ConnectionStorage, connection_extra, mask_secret_values

if TYPE_CHECKING:
    from airflow.sdk import Connection


class OssCheckpointHook(CheckpointStorageHook):
    """Checkpoints on Aliyun OSS through the storage plugin's oss2 client.

    ``oss`` connection, read as the Alibaba provider's ``OSSHook`` reads it, plus a few
    keys of our own:

    ===================================  ====================================================
    connection                           plugin-config
    ===================================  ====================================================
    extra ``auth_type``                  ``AK`` (the only one the Alibaba provider knows);
                                         another value is refused
    extra ``access_key_id``              ``fs.oss.accessKeyId`` (login also accepted)
    extra ``access_key_secret``          ``fs.oss.accessKeySecret`` (password also accepted)
    extra ``security_token``             ``fs.oss.securityToken`` (STS; ours)
    extra ``region``                     ``fs.oss.region``; also the endpoint
                                         ``https://oss-<region>.aliyuncs.com`` when
                                         ``endpoint`` is not given
    extra ``endpoint``                   ``fs.oss.endpoint`` (ours: OSS-compatible stores)
    schema (the provider's default       ``oss.bucket`` when the config file has none
    bucket), or extra ``bucket_name``
    extra ``namespace``                  ``namespace`` when the config file has none
    ===================================  ====================================================
    """

    conn_type = "oss"
    hook_name = "SeaTunnel checkpoints on Aliyun OSS"
    backend = "oss"

    def connection_storage(self, conn: Connection) -> ConnectionStorage:
        extra = connection_extra(conn)
        where = f"connection {conn.conn_id!r}"
        auth_type = extra.get("auth_type")
        if auth_type not in (None, "", "AK"):
            raise ConfigError(
                f"{where}.extra.auth_type",
                f"{auth_type!r} is not supported; 'AK' (access key id and secret) is, as in the Alibaba provider",
            )
        overrides: dict[str, Any] = {"storage.type": "oss"}
        access = extra.get("access_key_id") or conn.login
        secret = extra.get("access_key_secret") or conn.password
        token = extra.get("security_token")
        mask_secret_values(secret, token)
        if access or secret:
            if not (access and secret):
                raise ConfigError(where, "has an access_key_id without an access_key_secret, or the reverse")
            overrides["fs.oss.accessKeyId"] = access
            overrides["fs.oss.accessKeySecret"] = secret
            if token:
                overrides["fs.oss.securityToken"] = token
        region = extra.get("region")
        if region:
            overrides["fs.oss.region"] = region
        endpoint = extra.get("endpoint") or (f"https://oss-{region}.aliyuncs.com" if region else None)
        if endpoint:
            overrides["fs.oss.endpoint"] = endpoint
        defaults = {}
        bucket = conn.schema or extra.get("bucket_name")
        if bucket:
            defaults["oss.bucket"] = bucket
        if extra.get("namespace"):
            defaults["namespace"] = extra["namespace"]
        return ConnectionStorage(overrides=overrides, defaults=defaults, backend="oss")


class SeaTunnelOssCheckpointHook(OssCheckpointHook):
    """The same, on the provider's own ``seatunnel_checkpoint_oss`` type (the fields of an
    ``oss`` connection), so that the UI's *Test* runs this check: an ``oss`` connection's
    runs the Alibaba provider's, or fails with ``Unknown hook type`` without it."""

    conn_type = "seatunnel_checkpoint_oss"
    hook_name = "SeaTunnel checkpoints on Aliyun OSS (OSS connection fields)"
