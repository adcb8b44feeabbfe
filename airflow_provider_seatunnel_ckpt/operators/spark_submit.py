"""``CheckpointedSparkSubmitOperator``: spark-submit a checkpointed job; a retry resumes it."""

from __future__ import annotations

import hashlib
import os
import re
import signal
import sys
import tempfile
from collections.abc import Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

# the function, not the module: BaseOperator's metaclass swaps a module-level `warnings`
# for one that adds 2 to every stacklevel, and _dag_file_level counts the frames itself
from warnings import warn

import jinja2
import yaml
from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import Asset, AssetAlias
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from ..engine.driver_jit import with_quick_jit
from ..engine.jvm_archive import with_driver_archive
from ..errors import ConfigError
from ..hooks import CheckpointStorageHook, get_checkpoint_hook
from ..jobfile.documents import looks_like_hocon
from ..storage.layout import validate_job_id
from ..ui import VIEW_XCOM_KEY
from ..ui.link import CheckpointViewLink
from .assets import alias_name, sink_asset_uri
from .cluster_mode import WAIT_KEY, check_cluster_conf, runs_on_yarn_cluster, shipped_files
from .engine_archive import engine_archive

if TYPE_CHECKING:
    from airflow.sdk import Context
    from airflow.sdk.definitions.mappedoperator import OperatorPartial

#: the spark-submit application: ``spark_app.py JOB_FILE --config .. --job-id .. --restore ..``
SPARK_APP = Path(__file__).resolve().parent.parent / "engine" / "spark_app.py"
#: engine exit code for invalid input (config, job file, arguments): retrying cannot help
EXIT_INVALID_INPUT = 2
RESTORE_MODES = ("auto", "latest", "none")
#: on_kill: seconds the engine gets to stop after SIGTERM, then seconds to reap it after
#: SIGKILL. Together under the 5 s Airflow's task supervisor waits before it SIGKILLs the
#: task process itself (and with it any chance to stop spark-submit's children).
KILL_GRACE_S = 3.0
KILL_REAP_S = 1.0
#: a ``job_file`` ending so is read as a Jinja template (as ``.sql`` for SparkSqlOperator);
#: these are the job-file formats the engine parses (YAML, and JSON as a subset of it)
JOB_FILE_EXTENSIONS = (".yaml", ".yml", ".json", ".conf")
#: Spark's own log level unless ``conf`` sets ``spark.log.level``
DEFAULT_SPARK_LOG_LEVEL = "WARN"

_JOB_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_.=@-]")


def default_job_id(dag_id: str, task_id: str, run_id: str, map_index: int = -1) -> str:
    """``{dag_id}.{task_id}.{run_id}`` made storage-safe and stable across retries.

    Characters a job id may not hold (``:``, ``+``, ``/``, spaces...) become ``_`` and a
    short hash of the original is appended, so two runs never share a job id.
    """
    raw = f"{dag_id}.{task_id}.{run_id}" + (f".{map_index}" if map_index is not None and map_index >= 0 else "")
    safe = _JOB_ID_UNSAFE.sub("_", raw)
    if safe[:1] in (".", "-"):
        safe = "_" + safe[1:]
    if safe != raw or len(safe) > 200:
        safe = f"{safe[:190]}-{hashlib.sha256(raw.encode('utf-8')).hexdigest()[:8]}"
    return validate_job_id(safe)


def _check_restore(restore: Any) -> str:
    value = str(restore).strip().lower()
    if value in RESTORE_MODES or value.isdigit():
        return value
    raise ValueError(f"restore must be one of {', '.join(RESTORE_MODES)} or a checkpoint id, got {restore!r}")


def _is_literal(value: Any) -> bool:
    """A value known when the DAG is parsed: not Jinja, not an XComArg."""
    return isinstance(value, int) or (isinstance(value, str) and "{{" not in value and "{%" not in value)


#: environment variables of the Airflow worker that spark-submit does not inherit:
#: connections, variables and Airflow's own configuration (database URL, fernet key...)
SCRUBBED_ENV_PREFIXES = ("AIRFLOW_CONN_", "AIRFLOW_VAR_", "AIRFLOW__")


