"""Launch: take the started Spark (engine/spark_start.py), plan the splits, start the control server and
the driver loop, and run one long-running Spark task per subtask until the loop has an
outcome (docs/architecture.md)."""

from __future__ import annotations

import gc
import threading
from typing import Any

from ..errors import ConfigError
from . import spark_start
from .control_address import BIND_ADDRESS_KEY, PORT_KEY, control_endpoint
from .driver import DriverLoop, Outcome
from .heartbeat import INTERVAL_KEY
from .run_state import PIPELINE_ID, RunState
from .spark_settings import check_running_spark_settings
from .spark_start import SparkStart
from .split_discovery import SplitDiscovery
from .split_enumerator import enumerator_for
from .split_plan import REF_KEY as PLAN_REF_KEY
from .split_plan import plan_entries
from .subtask import SubtaskContext, run_subtask_partition

#: after the final checkpoint, how long the subtasks' Spark tasks get to return
FINISHED_TASKS_GRACE_S = 10


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
        owns_spark = spark is None or isinstance(spark, SparkStart)
        self.spark = spark.context() if isinstance(spark, SparkStart) else spark or spark_start.build_spark(request)
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
        freeze_startup_heap()
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


def freeze_startup_heap() -> None:
    """Move every object the driver holds now (the imports of PySpark, py4j, pyarrow and
    the engine, the SparkContext, the job) out of the collector's reach, as the workers do
    (engine/worker_daemon.py): a full collection during the run then walks only what the
    run allocated since.

    Without it each full collection of the driver walked the whole startup heap: 55-90 ms
    of CPU, which with eight jobs on two cores took 200-900 ms of wall time, holding the
    GIL, so the coordinator answered nothing meanwhile. Drivers of jobs started together
    allocate alike and collected at about the same checkpoint, and the eight jobs'
    checkpoint p99 was that pause. The startup heap lives as long as the driver, so
    freezing it keeps nothing that would have been freed, bar a cycle of startup garbage."""
    gc.freeze()
