"""Launch: start Spark (``build_spark``), plan the splits, start the control server and
the driver loop, and run one long-running Spark task per subtask until the loop has an
outcome (docs/architecture.md)."""

from __future__ import annotations

import os
import re
import sys
import threading
from typing import Any

from ..errors import ConfigError
from .control_address import BIND_ADDRESS_KEY, PORT_KEY, control_endpoint
from .driver import DriverLoop, Outcome
from .heartbeat import INTERVAL_KEY
from .jvm_archive import with_driver_archive
from .preload import preload_settings
from .run_state import PIPELINE_ID, RunRequest, RunState
from .spark_settings import DEFAULT_TASK_MAX_FAILURES, check_running_spark_settings, check_spark_settings
from .split_discovery import SplitDiscovery
from .split_enumerator import enumerator_for
from .split_plan import REF_KEY as PLAN_REF_KEY
from .split_plan import plan_entries
from .subtask import SubtaskContext, run_subtask_partition

#: after the final checkpoint, how long the subtasks' Spark tasks get to return
FINISHED_TASKS_GRACE_S = 10


def _local_with_retries(master: str, max_failures: int = DEFAULT_TASK_MAX_FAILURES) -> str:
    # local[N] never retries a failed task (and ignores spark.task.maxFailures);
    # region failover needs retries, so the count goes into the master URL.
    match = re.fullmatch(r"local\[(\d+|\*)\]", master.strip())
    if match:
        return f"local[{match.group(1)},{max_failures}]"
    if master.strip() == "local":
        return f"local[1,{max_failures}]"
    return master


def build_spark(request: RunRequest) -> Any:
    """The job's SparkContext. Not a SparkSession: the engine runs one RDD job of Python
    tasks and no SQL, and the JVM's session (Spark SQL's catalog and session state) took
    2.0 of the 9.4 s from a driver's start to its first committed row after a restore."""
    from pyspark import SparkConf, SparkContext

    spark_conf = SparkConf().setAppName(f"seatunnel-ckpt:{request.job.name}")
    chosen = {**request.job.spark_conf, **request.spark_conf}
    conf = {
        "spark.task.maxFailures": str(DEFAULT_TASK_MAX_FAILURES),
        "spark.pyspark.python": sys.executable,
        "spark.ui.showConsoleProgress": "false",
        **chosen,
    }
    master = request.master or os.environ.get("SEATUNNEL_CKPT_MASTER")
    launcher: dict[str, str] = {}
    if master:
        try:
            max_failures = int(conf["spark.task.maxFailures"])
        except ValueError:
            raise ConfigError(
                "spark.task.maxFailures", f"expected an integer, got {conf['spark.task.maxFailures']!r}"
            ) from None
        spark_conf.setMaster(_local_with_retries(master, max_failures))
    elif os.environ.get("PYSPARK_GATEWAY_PORT"):
        launcher = _launcher_conf()
        master = launcher.get("spark.master")
    # PySpark starts executor Python workers with $PYSPARK_PYTHON (default: "python3"
    # from PATH); spark.pyspark.python only reaches it through spark-submit. Without
    # this, a driver run from a virtualenv that is not first on PATH starts workers
    # that cannot import this package.
    if not os.environ.get("PYSPARK_PYTHON"):
        os.environ["PYSPARK_PYTHON"] = conf["spark.pyspark.python"]
    # Settings that break the engine's model (engine/spark_settings.py): the job's are
    # refused, spark-submit's overridden with a warning; the engine's values also beat a
    # spark-defaults.conf that only the JVM reads.
    required = check_spark_settings(chosen, launcher)
    conf.update(required)
    # spark-submit's settings beat our defaults but not the job's or the command line's
    effective = {**conf, **{k: v for k, v in launcher.items() if k not in chosen}, **required}
    if launcher and master:  # spark-submit --master local[N] would retry no task either
        retrying = _local_with_retries(master, int(effective["spark.task.maxFailures"]))
        if retrying != master:
            spark_conf.setMaster(retrying)
    preload = preload_settings(request.job, master, effective, os.environ["PYSPARK_PYTHON"])
    conf.update(preload)
    if not launcher:  # this process starts the driver JVM: it maps the class archive, if built
        with_driver_archive(conf)
    for key, value in conf.items():
        if key in launcher and key not in chosen and key not in required and key not in preload:
            continue  # spark-submit's own value stands: a default of ours must not replace it
        spark_conf.set(key, value)
    context = SparkContext.getOrCreate(spark_conf)
    # getOrCreate may have found a running context, whose settings spark_conf cannot change
    check_running_spark_settings(dict(context.getConf().getAll()))
    # Task retries are expected (region failover) and reported by the engine itself.
    context.setLogLevel(os.environ.get("SEATUNNEL_CKPT_SPARK_LOG_LEVEL", "ERROR"))
    return context


def _launcher_conf() -> dict[str, str]:
    """The settings spark-submit started this driver with (its --conf, spark-defaults),
    from the JVM it launched."""
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()
    return dict(SparkConf().getAll())