def spark_submit_environment(env_vars: Mapping[str, Any] | None = None) -> dict[str, str]:
    """The environment spark-submit runs with: the worker's, minus Airflow's secrets,
    plus the operator's ``env_vars``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(SCRUBBED_ENV_PREFIXES)}
    env.update({str(k): str(v) for k, v in (env_vars or {}).items()})
    return env


class _EngineSubmitHook(SparkSubmitHook):
    """SparkSubmitHook whose spark-submit process gets :func:`spark_submit_environment`
    instead of a copy of the worker's whole environment: the driver and the executors
    run user code, which has no business with Airflow's connections or config."""

    def _build_spark_common_args(self) -> list[str]:
        args = super()._build_spark_common_args()
        self._env = None  # submit() below passes the whole environment itself
        return args

    def submit(self, application: str = "", **kwargs: Any) -> str | None:
        kwargs["env"] = spark_submit_environment(self._env_vars)
        return super().submit(application, **kwargs)


def _is_inline(source: Any) -> bool:
    return isinstance(source, Mapping) or (
        isinstance(source, str) and ("\n" in source or source.lstrip().startswith("{"))
    )


def _write_private(path: Path, text: str) -> Path:
    """Create ``path`` readable by this user only (it may hold credentials)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    return path


#: SparkSubmitOperator arguments that cannot work here, and why: passing one (other than
#: None or False, which ask for nothing) is a TypeError, so a DAG that relies on one fails
#: to import instead of running without it
_REFUSED_ARGUMENTS = {
    "java_class": "the application is the checkpoint engine (Python), not a JVM class",
    # The parent injects these into conf in its execute(), which ours replaces; the
    # operator reports lineage itself when the OpenLineage provider is installed.
    "openlineage_inject_parent_job_info": "the engine's Spark job gets no OpenLineage injection; the operator "
    "reports the job's datasets and checkpoint run to OpenLineage itself",
    "openlineage_inject_transport_info": "the engine's Spark job gets no OpenLineage injection; the operator "
    "reports the job's datasets and checkpoint run to OpenLineage itself",
    # it makes spark-submit return once YARN accepts the application, and only the
    # parent's execute() (which ours replaces) would then follow it
    "yarn_track_via_rm_api": "the operator follows a YARN application through spark-submit, which waits for it",
}
#: arguments that change nothing here but harm nothing either (the parent ignores them in
#: client mode too): a warning
_INERT_ARGUMENTS = {
    "status_poll_interval": "it only tracks a standalone cluster's driver, and deploy_mode=cluster is refused there",
}


def _check_spark_submit_arguments(operator: str, kwargs: Mapping[str, Any]) -> None:
    if "application" in kwargs:
        raise TypeError(f"{operator} runs the checkpoint engine; it takes no 'application'")
    for name, reason in _REFUSED_ARGUMENTS.items():
        if kwargs.get(name) not in (None, False):
            raise TypeError(f"{operator} takes no {name!r}: {reason}")
    for name, reason in _INERT_ARGUMENTS.items():
        if name in kwargs:
            warn(f"{operator}: {name} has no effect: {reason}", UserWarning, stacklevel=_dag_file_level())


def _dag_file_level() -> int:
    """The stacklevel of the first caller outside this package and Airflow: the DAG file's
    line, however many __init__ wrappers (Airflow's default-args one, subclasses) lie between."""
    frame, level = sys._getframe(1), 1  # the function that warns is level 1
    while frame.f_back is not None and frame.f_globals.get("__name__", "").startswith(
        ("airflow_provider_seatunnel_ckpt.", "airflow.")
    ):
        frame, level = frame.f_back, level + 1
    return level


class CheckpointedSparkSubmitOperator(SparkSubmitOperator):
    """Submit a checkpointed PySpark job (SeaTunnel-style job file) with spark-submit.

    The job checkpoints to the storage described by ``config_file`` (a ``seatunnel.yaml``)
    and/or ``storage_conn_id`` (see :mod:`airflow_provider_seatunnel_ckpt.hooks` for the
    merge rule). Its checkpoints are kept under ``job_id``, which defaults to
    ``{dag_id}.{task_id}.{run_id}`` made storage-safe, so every retry of the task
    resumes the same job from its latest completed checkpoint.

    :param job_file: job file path (relative paths are looked up next to the DAG file
        first) or the job's YAML/JSON text. Templated.
    :param config_file: ``seatunnel.yaml`` path or text with the checkpoint settings.
        Templated: keep credentials out of it, put them in the connection.
    :param storage_conn_id: connection with the storage endpoint and credentials
        (``fs``, ``webhdfs``, ``aws``, ``oss`` or ``seatunnel_checkpoint``).
    :param job_id: the checkpoint job id (templated); default as above.
    :param restore: ``auto`` (default): resume from the latest completed checkpoint,
        start from the beginning when there is none, do nothing when the job already
        finished; ``latest``: resume, and fail if there is no checkpoint; ``none``:
        start from the beginning (the engine refuses if checkpoints exist); or a
        checkpoint id.
    :param allow_non_restored_state: restore a checkpoint that holds output of a sink the
        job file no longer has (a sink block removed, or moved among blocks of its plugin),
        dropping that output: the engine's ``--allow-non-restored-state`` (Flink's
        ``--allowNonRestoredState``). Without it such a restore fails without retrying, in
        one line naming the sink (docs/jobs.md, "Changing a job's sinks").
    :param conn_id: the Spark connection (``spark_default``).
    :param connections: job-file variables from Airflow connections: variable prefix ->
        connection id. ``{"PG": "postgres_default"}`` fills ``${PG_URL}``, ``${PG_USER}``,
        ``${PG_PASSWORD}``, ``${PG_HOST}``, ``${PG_PORT}`` and ``${PG_DATABASE}`` in the job
        file (see :mod:`airflow_provider_seatunnel_ckpt.hooks.variables`); the values
        reach the driver in a 0600 temp file, never on the command line.
    :param sink_asset: declare the sink's output as an Airflow asset (default True): the
        task's outlets get the ``AssetAlias`` ``seatunnel-ckpt/<dag_id>.<task_id>``, and a
        run that finishes the job adds the rendered sink's ``Asset`` to it (a path, a
        table, a topic; see :mod:`airflow_provider_seatunnel_ckpt.operators.assets`), so
        DAGs scheduled on the alias run after each finished job.
    :param spark_submit_kwargs: anything ``SparkSubmitOperator`` takes (``conf``,
        ``py_files`` for your own transforms, ``executor_memory``, ``env_vars``...),
        except ``application``, which is the engine, and ``java_class`` and
        ``openlineage_inject_*=True``, which cannot work here (a ``TypeError``);
        ``status_poll_interval`` has no effect (a warning).

    Pushes XCom ``job_id`` before submitting (for sensors and the recovery operator),
    then ``final_checkpoint_id`` and a return value with the final checkpoint's
    statistics. Never pushes, logs or puts on the command line a credential: the
    effective configuration goes to the driver in a 0600 temp file, deleted afterwards
    (in YARN cluster mode through the application's private staging directory, see
    :mod:`airflow_provider_seatunnel_ckpt.operators.cluster_mode`).
    """

    # The parent's (conf, env_vars, files, py_files, jars, name, keytab, ...) plus ours.
    operator_extra_links = (CheckpointViewLink(),)
    template_fields: Sequence[str] = tuple(
        dict.fromkeys((*SparkSubmitOperator.template_fields, "job_file", "job_id", "config_file", "restore"))
    )
    template_ext: Sequence[str] = JOB_FILE_EXTENSIONS
    template_fields_renderers = {
        **getattr(SparkSubmitOperator, "template_fields_renderers", {}),
        "job_file": "yaml",
        "config_file": "yaml",
        "conf": "json",
        "env_vars": "json",
    }
    ui_color = "#dbeafe"

    def __init__(
        self,
        *,
        job_file: str,
        config_file: str | None = None,
        storage_conn_id: str | None = None,
        job_id: str | None = None,
        restore: str | int = "auto",
        allow_non_restored_state: bool = False,
        conn_id: str = "spark_default",
        connections: Mapping[str, str] | None = None,
        sink_asset: bool = True,
        **spark_submit_kwargs: Any,
    ) -> None:
        _check_spark_submit_arguments(type(self).__name__, spark_submit_kwargs)
        spark_submit_kwargs.setdefault("name", f"seatunnel-ckpt-{spark_submit_kwargs.get('task_id', 'job')}")
        super().__init__(application=str(SPARK_APP), conn_id=conn_id, **spark_submit_kwargs)
        self.job_file = job_file
        self.config_file = config_file
        self.storage_conn_id = storage_conn_id
        self.job_id = job_id
        # A template or XComArg is checked once rendered, in execute(); a literal fails the parse.
        self.restore = _check_restore(restore) if _is_literal(restore) else restore
        self.allow_non_restored_state = bool(allow_non_restored_state)
        self.connections = dict(connections or {})
        self.sink_alias = (
            self._alias_for(self.dag_id if self.has_dag() else None, self.task_id, {}) if sink_asset else None
        )
        if self.sink_alias is not None and self.sink_alias not in (self.outlets or []):
            # an unmapped task of .partial().expand() already has it (see partial())
            self.outlets = [*(self.outlets or []), self.sink_alias]
        #: file name of a job_file read as a template: the engine names the job after it
        self._job_file_name: str | None = None
        #: what the run read and wrote, and which job and checkpoint: for OpenLineage
        #: (sources, sinks) of the job file, for OpenLineage
        self._lineage_entries: tuple[Sequence[Mapping[str, Any]], Sequence[Mapping[str, Any]]] | None = None
        self._lineage_run: dict[str, Any] | None = None
        #: (hook, job id) while this try waits for a previous try's live driver (on_kill stops it)
        self._attached_to: tuple[CheckpointStorageHook, str] | None = None
        #: (hook, job id) while this try's driver runs in YARN's application master: not a
        #: child of spark-submit, so on_kill asks it to stop through storage
        self._cluster_driver: tuple[CheckpointStorageHook, str] | None = None

    # ---- assets of mapped tasks ---------------------------------------------------------------
    @classmethod
    def _alias_for(cls, dag_id: str | None, task_id: str, kwargs: Mapping[str, Any]) -> AssetAlias:
        """The asset alias a task announces its output on."""
        return AssetAlias(name=alias_name(dag_id, task_id))

    @classmethod
    def partial(cls, **kwargs: Any) -> OperatorPartial:
        """As BaseOperator's, with the sink alias among the outlets: ``expand()`` builds a
        MappedOperator from these kwargs without calling ``__init__``, so without this the
        alias would be missing from the serialized DAG (no lineage, no alias in the DB)."""
        # expand() never calls __init__ while the DAG is parsed: check here too
        _check_spark_submit_arguments(cls.__name__, kwargs)
        operator_partial = super().partial(**kwargs)
        partial_kwargs = operator_partial.kwargs
        if partial_kwargs.get("sink_asset", True) is not False:
            dag = partial_kwargs.get("dag")
            alias = cls._alias_for(dag.dag_id if dag else None, partial_kwargs["task_id"], partial_kwargs)
            outlets = partial_kwargs.get("outlets") or []
            outlets = list(outlets) if isinstance(outlets, (list, tuple)) else [outlets]
            if alias not in outlets:
                partial_kwargs["outlets"] = [*outlets, alias]
        return operator_partial

    # ---- templates ------------------------------------------------------------------------------
    # Airflow reads *every* template field that ends with a template_ext as a template file.
    # Only job_file is one: properties_file (spark-defaults.conf), files, py_files, keytab and
    # config_file are paths spark-submit or the hook must get as paths, and config_file may
    # hold credentials that must not land in the rendered fields.
    def resolve_template_files(self) -> None:
        if self.has_dag():
            self._read_job_file_template(self.get_template_env())
        self.prepare_template()

    def _do_render_template_fields(
        self, parent: Any, template_fields: Any, context: Context, jinja_env: jinja2.Environment, seen_oids: set[int]
    ) -> None:
        # the hook Airflow calls for a mapped task's unmapped operator as for a plain one
        if parent is self and "job_file" in template_fields:
            self._read_job_file_template(jinja_env)
        super()._do_render_template_fields(parent, template_fields, context, jinja_env, seen_oids)

    def render_template(
        self,
        content: Any,
        context: Context,
        jinja_env: jinja2.Environment | None = None,
        seen_oids: set[int] | None = None,
    ) -> Any:
        if isinstance(content, str) and content.endswith(tuple(self.template_ext)):
            # a path, rendered as text; job_file's file was read by _read_job_file_template
            return self._render((jinja_env or self.get_template_env()).from_string(content), context)
        return super().render_template(content, context, jinja_env, seen_oids)

    def _read_job_file_template(self, jinja_env: jinja2.Environment) -> None:
        """Replace a job_file path with the file's text, found as Airflow finds template files:
        in the DAG's folder, then its ``template_searchpath``; an absolute or working-directory
        path (which Jinja's loader does not take) is read as given. A file found nowhere stays
        a path, and execute() fails on it with the path in the message."""
        value = self.job_file
        if not isinstance(value, str) or _is_inline(value) or not value.strip().endswith(tuple(self.template_ext)):
            return
        value = value.strip()
        source = origin = None
        if jinja_env.loader is not None:
            try:
                source, origin, _ = jinja_env.loader.get_source(jinja_env, value)
            except jinja2.TemplateNotFound:
                pass
        if source is None:
            path = Path(value).expanduser()
            if not path.is_file():
                return
            source, origin = path.read_text(encoding="utf-8"), str(path)
        self.job_file = source
        self._job_file_name = Path(origin or value).name

    def _checked_restore(self) -> str:
        try:
            return _check_restore(self.restore)
        except ValueError as err:
            raise AirflowFailException(str(err)) from None

    # ---- inputs -------------------------------------------------------------------------------
    def _resolve_path(self, value: Any) -> Any:
        """A relative path is looked up next to the DAG file first, then as given."""
        if value is None or _is_inline(value):
            return value
        path = Path(str(value)).expanduser()
        if not path.is_absolute():
            folder = getattr(getattr(self, "dag", None), "folder", None)
            if folder and (Path(folder) / path).exists():
                return str(Path(folder) / path)
        return str(path)

    def _resolve_job_id(self, context: Context) -> str:
        if self.job_id:
            try:
                return validate_job_id(str(self.job_id).strip())
            except ConfigError as err:
                raise AirflowFailException(str(err)) from None
        ti = context["ti"]
        return default_job_id(ti.dag_id, ti.task_id, ti.run_id, getattr(ti, "map_index", -1))

    @cached_property
    def checkpoint_hook(self) -> CheckpointStorageHook:
        return get_checkpoint_hook(self.storage_conn_id, self._resolve_path(self.config_file))

    # ---- run ----------------------------------------------------------------------------------
    def execute(self, context: Context) -> dict[str, Any]:
        self.restore = self._checked_restore()
        job_id = self._resolve_job_id(context)
        context["ti"].xcom_push(key="job_id", value=job_id)
        job_source = self._resolve_path(self.job_file)
        try:
            # Inside the try: a connection of the wrong type is a ConfigError too, and no
            # retry can fix it.
            hook = self.checkpoint_hook
            hook.config  # noqa: B018 - validates config file + connection
            # what the checkpoint view needs to find this job's storage: never a credential
            context["ti"].xcom_push(
                key=VIEW_XCOM_KEY,
                value={"job_id": job_id, "storage_conn_id": self.storage_conn_id, "config": hook.config.masked()},
            )
            job, variables = self._load_job(job_source)
        except ConfigError as err:
            raise AirflowFailException(f"job {job_id}: {err}") from None
        self._lineage_entries = (job.sources, job.sinks)
        self._lineage_run = {"job_id": job_id}
        self.log.info("job %s: checkpoints in %s", job_id, hook.describe(job_id))
        restore = self._restore_argument(hook, job_id)
        result = None
        if restore == "latest":
            # A previous try's driver may still run (its worker died, spark-submit did not):
            # wait for it while its heartbeat advances instead of taking the job over and
            # repeating the work since its last checkpoint.
            from .attach import attach_to_live_driver

            self._attached_to = (hook, job_id)
            try:
                result = attach_to_live_driver(self, context, hook, job_id, job)
            finally:
                self._attached_to = None
        if result is None:
            if restore is not None:
                self._run_engine(hook, job_id, job_source, restore, variables)
            result = self._result(context, hook, job_id, ran=restore is not None)
        if result["status"] == "finished":
            # also when an earlier try finished the job but died before reporting success:
            # this is the task's successful run, and the event is what downstream waits for
            self._announce_output(context, job.sinks, result)
        return result

    def _load_job(self, job_source: Any) -> tuple[Any, Mapping[str, str]]:
        """The job as the driver will resolve it, and the connections' variables (which the
        driver gets in a private file). The driver fills a ``${NAME}`` from those variables,
        then from its environment: this task's ``env_vars`` over the worker's. So the
        job's assets and lineage name the paths it writes (``day=${RUN_DAY}`` with
        ``env_vars={"RUN_DAY": "{{ ds }}"}``), resolved once, the same way."""
        from ..hooks.variables import variables_for
        from ..jobfile.job import load_job

        variables = variables_for(self.connections)
        environment = {str(k): str(v) for k, v in (self.env_vars or {}).items()}
        return load_job(job_source, {**environment, **variables}), variables

    # ---- lineage: called by the OpenLineage provider, when it is installed --------------------
    def get_openlineage_facets_on_start(self) -> Any:
        """What the job will read and write, from the rendered job file (called after the
        templates are rendered, before execute)."""
        if self._lineage_entries is None:
            try:
                job, _ = self._load_job(self._resolve_path(self.job_file))
            except Exception as err:  # lineage must never fail the task
                self.log.debug("no OpenLineage datasets at start: %s", err)
            else:
                self._lineage_entries = (job.sources, job.sinks)
        if self._lineage_run is None and self.job_id and _is_literal(self.job_id):
            self._lineage_run = {"job_id": str(self.job_id).strip()}
        return self._openlineage()

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        return self._openlineage()

    def get_openlineage_facets_on_failure(self, task_instance: Any) -> Any:
        return self._openlineage()

    def _openlineage(self) -> Any:
        from .lineage import job_lineage

        sources, sinks = self._lineage_entries or ((), ())
        return job_lineage(sources, sinks, self._lineage_run)

    def _announce_output(self, context: Context, sinks: Sequence[Mapping[str, Any]], result: Mapping[str, Any]) -> None:
        """The finished job's output as asset events on the task's alias (one per sink
        that has an asset URI)."""
        events = context.get("outlet_events")  # absent when execute() is called outside a task run
        if self.sink_alias is None or events is None:
            return
        extra = {"job_id": result["job_id"], "final_checkpoint_id": result["final_checkpoint_id"]}
        for uri in dict.fromkeys(u for u in map(sink_asset_uri, sinks) if u is not None):
            events[self.sink_alias].add(Asset(uri=uri, name=uri), extra=extra)
            self.log.info("job %s: output %s announced on asset alias %s", result["job_id"], uri, self.sink_alias.name)

    def _restore_argument(self, hook: CheckpointStorageHook, job_id: str) -> str | None:
        """The engine's ``--restore`` value, or None when there is nothing to run."""
        status = hook.get_job_status(job_id) or {}
        latest = hook.get_latest_checkpoint_id(job_id)
        if self.restore == "auto":
            if status.get("status") == "finished":
                self.log.info(
                    "job %s already finished in attempt %s (final checkpoint %s); not running it again",
                    job_id,
                    status.get("attempt"),
                    status.get("final_checkpoint_id"),
                )
                return None
            if latest is None:
                self.log.info("job %s: no completed checkpoint; starting from the beginning", job_id)
            else:
                self.log.info("job %s: resuming from checkpoint %s", job_id, latest)
            return "latest"
        if self.restore == "latest" and latest is None:
            raise AirflowFailException(
                f"job {job_id}: restore='latest' but there is no completed checkpoint in {hook.describe(job_id)}"
            )
        return self.restore

    def _run_engine(
        self, hook: CheckpointStorageHook, job_id: str, job_source: Any, restore: str, variables: Mapping[str, str]
    ) -> None:
        # the connection decides where the driver runs (the plain hook resolves it)
        cluster = runs_on_yarn_cluster(self._get_hook()._connection)
        if cluster:
            check_cluster_conf(self.conf or {})
        with tempfile.TemporaryDirectory(prefix="seatunnel-ckpt-") as workdir:  # 0700
            config_path = _write_private(
                Path(workdir) / "seatunnel.yaml", yaml.safe_dump(hook.effective_config_document(), sort_keys=False)
            )
            if _is_inline(job_source):
                text = job_source if isinstance(job_source, str) else yaml.safe_dump(dict(job_source))
                # a rendered job file keeps its name: the engine names the job after it
                default_name = "job.conf" if looks_like_hocon(text) else "job.yaml"
                job_path = str(_write_private(Path(workdir) / (self._job_file_name or default_name), text))
            else:
                job_path = str(job_source)
            files = [job_path, str(config_path)]
            if variables:
                files.append(str(_write_private(Path(workdir) / "variables.yaml", yaml.safe_dump(dict(variables)))))
            # cluster mode: the driver finds the shipped files by name in its working directory
            named = [Path(f).name if cluster else f for f in files]
            args = [named[0], "--config", named[1], "--job-id", job_id, "--restore", restore]
            if self.allow_non_restored_state:
                args.append("--allow-non-restored-state")
            if variables:
                args += ["--variables", named[2]]
            args += [str(a) for a in self.application_args or []]
            spark_hook = self._spark_submit_hook(args, shipped_files(self.files, files) if cluster else None)
            self._cluster_driver = (hook, job_id) if cluster else None
            try:
                spark_hook.submit(self.application)
            except AirflowException as err:
                raise self._failure(hook, job_id, spark_hook) from err
            finally:
                self._cluster_driver = None
                if cluster and spark_hook._yarn_application_id:
                    self.log.info(
                        "job %s: the driver ran in YARN application %s (its log: yarn logs -applicationId %s)",
                        job_id,
                        spark_hook._yarn_application_id,
                        spark_hook._yarn_application_id,
                    )

    def _spark_submit_hook(self, application_args: list[str], cluster_files: str | None = None) -> Any:
        """The provider's SparkSubmitHook with the engine archive and arguments added
        (the operator's own template fields stay as rendered). ``cluster_files``: the
        ``--files`` of YARN cluster mode, the driver's own files among them."""
        saved = self.application_args, self.py_files, self.conf, self.files
        conf = dict(self.conf or {})
        if (
            cluster_files is None
            and not {"spark.pyspark.driver.python", "spark.pyspark.python"} & conf.keys()
            and not (os.environ.get("PYSPARK_DRIVER_PYTHON") or (self.env_vars or {}).get("PYSPARK_DRIVER_PYTHON"))
        ):
            conf["spark.pyspark.driver.python"] = sys.executable  # the driver runs here (client mode)
        if cluster_files is None:  # the driver's JVM starts here: it maps this machine's class archive
            with_driver_archive(conf)
            with_quick_jit(conf)
        conf.setdefault("spark.log.level", DEFAULT_SPARK_LOG_LEVEL)  # keep Spark's INFO chatter out of task logs
        if cluster_files is not None:  # on the command line: a properties file cannot turn it off
            conf[WAIT_KEY] = "true"
        try:
            self.application_args = application_args
            self.py_files = ",".join([str(engine_archive()), *([self.py_files] if self.py_files else [])])
            self.conf = conf
            if cluster_files is not None:
                self.files = cluster_files
            hook = self._get_hook()
            hook.__class__ = _EngineSubmitHook  # same state, scrubbed environment (see the class)
            self._hook = hook
        finally:
            self.application_args, self.py_files, self.conf, self.files = saved
        return self._hook

    def _failure(self, hook: CheckpointStorageHook, job_id: str, spark_hook: Any) -> AirflowException:
        process = getattr(spark_hook, "_submit_sp", None)
        code = process.returncode if process is not None else None
        parts = [f"job {job_id}: spark-submit exited with code {code}"]
        try:
            status = hook.get_job_status(job_id) or {}
            latest = hook.get_latest_checkpoint_id(job_id)
        except Exception as err:  # the failure itself is what matters
            status, latest = {}, None
            parts.append(f"(could not read the job's status: {err})")
        self._lineage_run = {"job_id": job_id, "status": status.get("status"), "attempt": status.get("attempt")}
        if status.get("status") == "failed" and status.get("error"):
            parts.append(f"attempt {status.get('attempt')} failed: {status['error']}")
        if code == EXIT_INVALID_INPUT:
            return AirflowFailException("; ".join(parts + ["invalid input, not retrying"]))
        if latest is not None:
            parts.append(f"latest completed checkpoint {latest} in {hook.describe(job_id)}: a retry resumes from it")
        else:
            parts.append("no completed checkpoint yet: a retry starts from the beginning")
        return AirflowException("; ".join(parts))

    def _result(self, context: Context, hook: CheckpointStorageHook, job_id: str, ran: bool) -> dict[str, Any]:
        status = hook.get_job_status(job_id) or {}
        if not status and ran and hook.config.deletes_on_finish:
            # Every run writes job.json when it claims the job, and only a finished job is
            # deleted (a failed or stopped one keeps its storage): the driver finished it.
            self.log.info(
                "job %s finished and was deleted from %s (externalized-retention: delete-on-finish)",
                job_id,
                hook.describe(job_id),
            )
            status = {"status": "finished"}
        if status.get("status") == "stopped":
            # A stop-with-savepoint is a deliberate ending (hook.request_savepoint), not a
            # failure: the task succeeds, and running it again resumes from the savepoint.
            self.log.info(
                "job %s stopped with savepoint %s on request; run the task again to resume from it",
                job_id,
                status.get("savepoint_id"),
            )
        elif status.get("status") != "finished":
            raise AirflowException(
                f"job {job_id}: spark-submit succeeded but {hook.describe(job_id)}/job.json says "
                f"{status.get('status')!r} (another driver took the job over?)"
            )
        final_id = status.get("final_checkpoint_id")
        final = hook.inspect(job_id, int(final_id)) if final_id is not None else None
        attempts = hook.get_attempts(job_id)
        context["ti"].xcom_push(key="final_checkpoint_id", value=final_id)
        self._lineage_run = {
            "job_id": job_id,
            "status": status.get("status"),
            "attempt": status.get("attempt"),
            "restored_from": attempts[-1].get("restored_from") if attempts else None,
            "final_checkpoint_id": final_id,
        }
        return {
            "job_id": job_id,
            "status": status.get("status"),
            "ran": ran,
            "final_checkpoint_id": final_id,
            "savepoint_id": status.get("savepoint_id"),
            "attempt": status.get("attempt"),
            "location": hook.describe(job_id),
            "final_checkpoint": final,
            "attempts": [
                {
                    "attempt": a.get("attempt"),
                    "outcome": a.get("outcome"),
                    "restored_from": a.get("restored_from"),
                    "checkpoints_completed": a.get("checkpoints_completed"),
                    "application_id": a.get("application_id"),  # on YARN: for yarn logs -applicationId
                    "error": a.get("error"),
                }
                for a in attempts
            ],
        }

    # ---- kill ---------------------------------------------------------------------------------
    def on_kill(self) -> None:
        """Stop spark-submit and everything it started (JVM, Python driver and workers).
        Checkpoint storage is left as it is: the next run resumes from it."""
        attached = getattr(self, "_attached_to", None)
        if attached is not None:
            # the driver this try waits for is not our child: ask it to take a savepoint
            # and stop, as a killed task's own driver would stop
            hook, job_id = attached
            self.log.info("job %s: asking the driver this try attached to for a savepoint and a stop", job_id)
            hook.request_savepoint(job_id)
        cluster_driver = getattr(self, "_cluster_driver", None)
        if cluster_driver is not None:
            # stopping spark-submit leaves the application running in YARN (and the
            # parent's `yarn application -kill` needs a live spark-submit and a yarn CLI):
            # the driver stops as an attached one does, with a savepoint to resume from
            hook, job_id = cluster_driver
            self.log.info("job %s: asking its driver in YARN's application master for a savepoint and a stop", job_id)
            hook.request_savepoint(job_id)
        spark_hook = self._hook
        process = getattr(spark_hook, "_submit_sp", None)
        if process is not None and process.poll() is None:
            _terminate_tree(process.pid, self.log)
        if spark_hook is not None:
            super().on_kill()  # cluster drivers, post-submit commands


def _terminate_tree(pid: int, log: Any) -> None:
    import psutil

    try:
        root = psutil.Process(pid)
        processes = [*root.children(recursive=True), root]
    except psutil.NoSuchProcess:
        return
    log.info("stopping spark-submit (pid %s) and %d process(es) it started", pid, len(processes) - 1)
    for process in processes:
        try:
            process.send_signal(signal.SIGTERM)
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(processes, timeout=KILL_GRACE_S)
    if not alive:
        return
    log.warning("%d process(es) still running %ss after SIGTERM; killing them", len(alive), KILL_GRACE_S)
    for process in alive:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=KILL_REAP_S)
