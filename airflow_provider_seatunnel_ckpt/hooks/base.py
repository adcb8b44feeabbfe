"""The base checkpoint-storage hook: connection + ``seatunnel.yaml`` in, ``CheckpointStorage`` out.

Hooks are the only Airflow-side code that touches checkpoint storage: operators, sensors
and triggers reach it through a hook and never import boto3, oss2 or hdfs. The storage
plugins (``storage/``) build the clients; a hook only turns an Airflow connection into
the ``plugin-config`` keys those plugins read, merged with a ``config_file`` when both
are given, and registers every secret it reads with Airflow's secret masker.

The merge rule: docs/airflow.md, "Connections"; the hooks' API: docs/airflow.md, "Hooks".
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseHook

from ..config import CheckpointConfig, load_config, read_checkpoint_block
from ..errors import CheckpointError, ConfigError
from ..history import History, read_history
from ..history.reader import attempts as read_attempts
from ..history.reader import job_status as read_job_status
from ..jobfile.secret_keys import is_secret_key
from ..storage import CheckpointKind, CheckpointNotFoundError, create_storage
from ..storage.plugins import hdfs_backend

if TYPE_CHECKING:
    from airflow.sdk import Connection

    from ..storage import CheckpointManifest, CheckpointStorage

log = logging.getLogger(__name__)

#: the engine runs one pipeline per job (engine/run_state.py PIPELINE_ID)
PIPELINE_ID = 1
#: polled by the running driver (engine/driver.py STOP_REQUEST)
STOP_REQUEST = "requests/stop-with-savepoint.json"
#: polled by the running driver too (engine/driver.py SAVEPOINT_REQUEST)
SAVEPOINT_REQUEST = "requests/savepoint.json"

#: keys of each backend's credentials: when a connection supplies any of them, the
#: config file's are dropped (connection and file credentials are never mixed)
CREDENTIAL_KEYS: dict[str, frozenset[str]] = {
    "s3": frozenset(
        {"fs.s3a.access.key", "fs.s3a.secret.key", "fs.s3a.session.token", "fs.s3a.aws.credentials.provider"}
    ),
    "oss": frozenset(
        {
            prefix + key
            for prefix in ("", "seatunnel.hadoop.")
            for key in ("fs.oss.accessKeyId", "fs.oss.accessKeySecret", "fs.oss.securityToken")
        }
    ),
    "webhdfs": frozenset(
        {
            "hdfs.user",
            "seatunnel.hadoop.hadoop.user.name",
            "kerberosPrincipal",
            "kerberosKeytab",
            "kerberosKeytabFilePath",
            "krb5Path",
        }
    ),
    "local": frozenset(),
}

#: test_connection's probe: a job directory no job id of an operator can collide with
PROBE_JOB_PREFIX = "_connection-test-"
PROBE_DOCUMENT = "probe.json"


#: fields of job.json that are bookkeeping between drivers, not status
@dataclass(frozen=True)
class ConnectionStorage:
    """What a connection contributes to the checkpoint configuration."""

    #: plugin-config keys that replace the config file's (endpoint, credentials, storage.type)
    overrides: dict[str, Any] = field(default_factory=dict)
    #: plugin-config keys used only where the config file has none (namespace, bucket)
    defaults: dict[str, Any] = field(default_factory=dict)
    #: the backend (local, webhdfs, s3, oss); None: the plugin-config decides
    backend: str | None = None
    #: ``checkpoint.storage.type`` when the connection names one (a third-party plugin)
    storage_type: str | None = None


@dataclass(frozen=True)
class FailureStreak:
    """Consecutive failed run attempts, newest first, that completed no new checkpoint."""

    failed_attempts: int
    attempts_total: int
    last_error: str | None
    latest_checkpoint_id: int | None
    latest_location: str | None


class CheckpointStorageHook(BaseHook):
    """Checkpoint storage from a ``seatunnel.yaml`` alone (no connection), and the base of
    the per-backend hooks, which add what their Airflow connection type carries.

    :param storage_conn_id: an Airflow connection of the hook's type (optional here)
    :param config_file: a ``seatunnel.yaml`` path, YAML text or a mapping (optional)
    :param connection: an already fetched connection (the factory passes it)
    """

    conn_name_attr = "storage_conn_id"
    default_conn_name = ""
    conn_type = ""
    hook_name = "SeaTunnel checkpoint storage (config file)"
    #: backend this hook's connection type stands for (local, webhdfs, s3, oss)
    backend: str | None = None

    def __init__(
        self,
        storage_conn_id: str | None = None,
        config_file: str | os.PathLike | Mapping[str, Any] | None = None,
        *,
        connection: Connection | None = None,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        self.storage_conn_id = storage_conn_id or None
        self.config_file = config_file
        self._connection = connection

    # ---- configuration ----------------------------------------------------------------------
    def connection_storage(self, conn: Connection) -> ConnectionStorage:
        """Turn this hook's connection into plugin-config keys (per backend)."""
        raise ConfigError(
            f"connection {conn.conn_id!r}",
            f"a {type(self).__name__} cannot read connections of type {conn.conn_type!r}",
        )

    @cached_property
    def connection(self) -> Connection | None:
        if self._connection is None and self.storage_conn_id:
            self._connection = self.get_connection(self.storage_conn_id)
        return self._connection

    def _sources(self) -> str:
        parts = []
        if self.config_file is not None:
            source = self.config_file
            shown = (
                "<mapping>"
                if isinstance(source, Mapping)
                else ("<inline YAML>" if "\n" in str(source) else str(source))
            )
            parts.append(f"config file {shown}")
        if self.storage_conn_id:
            parts.append(f"connection {self.storage_conn_id!r}")
        return " + ".join(parts) or "built-in defaults"

    @cached_property
    def config(self) -> CheckpointConfig:
        """The effective checkpoint configuration, credentials included (never log it:
        use ``config.masked()``). Raises ``ConfigError`` naming the key and the sources."""
        if self.config_file is None:
            block: dict[str, Any] = {}
            prefix = "seatunnel.engine.checkpoint"
        else:
            block, prefix, warnings = read_checkpoint_block(self.config_file)
            for line in warnings:
                log.warning("%s", line)
        conn = self.connection
        if conn is not None:
            block = self._merge(block, prefix, self.connection_storage(conn))
        document = _nest(prefix, block)
        try:
            config = load_config(document)
        except ConfigError as err:
            if conn is None:
                raise
            raise ConfigError(err.key, f"{err.problem} (from {self._sources()})") from None
        _mask_plugin_secrets(config.storage.plugin_config)
        return config

    def _merge(self, block: dict[str, Any], prefix: str, contribution: ConnectionStorage) -> dict[str, Any]:
        storage = block.get("storage") or {}
        if not isinstance(storage, Mapping):
            raise ConfigError(f"{prefix}.storage", "expected a mapping")
        storage = dict(storage)
        file_plugin = storage.get("plugin-config") or {}
        if not isinstance(file_plugin, Mapping):
            raise ConfigError(f"{prefix}.storage.plugin-config", "expected a mapping")
        file_plugin = dict(file_plugin)

        file_backend = _backend_of(storage.get("type"), file_plugin, f"{prefix}.storage")
        conn_backend = contribution.backend or _backend_of(
            contribution.storage_type, contribution.overrides, f"connection {self.storage_conn_id!r}"
        )
        if file_backend and conn_backend and file_backend != conn_backend:
            raise ConfigError(
                f"{prefix}.storage",
                f"the config file selects {file_backend!r} storage but connection {self.storage_conn_id!r} "
                f"(type {self.connection.conn_type!r}) is for {conn_backend!r} storage; "
                "remove the file's storage.type / fs.defaultFS or use a matching connection",
            )
        backend = conn_backend or file_backend

        merged = dict(file_plugin)
        credential_keys = CREDENTIAL_KEYS.get(backend or "", frozenset())
        if credential_keys & contribution.overrides.keys():
            for key in credential_keys:
                merged.pop(key, None)
        for key, value in contribution.defaults.items():
            if merged.get(key) in (None, ""):
                merged[key] = value
        merged.update(contribution.overrides)

        storage_type = contribution.storage_type
        if storage_type is None:
            keep_file_type = file_backend is not None and file_backend == conn_backend
            storage_type = storage.get("type") if keep_file_type and storage.get("type") else "hdfs"
        storage["type"] = storage_type
        storage["plugin-config"] = merged
        return {**block, "storage": storage}

    def effective_config_document(self) -> dict[str, Any]:
        """The effective configuration as a ``seatunnel.yaml`` document (with secrets:
        for the 0600 file handed to the Spark driver, nothing else)."""
        body = self.config.model_dump(mode="json", by_alias=True)
        return {"seatunnel": {"engine": {"checkpoint": body}}}

    # ---- storage --------------------------------------------------------------------------------
    @cached_property
    def storage(self) -> CheckpointStorage:
        return create_storage(self.config.storage)

    def get_conn(self) -> CheckpointStorage:
        """The ``CheckpointStorage`` (built once per hook; clients are created lazily)."""
        return self.storage

    def describe(self, job_id: str = "") -> str:
        """Where checkpoints live (backend and path, never credentials)."""
        return self.storage.describe(job_id)

    def test_connection(self) -> tuple[bool, str]:
        """Check what a job needs of its storage: the configuration is valid, the
        credentials are accepted, the bucket exists and the namespace is writable (a small
        probe document is written, read back and deleted). Local storage is checked on
        the host running this test without creating anything: a namespace that is missing
        but creatable passes, one that cannot be created fails.

        Airflow runs a UI/API test on the API server (or, queued through
        ``/connections/enqueue-test``, on a worker): the message names the host, because
        for local storage that is not necessarily a host the job runs on."""
        host = socket.gethostname()
        secrets: list[str] = []
        try:
            secrets = _plugin_secrets(self.config.storage.plugin_config)
            storage = self.storage
            if _is_local(storage):
                return self._test_local(storage, host)
            location = self._probe(storage, host)
            jobs = storage.list_jobs()
        except Exception as err:  # any failure is the answer, not a crash of the test
            return False, _scrub(f"{type(err).__name__}: {err} (checked from host {host})", secrets)
        return (
            True,
            f"wrote, read and deleted a probe document in {location}; {len(jobs)} job(s) (checked from host {host})",
        )

    def _probe(self, storage: CheckpointStorage, host: str) -> str:
        """Write, read back and delete a document where jobs keep theirs."""
        job_id = f"{PROBE_JOB_PREFIX}{uuid.uuid4().hex[:12]}"
        try:
            storage.write_document(job_id, PROBE_DOCUMENT, {"by": "airflow test_connection", "host": host})
            if storage.read_document(job_id, PROBE_DOCUMENT) is None:
                raise CheckpointError(
                    f"{storage.describe(job_id)}: a probe document written there could not be read back"
                )
        finally:
            storage.delete_checkpoint(job_id)
        return storage.describe()

    def _test_local(self, storage: CheckpointStorage, host: str) -> tuple[bool, str]:
        namespace = storage.layout.namespace.rstrip("/") or "/"  # type: ignore[attr-defined]
        where = (
            f"local storage checked on host {host}, the host running this test (the API server for a UI "
            "test), not the workers and Spark nodes that run the job: they need the same directory, "
            "e.g. a shared mount"
        )
        if os.path.isdir(namespace):
            if not os.access(namespace, os.W_OK | os.X_OK):
                return False, f"namespace {namespace} is not writable by uid {os.getuid()} ({where})"
            location = self._probe(storage, host)
            return True, f"wrote, read and deleted a probe document in {location} ({where})"
        if os.path.lexists(namespace):
            return False, f"namespace {namespace} exists but is not a directory ({where})"
        parent = os.path.dirname(namespace)
        while parent != "/" and not os.path.lexists(parent):
            parent = os.path.dirname(parent)
        if not os.path.isdir(parent) or not os.access(parent, os.W_OK | os.X_OK):
            return False, (
                f"namespace {namespace} does not exist and cannot be created: {parent} is not a writable "
                f"directory for uid {os.getuid()} ({where})"
            )
        return True, f"namespace {namespace} does not exist yet; the first job creates it under {parent} ({where})"

    # ---- checkpoints ------------------------------------------------------------------------
    def list_checkpoints(self, job_id: str, pipeline_id: int = PIPELINE_ID) -> list[dict[str, Any]]:
        """Every checkpoint and savepoint directory of the job's pipeline, by id."""
        return [
            {
                "checkpoint_id": entry.checkpoint_id,
                "savepoint": entry.savepoint,
                "completed": entry.completed,
                "location": entry.location,
            }
            for entry in self.storage.list_checkpoint_entries(job_id, pipeline_id)
        ]

    def get_latest_checkpoint_id(self, job_id: str, pipeline_id: int = PIPELINE_ID) -> int | None:
        """The highest completed checkpoint id that passes every check, or None."""
        latest = self.storage.get_latest_checkpoint_by_job_id_and_pipeline_id(job_id, pipeline_id)
        return latest.checkpoint_id if latest is not None else None

    def inspect(
        self, job_id: str, checkpoint_id: int | None = None, pipeline_id: int = PIPELINE_ID, savepoint: bool = False
    ) -> dict[str, Any] | None:
        """Summary of a checkpoint's manifest (the latest valid one by default); None when
        there is none. JSON-safe and free of state bytes and secrets: fit for XCom."""
        if checkpoint_id is None:
            latest = self.storage.get_latest_checkpoint_by_job_id_and_pipeline_id(job_id, pipeline_id)
            if latest is None:
                return None
            manifest = latest.manifest
        else:
            try:
                manifest = self.storage.read_manifest(job_id, pipeline_id, checkpoint_id, savepoint)
            except CheckpointNotFoundError:
                return None
        return self._summary(manifest)

    def _summary(self, manifest: CheckpointManifest) -> dict[str, Any]:
        stats = dict(manifest.statistics)
        props = dict(manifest.properties)
        return {
            "job_id": manifest.job_id,
            "pipeline_id": manifest.pipeline_id,
            "checkpoint_id": manifest.checkpoint_id,
            "kind": manifest.kind.value,
            "location": self.storage.describe(
                manifest.job_id, manifest.pipeline_id, manifest.checkpoint_id, manifest.kind == CheckpointKind.SAVEPOINT
            ),
            "trigger_ms": manifest.trigger_ms,
            "complete_ms": manifest.complete_ms,
            "duration_ms": stats.get("duration_ms"),
            "rows": stats.get("rows"),
            "state_bytes": manifest.state_size,
            "subtasks": len(manifest.subtask_states),
            "attempt": props.get("attempt"),
            "parallelism": props.get("parallelism"),
        }

    def verify(self, job_id: str, checkpoint_id: int | None = None, pipeline_id: int = PIPELINE_ID) -> list[str]:
        """Re-check manifests and state checksums (one checkpoint, or every completed one);
        returns the problems found, one line each."""
        if checkpoint_id is not None:
            return self.storage.verify_checkpoint(job_id, pipeline_id, checkpoint_id)
        problems: list[str] = []
        for entry in self.storage.list_checkpoint_entries(job_id, pipeline_id):
            if entry.completed:
                problems += self.storage.verify_checkpoint(job_id, pipeline_id, entry.checkpoint_id, entry.savepoint)
        return problems

    def delete(self, job_id: str, checkpoint_id: int | None = None, pipeline_id: int | None = None) -> None:
        """Delete the whole job (default), a pipeline's checkpoints, or one checkpoint."""
        if checkpoint_id is not None and pipeline_id is None:
            pipeline_id = PIPELINE_ID
        self.storage.delete_checkpoint(job_id, pipeline_id, checkpoint_id)

    # ---- job documents ----------------------------------------------------------------------
    def get_job_status(self, job_id: str) -> dict[str, Any] | None:
        """``job.json`` (status, attempt, final/last checkpoint ids, error), or None."""
        return read_job_status(self.storage, job_id)

    def get_attempts(self, job_id: str) -> list[dict[str, Any]]:
        """Every run attempt record (``attempts/*.json``), oldest first."""
        return read_attempts(self.storage, job_id)

    def get_history(self, job_id: str) -> History:
        """The job's checkpoint history (``history/``): status, attempts, every
        checkpoint's figures newest first, restores (see docs/history.md)."""
        return read_history(self.storage, job_id)

    def request_savepoint(self, job_id: str, by: str = "airflow") -> int:
        """Ask the running driver to take a savepoint and stop (it polls for this); when
        it was asked, in epoch ms."""
        return self._request(job_id, STOP_REQUEST, by)

    def trigger_savepoint(self, job_id: str, by: str = "airflow") -> int:
        """Ask the running driver to take a savepoint and keep running; when it was
        asked, in epoch ms (the savepoint's history entry is triggered after it)."""
        return self._request(job_id, SAVEPOINT_REQUEST, by)

    def _request(self, job_id: str, path: str, by: str) -> int:
        requested_ms = int(time.time() * 1000)
        self.storage.write_document(job_id, path, {"requested_ms": requested_ms, "by": by})
        return requested_ms

    # ---- derived views for operators and sensors --------------------------------------------
    def failure_streak(self, job_id: str, pipeline_id: int = PIPELINE_ID) -> FailureStreak:
        """Count the newest consecutive attempts that failed without completing a new
        checkpoint. An attempt made progress when it recorded completed checkpoints, or
        when the next attempt (or, for the newest one, storage) holds a newer checkpoint
        than the one it restored from: that also covers a driver killed before it could
        write its outcome. A finished attempt ends the streak."""
        attempts = self.get_attempts(job_id)
        latest = self.storage.get_latest_checkpoint_by_job_id_and_pipeline_id(job_id, pipeline_id)
        latest_id = latest.checkpoint_id if latest is not None else None
        failed, last_error = 0, None
        for index in range(len(attempts) - 1, -1, -1):
            attempt = attempts[index]
            if attempt.get("outcome") == "finished":
                break
            restored = attempt.get("restored_from") or 0
            after = attempts[index + 1].get("restored_from") if index + 1 < len(attempts) else latest_id
            if int(attempt.get("checkpoints_completed") or 0) > 0 or (after or 0) > restored:
                break
            failed += 1
            if last_error is None:
                last_error = attempt.get("error") or (
                    "the driver stopped without recording an outcome (killed?)"
                    if attempt.get("outcome") == "running"
                    else None
                )
        location = self.storage.describe(job_id, pipeline_id, latest_id) if latest_id is not None else None
        return FailureStreak(failed, len(attempts), last_error, latest_id, location)

    def check_checkpoint(
        self, job_id: str, newer_than: int | None = None, wait_for_final: bool = False
    ) -> dict[str, Any] | None:
        """What a sensor waits for: the job's final checkpoint (``wait_for_final``), or its
        latest completed checkpoint with an id above ``newer_than`` (any, when None).
        Returns the checkpoint summary, or None when it is not there yet."""
        if wait_for_final:
            if self.config.deletes_on_finish:  # waiting would last until the timeout
                raise ConfigError(
                    "externalized-retention",
                    "delete-on-finish deletes the job when it finishes: there "
                    "is no final checkpoint to wait for; wait for the task that runs the job, or use "
                    "retain-on-finish",
                )
            job = self.get_job_status(job_id)
            if not job or job.get("status") != "finished" or job.get("final_checkpoint_id") is None:
                return None
            final_id = int(job["final_checkpoint_id"])
            if newer_than is not None and final_id <= newer_than:
                return None
            summary = self.inspect(job_id, final_id) or {
                # removed since (by hand); job.json still records which it was
                "job_id": job_id,
                "pipeline_id": PIPELINE_ID,
                "checkpoint_id": final_id,
                "kind": "final",
                "location": None,
            }
            return {**summary, "job_status": "finished", "attempt": job.get("attempt")}
        summary = self.inspect(job_id)
        if summary is None or (newer_than is not None and summary["checkpoint_id"] <= newer_than):
            return None
        return summary


