"""S3 (and S3-compatible stores) checkpoint storage on a standard ``aws`` connection."""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..storage.fs_s3 import S3FileSystem
from .base import CheckpointStorageHook, ConnectionStorage, connection_extra, mask_secret_values

if TYPE_CHECKING:
    from airflow.sdk import Connection

    from ..storage import CheckpointStorage

log = logging.getLogger(__name__)

SIMPLE_PROVIDER = "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
TEMPORARY_PROVIDER = "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
AMAZON_PROVIDER_PIP = "pip install apache-airflow-providers-amazon"

#: aws-connection extras whose credentials only the Amazon provider's session factory builds
SESSION_EXTRAS = ("role_arn", "profile_name", "assume_role_method", "assume_role_kwargs")


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

    With ``apache-airflow-providers-amazon`` installed, the connection is read by its
    ``AwsConnectionWrapper`` and credentials come from its session factory (the
    ``[aws] session_factory`` one when configured): ``role_arn`` with
    ``assume_role_method`` ``assume_role`` / ``assume_role_with_saml`` /
    ``assume_role_with_web_identity`` and ``assume_role_kwargs``, ``profile_name``,
    ``session_kwargs``. Airflow-side storage (operators, sensors, triggers,
    ``test_connection``) then signs with that session's refreshable credentials; the
    Spark job, which cannot run Airflow code, gets the session's credentials of the moment
    as ``fs.s3a.access.key`` / ``secret.key`` / ``session.token`` (temporary ones for an
    assumed role: valid for the role session, ``assume_role_kwargs.DurationSeconds``).
    Without the Amazon provider those extras are refused with the ``pip install`` to run.

    Without keys the plugin uses boto3's default credential chain (environment, instance
    profile, web identity), on the Airflow worker and on every Spark node alike.
    """

    conn_type = "aws"
    hook_name = "SeaTunnel checkpoints on S3"
    backend = "s3"

    # ---- connection -> plugin-config ------------------------------------------------------------
    def connection_storage(self, conn: Connection) -> ConnectionStorage:
        extra = connection_extra(conn)
        amazon = _amazon_provider()
        if amazon is None:
            return self._read_by_hand(conn, extra)
        return self._read_with_amazon_provider(conn, extra, *amazon)

    def _read_with_amazon_provider(
        self, conn: Connection, extra: dict[str, Any], wrapper_class: Any, factory_class: Any, base_factory: Any
    ) -> ConnectionStorage:
        where = f"connection {conn.conn_id!r}"
        try:
            # from_connection_metadata: the wrapper reads the fields as an ``aws`` connection
            # (our seatunnel_checkpoint_aws type has the same fields) without a type warning
            wrapper = wrapper_class.from_connection_metadata(
                conn_id=conn.conn_id, login=conn.login, password=conn.password, extra=extra
            )
        except (NotImplementedError, ValueError, TypeError) as err:
            raise ConfigError(f"{where}.extra", f"the Amazon provider cannot read it: {err}") from None
        _refuse_verify(where, wrapper.verify)
        s3_service = wrapper.get_service_config("s3")
        overrides: dict[str, Any] = {"storage.type": "s3"}
        mask_secret_values(wrapper.aws_secret_access_key, wrapper.aws_session_token)
        needs_session = bool(wrapper.role_arn or wrapper.profile_name) or factory_class is not base_factory
        if needs_session:
            self._wrapper = wrapper
            self._session_factory_class = factory_class
            overrides.update(self._frozen_credentials(where))
        elif wrapper.aws_access_key_id or wrapper.aws_secret_access_key:
            if not (wrapper.aws_access_key_id and wrapper.aws_secret_access_key):
                raise ConfigError(where, "has an access key id without a secret access key, or the reverse")
            overrides.update(
                _static_keys(wrapper.aws_access_key_id, wrapper.aws_secret_access_key, wrapper.aws_session_token)
            )
        if wrapper.region_name:
            overrides["fs.s3a.endpoint.region"] = wrapper.region_name
        endpoint = wrapper.get_service_endpoint_url("s3")
        if endpoint:
            overrides["fs.s3a.endpoint"] = endpoint
            style = (getattr(wrapper.botocore_config, "s3", None) or {}).get("addressing_style")
            overrides["fs.s3a.path.style.access"] = style != "virtual"
        return ConnectionStorage(overrides=overrides, defaults=_location(extra, s3_service), backend="s3")

    def _read_by_hand(self, conn: Connection, extra: dict[str, Any]) -> ConnectionStorage:
        """The Amazon provider's rules for static keys, for installs without it."""
        where = f"connection {conn.conn_id!r}"
        for key in SESSION_EXTRAS:
            if extra.get(key):
                raise ConfigError(
                    f"{where}.extra.{key}",
                    f"needs the Amazon provider's session factory: {AMAZON_PROVIDER_PIP}",
                )
        _refuse_verify(where, extra.get("verify"))
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
            overrides.update(_static_keys(access, secret, token))
        region = extra.get("region_name") or s3_service.get("region_name")
        if region:
            overrides["fs.s3a.endpoint.region"] = region
        endpoint = s3_service.get("endpoint_url") or extra.get("endpoint_url")
        if endpoint:
            overrides["fs.s3a.endpoint"] = endpoint
            style = ((extra.get("config_kwargs") or {}).get("s3") or {}).get("addressing_style")
            overrides["fs.s3a.path.style.access"] = style != "virtual"
        return ConnectionStorage(overrides=overrides, defaults=_location(extra, s3_service), backend="s3")

    # ---- the Amazon provider's session --------------------------------------------------------
    _wrapper: Any = None
    _session_factory_class: Any = None

    @property
    def uses_provider_session(self) -> bool:
        """True when credentials come from the Amazon provider's session factory."""
        self.config  # noqa: B018 - reading the connection decides it
        return self._wrapper is not None

    @cached_property
    def aws_session(self) -> Any:
        """The boto3 Session the Amazon provider builds for this connection (assumed-role
        credentials in it refresh themselves)."""
        if self._wrapper is None:
            self.config  # noqa: B018 - reading the connection sets the wrapper
        if self._wrapper is None:
            raise ConfigError(f"connection {self.storage_conn_id!r}", "carries no role, profile or session factory")
        factory = self._session_factory_class(conn=self._wrapper, region_name=self._wrapper.region_name)
        return factory.create_session()

    def _frozen_credentials(self, where: str) -> dict[str, Any]:
        """The session's credentials of the moment, as plugin-config keys (for the Spark job)."""
        try:
            credentials = self.aws_session.get_credentials()
            frozen = credentials.get_frozen_credentials() if credentials is not None else None
        except Exception as err:  # botocore/STS raise many types; one line for the user
            raise ConfigError(
                where, f"the Amazon provider's session could not get credentials: {type(err).__name__}: {err}"
            ) from None
        if frozen is None or not frozen.access_key:
            raise ConfigError(where, "the Amazon provider's session found no credentials")
        mask_secret_values(frozen.secret_key, frozen.token)
        expiry = getattr(credentials, "_expiry_time", None)
        if expiry is not None:
            log.info(
                "%s: the Spark job gets temporary credentials (%s) valid until %s; they are not refreshed "
                "inside the job (raise assume_role_kwargs.DurationSeconds for longer jobs)",
                where,
                getattr(credentials, "method", "temporary"),
                expiry.isoformat(),
            )
        return _static_keys(frozen.access_key, frozen.secret_key, frozen.token)

    def effective_config_document(self) -> dict[str, Any]:
        document = super().effective_config_document()
        if self.uses_provider_session:
            # fresh at submit time: the session refreshed assumed-role credentials if they were due
            plugin = document["seatunnel"]["engine"]["checkpoint"]["storage"]["plugin-config"]
            for key in ("fs.s3a.access.key", "fs.s3a.secret.key", "fs.s3a.session.token"):
                plugin.pop(key, None)
            plugin.update(self._frozen_credentials(f"connection {self.storage_conn_id!r}"))
        return document

    @cached_property
    def storage(self) -> CheckpointStorage:
        storage = super().storage
        if self.uses_provider_session and storage.fs.backend == "s3":  # type: ignore[attr-defined]
            storage.fs = SessionS3FileSystem.wrap(storage.fs, lambda: self.aws_session)  # type: ignore[attr-defined]
        return storage