class LaunchDuty(RunState):
    """JobRun's Spark job, once the job is claimed and restored."""

    def _run_claimed(
        self,
        spark: Any,
        token: str,
        manifest: Any,
        highest_id: int,
        committer: Any,
        restored_infos: list[Any],
        sources: list[Any],
    ) -> Outcome:
        """``sources``: the ones ``run`` checked (a File source keeps the listing it made)."""
        from .routing import one_source
        from .transport import ControlServer

        request = self.request
        job = request.job
        config = request.config
        owns_spark = spark is None
        self.spark = spark or build_spark(request)
        # a SparkSession given to run() (tests, the throughput bench), else the context itself
        context = getattr(self.spark, "sparkContext", self.spark)
        slots = context.defaultParallelism
        if slots < job.parallelism:
            raise ConfigError(
                "env.parallelism",
                f"{job.parallelism} subtasks must run at the same time but the Spark master offers {slots} task slots",
            )
        if not owns_spark:  # a context given to the job: its settings can no longer change
            check_running_spark_settings(dict(context.getConf().getAll()))
        self._application_id = context.applicationId
        # for the checkpoint view and `history`: the attempt's record names its Spark
        # application (on YARN: the id for `yarn logs`, the same for every YARN re-attempt)
        self._record_attempt({"application_id": self._application_id})
        self._heartbeat_conf(context.getConf().get(INTERVAL_KEY))
        endpoint = control_endpoint(context.getConf().get, context.master)
        source = one_source(sources)
        splits, plan_ref = self.plan_splits(source, manifest)
        plan = plan_entries(splits)
        coordinator = self.coordinator(manifest, highest_id)
        enumerator = enumerator_for(source, manifest, len(splits), job.parallelism)
        loop = DriverLoop(
            coordinator,
            self.store,
            committer,
            self.fence,
            properties={"job_name": job.name, "attempt": self.attempt_number, PLAN_REF_KEY: plan_ref},
            split_plan=plan,
            progress=self.progress,
            durable_infos=restored_infos,
            history=self._history,
            sinks=self.sink_layout,
            enumerator=enumerator,
        )
        if source.discovery_interval_s:
            loop.discovery = SplitDiscovery(source, splits, source.discovery_interval_s, loop.splits_discovered)
        self._loop = loop
        try:
            server = ControlServer(
                host=endpoint.bind_address,
                port=endpoint.port,
                on_message=loop.on_message,
                on_disconnect=loop.on_disconnect,
            )
        except OSError as err:
            raise ConfigError(
                BIND_ADDRESS_KEY if endpoint.port == 0 else PORT_KEY,
                f"the control channel cannot listen on {endpoint.bind_address}:{endpoint.port}: {err.strerror or err}",
            ) from None
        loop.server = server
        state_local = getattr(self.storage, "fs", None) is not None and self.storage.fs.backend == "memory"
        subtask_context = SubtaskContext(
            job_id=request.job_id,
            pipeline_id=PIPELINE_ID,
            job=job.to_json(),
            splits=splits,
            driver_address=(endpoint.advertised_host, server.address[1]),
            token=server.token,
            storage=self.storage,
            state_is_process_local=state_local,
            run_attempt=self.attempt_number,
            dealt=enumerator is not None,
        )
        restored_text = "the beginning"
        if manifest is not None:
            restored_text = f"{'savepoint' if manifest.kind.value == 'savepoint' else 'checkpoint'} {self.restored_id}"
        self.progress(
            f"job {request.job_id} attempt {self.attempt_number}: {job.parallelism} subtasks, {len(splits)} splits, "
            f"from {restored_text}; checkpoints every {config.interval} ms to {self.storage.describe(request.job_id)}"
            # the id to find the run by in YARN's or Spark's UI and logs (yarn logs -applicationId)
            + (f"; Spark application {self._application_id}" if self._application_id else "")
        )
        spark_thread = threading.Thread(
            target=self._run_spark_job, args=(context, subtask_context, loop), name="spark-job", daemon=True
        )
        outcome = Outcome(error="interrupted")
        try:
            spark_thread.start()
            outcome = loop.run()
        except KeyboardInterrupt:
            loop.outcome.error = "interrupted"
            outcome = loop.outcome
            raise
        finally:
            if not outcome.finished:
                context.cancelJobGroup(self._job_group)
            spark_thread.join(timeout=FINISHED_TASKS_GRACE_S if outcome.finished else 60)
            if outcome.finished and spark_thread.is_alive():
                # A subtask whose executor died after the final checkpoint was retried
                # by Spark; the attempt waits for a restore that never comes (the job is
                # done and committed), so it would hold the run up to its timeout.
                context.cancelJobGroup(self._job_group)
                spark_thread.join(timeout=60)
            server.close()
            self.end(outcome, committer, token)
            if owns_spark:
                self.spark.stop()
        return outcome

    def _run_spark_job(self, context: Any, subtask_context: SubtaskContext, loop: DriverLoop) -> None:
        try:
            context.setJobGroup(self._job_group, f"checkpointed job {subtask_context.job_id}", interruptOnCancel=True)
            parallelism = self.request.job.parallelism
            rdd = context.parallelize(range(parallelism), parallelism)
            rdd.mapPartitionsWithIndex(run_subtask_partition(subtask_context)).collect()
        except BaseException as err:  # reported to the loop, which decides
            loop.spark_job_ended(err)
        else:
            loop.spark_job_ended(None)
