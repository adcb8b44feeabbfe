"""S3 (and S3-compatible stores) checkpoint storage on a standard ``aws`` connection."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from .base import CheckpointStorageHook, ConnectionStorage, connection_extra, mask_secret_values

if TYPE_CHECKING:
    from airflow.sdk import Connection

log = logging.getLogger(__name__)

SIMPLE_PROVIDER = "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
TEMPORARY_PROVIDER = "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"

#: aws-connection extras that need an AWS session the storage plugin does not build
_UNSUPPORTED = ("role_arn", "profile_name", "assume_role_method", "external_id")


class S3CheckpointHook(CheckpointStorageHook):
    """Checkpoints on S3 through the storage plugin's boto3 client.

    ``aws`` connection, read the way the Amazon provider reads it:

    ==========================================  ===========================================
    connection                                  plugin-config
    ==========================================  ===========================================
    login / password, or extra                  ``fs.s3a.access.key`` / ``fs.s3a.secret.key``
    ``aws_access_key_id`` / ``aws_secret_access_key``  (login/password win when both are set)
    extra ``aws_session_token``                 ``fs.s3a.session.token``
    extra ``region_name``                       ``fs.s3a.endpoint.region``
    extra ``endpoint_url`` (or                  ``fs.s3a.endpoint``, and path-style addressing
    ``service_config.s3.endpoint_url``)         (``config_kwargs.s3.addressing_style: virtual``
                                                keeps virtual-host style)
    extra ``bucket_name`` (or                   ``s3.bucket`` when the config file has none
    ``service_config.s3.bucket_name``)
    extra ``namespace``                         ``namespace`` when the config file has none
    ==========================================  ===========================================

    Without keys the plugin uses boto3's default credential chain (environment, instance
    profile, web identity). ``role_arn`` / ``profile_name`` are refused: the Spark
    executors build their own clients and could not assume the role the same way.
    """

    conn_type = "aws"
    hook_name = "SeaTunnel checkpoints on S3"
    backend = "s3"

    def connection_storage(self, conn: Connection) -> ConnectionStorage:
        extra = connection_extra(conn)
        where = f"connection {conn.conn_id!r}"
        s3_service = (extra.get("service_config") or {}).get("s3") or {}
        overrides: dict[str, Any] = {"storage.type": "s3"}

        access = conn.login or extra.get("aws_access_key_id")
        secret = conn.password or extra.get("aws_secret_access_key")
        if conn.login and extra.get("aws_access_key_id") and conn.login != extra.get("aws_access_key_id"):
            log.warning("%s: both login and extra.aws_access_key_id are set; using login/password", where)
        token = extra.get("aws_session_token")
        mask_secret_values(secret, token)
        if access or secret:
            if not (access and secret):
                raise ConfigError(where, "has an access key id without a secret access key, or the reverse")
            overrides["fs.s3a.access.key"] = access
            overrides["fs.s3a.secret.key"] = secret
            overrides["fs.s3a.aws.credentials.provider"] = TEMPORARY_PROVIDER if token else SIMPLE_PROVIDER
            if token:
                overrides["fs.s3a.session.token"] = token
        for key in _UNSUPPORTED:
            if extra.get(key):
                raise ConfigError(
                    f"{where}.extra.{key}",
                    "is not supported for checkpoint storage (Spark executors build their own S3 clients); "
                    "give static or session keys, or rely on the default credential chain",
                )

        region = extra.get("region_name") or s3_service.get("region_name")
        if region:
            overrides["fs.s3a.endpoint.region"] = region
        endpoint = extra.get("endpoint_url") or s3_service.get("endpoint_url")
        if endpoint:
            overrides["fs.s3a.endpoint"] = endpoint
            style = ((extra.get("config_kwargs") or {}).get("s3") or {}).get("addressing_style")
            overrides["fs.s3a.path.style.access"] = style != "virtual"

        defaults = {}
        bucket = extra.get("bucket_name") or s3_service.get("bucket_name")
        if bucket:
            defaults["s3.bucket"] = bucket
        if extra.get("namespace"):
            defaults["namespace"] = extra["namespace"]
        return ConnectionStorage(overrides=overrides, defaults=defaults, backend="s3")