class SeaTunnelS3CheckpointHook(S3CheckpointHook):
    """The same, on the provider's own ``seatunnel_checkpoint_aws`` type: the fields of
    an ``aws`` connection, and the UI's *Test* runs this checkpoint-storage check (an
    ``aws`` connection's *Test* runs the Amazon provider's STS check)."""

    conn_type = "seatunnel_checkpoint_aws"
    hook_name = "SeaTunnel checkpoints on S3 (AWS connection fields)"


def _static_keys(access: str, secret: str, token: str | None) -> dict[str, Any]:
    keys = {
        "fs.s3a.access.key": access,
        "fs.s3a.secret.key": secret,
        "fs.s3a.aws.credentials.provider": TEMPORARY_PROVIDER if token else SIMPLE_PROVIDER,
    }
    if token:
        keys["fs.s3a.session.token"] = token
    return keys


def _refuse_verify(where: str, verify: Any) -> None:
    # the Spark nodes' boto3 clients verify TLS their own way; a per-connection CA or
    # verify=false that only the Airflow side honoured would fail the job at its first write
    if verify is not None and verify is not True and str(verify).lower() != "true":
        raise ConfigError(
            f"{where}.extra.verify",
            "is not supported for checkpoint storage; remove it and give every node the CA through AWS_CA_BUNDLE",
        )


