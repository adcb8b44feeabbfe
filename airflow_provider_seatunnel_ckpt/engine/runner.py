"""Run a checkpointed job: the driver side of ``seatunnel-ckpt run`` and of spark-submit.

The driver chooses the checkpoint to restore, repairs the sink output to match it
(replays its commits, rolls back anything newer, removes uncommitted staging), claims
the job with a fresh fencing token, starts the control server and the coordinator
loop, and launches one long-running Spark task per subtask. Every run attempt is
recorded under ``attempts/`` in checkpoint storage.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from ..config import CheckpointConfig, ExternalizedRetention
from ..errors import ConfigError
from ..storage import CheckpointStorageError, create_storage
from .completed_store import CompletedCheckpointStore, commit_infos_of, rescaled, wall_ms
from .coordinator import CheckpointCoordinator, CoordinatorSettings
from .driver import DriverLoop, Outcome, monotonic_ms
from .job import JobSpec
from .subtask import SubtaskContext, run_subtask_partition

log = logging.getLogger(__name__)

PIPELINE_ID = 1
DEFAULT_TASK_MAX_FAILURES = 4
JOB_DOCUMENT = "job.json"


@dataclass
class RunRequest:
    job: JobSpec
    config: CheckpointConfig
    job_id: str
    restore: str = "latest"  #: latest | none | a checkpoint id
    discard_existing: bool = False
    master: str | None = None
    spark_conf: dict[str, str] = field(default_factory=dict)


def parse_restore(value: str) -> str:
    value = str(value).strip().lower()
    if value in ("latest", "none") or value.isdigit():
        return value
    raise ConfigError("--restore", f"expected latest, none or a checkpoint id, got {value!r}")


def _local_with_retries(master: str) -> str:
    # local[N] never retries a failed task; region failover needs retries.
    match = re.fullmatch(r"local\[(\d+|\*)\]", master.strip())
    if match:
        return f"local[{match.group(1)},{DEFAULT_TASK_MAX_FAILURES}]"
    if master.strip() == "local":
        return f"local[1,{DEFAULT_TASK_MAX_FAILURES}]"
    return master


def build_spark(request: RunRequest) -> Any:
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(f"seatunnel-ckpt:{request.job.name}")
    master = request.master or os.environ.get("SEATUNNEL_CKPT_MASTER")
    if master:
        builder = builder.master(_local_with_retries(master))
    conf = {
        "spark.task.maxFailures": str(DEFAULT_TASK_MAX_FAILURES),
        "spark.pyspark.python": sys.executable,
        "spark.ui.showConsoleProgress": "false",
        **request.job.spark_conf,
        **request.spark_conf,
    }
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    # Task retries are expected (region failover) and reported by the engine itself.
    spark.sparkContext.setLogLevel(os.environ.get("SEATUNNEL_CKPT_SPARK_LOG_LEVEL", "ERROR"))
    return spark


class JobRun:
    """One attempt at running a job; ``run()`` returns the outcome."""

    def __init__(self, request: RunRequest, progress: Callable[[str], None] | None = None):
        self.request = request
        self.progress = progress or (lambda line: print(line, file=sys.stderr, flush=True))
        self.storage = create_storage(request.config.storage)
        self.store = CompletedCheckpointStore(self.storage, request.job_id, PIPELINE_ID)
        self.attempt_number = 0
        self.restored_id: int | None = None
        self.spark: Any = None
        self._loop: DriverLoop | None = None
        self._job_group = f"seatunnel-ckpt-{request.job_id}-{secrets.token_hex(4)}"

    # ---- restore selection ----------------------------------------------------------------
    def choose_restore(self) -> Any:
        mode = parse_restore(self.request.restore)
        job_id = self.request.job_id
        if mode == "latest":
            manifest = self.store.latest_restorable()
            if manifest is None:
                self.progress(f"job {job_id}: no completed checkpoint in {self.storage.describe(job_id)}; starting from the beginning")
            return manifest
        if mode == "none":
            if self.store.has_any():
                if not self.request.discard_existing:
                    raise ConfigError(
                        "--restore",
                        f"job {job_id} already has checkpoints in {self.storage.describe(job_id)}; "
                        "use --restore latest to resume, or add --discard-existing to start over",
                    )
                self.progress(f"job {job_id}: discarding existing checkpoints as requested")
                self.storage.delete_checkpoint(job_id, PIPELINE_ID)
            return None
        try:
            return self.store.restorable(int(mode))
        except CheckpointStorageError as err:
            raise ConfigError("--restore", str(err)) from None

    # ---- job document and attempts -----------------------------------------------------------
    def _claim(self, token: str, restored_id: int | None) -> None:
        job_id = self.request.job_id
        existing = self.storage.read_document(job_id, JOB_DOCUMENT) or {}
        self.attempt_number = int(existing.get("attempt", 0)) + 1
        document = {
            "job_id": job_id,
            "name": self.request.job.name,
            "status": "running",
            "attempt": self.attempt_number,
            "fencing_token": token,
            "parallelism": self.request.job.parallelism,
            "updated_ms": wall_ms(),
        }
        self.storage.write_document(job_id, JOB_DOCUMENT, document)
        self._record_attempt({"outcome": "running", "start_ms": wall_ms(), "restored_from": restored_id})

    def _record_attempt(self, fields: dict[str, Any]) -> None:
        path = f"attempts/{self.attempt_number:06d}.json"
        record = self.storage.read_document(self.request.job_id, path) or {"attempt": self.attempt_number}
        record.update(fields)
        self.storage.write_document(self.request.job_id, path, record)

    def _release(self, outcome: Outcome, token: str) -> None:
        job_id = self.request.job_id
        document = self.storage.read_document(job_id, JOB_DOCUMENT) or {}
        last = outcome.completed[-1].checkpoint_id if outcome.completed else self.restored_id
        if document.get("fencing_token") == token:  # never overwrite a newer attempt's claim
            document.update(
                status="finished" if outcome.finished else "failed",
                updated_ms=wall_ms(),
                final_checkpoint_id=outcome.final_checkpoint_id,
                last_checkpoint_id=last,
                error=outcome.error,
            )
            self.storage.write_document(job_id, JOB_DOCUMENT, document)
        self._record_attempt(
            {
                "outcome": "finished" if outcome.finished else "failed",
                "end_ms": wall_ms(),
                "error": outcome.error,
                "checkpoints_completed": len(outcome.completed),
                "last_checkpoint_id": last,
                "final_checkpoint_id": outcome.final_checkpoint_id,
            }
        )

    # ---- run ------------------------------------------------------------------------------
    def run(self, spark: Any = None) -> Outcome:
        from .connectors import load_sink, load_source
        from .transport import ControlServer

        request = self.request
        job = request.job
        config = request.config
        manifest = self.choose_restore()
        self.restored_id = manifest.checkpoint_id if manifest is not None else None

        sink = load_sink(job.sink, "sink[0]")
        committer = sink.create_committer(request.job_id)
        restored_infos = commit_infos_of(manifest.commit_infos) if manifest is not None else []
        # Make the sink output match the restored cut before anything runs.
        if restored_infos:
            committer.commit(restored_infos)
        committer.rollback(self.restored_id or 0)
        committer.cleanup(restored_infos)

        token = secrets.token_hex(16)
        self._claim(token, self.restored_id)

        owns_spark = spark is None
        self.spark = spark or build_spark(request)
        context = self.spark.sparkContext
        slots = context.defaultParallelism
        if slots < job.parallelism:
            raise ConfigError(
                "env.parallelism",
                f"{job.parallelism} subtasks must run at the same time but the Spark master offers {slots} task slots",
            )
        source = load_source(job.source, "source[0]")
        splits = tuple(source.splits(job.parallelism))

        restored = None
        if manifest is not None:
            restored = rescaled(self.store.from_manifest(manifest), job.parallelism)
            if restored.num_subtasks != manifest.properties.get("parallelism", restored.num_subtasks):
                self.progress(f"rescaling from {manifest.properties.get('parallelism')} to {job.parallelism} subtasks")
        next_id = max(self.store.highest_id(), self.restored_id or 0) + 1
        coordinator = CheckpointCoordinator(
            PIPELINE_ID,
            job.parallelism,
            CoordinatorSettings(
                interval_ms=config.interval,
                timeout_ms=config.timeout,
                min_pause_ms=config.min_pause,
                max_concurrent=config.max_concurrent,
                tolerable_failure=config.tolerable_failure,
            ),
            monotonic_ms,
            restored=restored,
            next_checkpoint_id=next_id,
        )
        loop = DriverLoop(
            coordinator, self.store, committer, token,
            properties={"job_name": job.name, "attempt": self.attempt_number},
            progress=self.progress,
        )
        self._loop = loop
        host = _driver_host(context)
        server = ControlServer(host=host, port=0, on_message=loop.on_message, on_disconnect=loop.on_disconnect)
        loop.server = server
        state_local = getattr(self.storage, "fs", None) is not None and self.storage.fs.backend == "memory"
        subtask_context = SubtaskContext(
            job_id=request.job_id,
            pipeline_id=PIPELINE_ID,
            job=job.to_json(),
            splits=splits,
            driver_address=server.address,
            token=server.token,
            storage=self.storage,
            state_is_process_local=state_local,
        )
        restored_text = f"checkpoint {self.restored_id}" if self.restored_id else "the beginning"
        self.progress(
            f"job {request.job_id} attempt {self.attempt_number}: {job.parallelism} subtasks, {len(splits)} splits, "
            f"from {restored_text}; checkpoints every {config.interval} ms to {self.storage.describe(request.job_id)}"
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
            spark_thread.join(timeout=60)
            server.close()
            if outcome.finished:
                final_infos = []
                latest = self.store.latest_restorable(verify=False)
                if latest is not None:
                    final_infos = commit_infos_of(latest.commit_infos)
                committer.cleanup(final_infos)
                if config.externalized_retention is ExternalizedRetention.DELETE_ON_FINISH:
                    self.storage.delete_checkpoint(request.job_id, PIPELINE_ID)
            self._release(outcome, token)
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


def _driver_host(context: Any) -> str:
    configured = context.getConf().get("spark.driver.host", None)
    if context.master.startswith("local"):
        return "127.0.0.1"
    return configured or os.environ.get("SPARK_LOCAL_IP") or "127.0.0.1"