# --------------------------------------------------------------------------- helpers


def _nest(prefix: str, block: Mapping[str, Any]) -> dict[str, Any]:
    if prefix == "seatunnel.engine.checkpoint":
        return {"seatunnel": {"engine": {"checkpoint": dict(block)}}}
    return {"checkpoint": dict(block)}


def _backend_of(storage_type: Any, plugin_config: Mapping[str, Any], where: str) -> str | None:
    """The backend a storage block selects, or None when it leaves that open."""
    name = str(storage_type).strip().lower() if storage_type else "hdfs"
    if name == "localfile":
        return "local"
    if name != "hdfs":
        return name  # memory, or a third-party plugin
    if plugin_config.get("storage.type") is None and plugin_config.get("fs.defaultFS") is None:
        return None
    return hdfs_backend(plugin_config, f"{where}.plugin-config")


def _plugin_secrets(plugin_config: Mapping[str, Any]) -> list[str]:
    return [str(v) for k, v in plugin_config.items() if is_secret_key(str(k)) and v not in (None, "")]


def _mask_plugin_secrets(plugin_config: Mapping[str, Any]) -> None:
    secrets = _plugin_secrets(plugin_config)
    if secrets:
        mask_secret_values(*secrets)


def _scrub(text: str, secrets: list[str]) -> str:
    """Our own errors never carry secrets; a client library's might echo one."""
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= 4:
            text = text.replace(secret, "***")
    return text


def _is_local(storage: Any) -> bool:
    return getattr(getattr(storage, "fs", None), "backend", None) == "local" and hasattr(storage, "layout")


def mask_secret_values(*values: Any) -> None:
    """Register values with Airflow's secret masker (task logs, rendered fields)."""
    from airflow.sdk.log import mask_secret

    for value in values:
        if value not in (None, ""):
            mask_secret(str(value))


def connection_extra(conn: Connection) -> dict[str, Any]:
    """The connection's extra as a dict (a ConfigError naming the connection if it is
    not a JSON object)."""
    try:
        extra = conn.extra_dejson
    except Exception:  # the SDK raises different types across versions
        raise ConfigError(f"connection {conn.conn_id!r}.extra", "is not valid JSON") from None
    if not isinstance(extra, dict):
        raise ConfigError(f"connection {conn.conn_id!r}.extra", "must be a JSON object")
    return extra