def _location(extra: dict[str, Any], s3_service: dict[str, Any]) -> dict[str, Any]:
    defaults = {}
    bucket = s3_service.get("bucket_name") or extra.get("bucket_name")
    if bucket:
        defaults["s3.bucket"] = bucket
    if extra.get("namespace"):
        defaults["namespace"] = extra["namespace"]
    return defaults


def _amazon_provider() -> tuple[Any, Any, Any] | None:
    """(AwsConnectionWrapper, the configured SessionFactory, BaseSessionFactory), or None
    when apache-airflow-providers-amazon is not installed."""
    try:
        from airflow.providers.amazon.aws.hooks.base_aws import BaseSessionFactory, resolve_session_factory
        from airflow.providers.amazon.aws.utils.connection_wrapper import AwsConnectionWrapper
    except ImportError:
        return None
    return AwsConnectionWrapper, resolve_session_factory(), BaseSessionFactory


class SessionS3FileSystem(S3FileSystem):
    """The storage plugin's S3 file system, signing with a boto3 Session built elsewhere
    (here: the Amazon provider's, whose assumed-role credentials refresh themselves).

    Everything but the session is the plugin's; a pickled copy (the only way storage
    leaves this process) is a plain ``S3FileSystem`` with the static keys it was built
    from, since a session does not travel."""

    _session_factory: Callable[[], Any]

    @classmethod
    def wrap(cls, base: Any, session_factory: Callable[[], Any]) -> SessionS3FileSystem:
        fs = cls.__new__(cls)
        fs.__dict__.update(base.__getstate__())
        fs._session_factory = session_factory
        return fs

    def __reduce__(self) -> tuple[Any, ...]:
        state = self.__getstate__()
        state.pop("_session_factory", None)
        return (_plain_s3_filesystem, (state,))

    def _new_session(self) -> Any:
        return self._session_factory()


def _plain_s3_filesystem(state: dict[str, Any]) -> Any:
    fs = S3FileSystem.__new__(S3FileSystem)
    fs.__dict__.update(state)
    return fs
