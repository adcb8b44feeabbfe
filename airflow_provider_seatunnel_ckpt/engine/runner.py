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
from typing import Any, Callable, Mapping, Sequence

from ..config import CheckpointConfig
from ..errors import ConfigError, DataError
from ..history import HistoryRecorder, restore_entry
from ..storage import CheckpointStorageError, create_storage
from .completed_store import CompletedCheckpointStore, commit_infos_of, rescaled, wall_ms
from .control_address import BIND_ADDRESS_KEY, PORT_KEY, control_endpoint
from ..connectors.api import Split
from .coordinator import CheckpointCoordinator, CoordinatorSettings
from .driver import DriverLoop, Outcome, first_line, monotonic_ms
from .fencing import TAKEN_OVER, Claim, Fenced, FenceLog
from .heartbeat import (
    DEFAULT_INTERVAL_MS,
    FENCED,
    INTERVAL_KEY,
    LOOP_STALL_S,
    HeartbeatWriter,
    job_fingerprint,
    parse_interval,
    record_path as heartbeat_record_path,
)
from ..jobfile.spec import JobSpec
from .preload import preload_settings
from .sink_identity import layout as sink_layout, restored as restored_for_sinks
from .spark_settings import DEFAULT_TASK_MAX_FAILURES, check_running_spark_settings, check_spark_settings
from .split_discovery import SplitDiscovery, split_names
from .split_plan import (
    REF_KEY as PLAN_REF_KEY, SOURCE_KEY, discard_plans, document_splits, load_plan, newest_earlier_plan,
    plan_entries, plan_path, prune_plans, referenced_attempts, source_fingerprint, store_plan,
)
from .subtask import SubtaskContext, run_subtask_partition

log = logging.getLogger(__name__)

PIPELINE_ID = 1
#: after the final checkpoint, how long the subtasks' Spark tasks get to return
FINISHED_TASKS_GRACE_S = 10
JOB_DOCUMENT = "job.json"
#: in job.json while --discard-existing deletes the checkpoints, until the sink dropped its bookkeeping
DISCARDING = "discarding"


@dataclass
class RunRequest:
    job: JobSpec
    config: CheckpointConfig
    job_id: str
    restore: str = "latest"  #: latest | none | a checkpoint id
    discard_existing: bool = False
    #: restore a checkpoint even when it holds output of a sink the job no longer has,
    #: dropping that output (--allow-non-restored-state: engine/sink_identity.py)
    allow_non_restored_state: bool = False
    master: str | None = None
    spark_conf: dict[str, str] = field(default_factory=dict)


def parse_restore(value: str) -> str:
    value = str(value).strip().lower()
    if value in ("latest", "none") or value.isdigit():
        return value
    raise ConfigError("--restore", f"expected latest, none or a checkpoint id, got {value!r}")


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
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(f"seatunnel-ckpt:{request.job.name}")
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
            raise ConfigError("spark.task.maxFailures", f"expected an integer, got {conf['spark.task.maxFailures']!r}") from None
        builder = builder.master(_local_with_retries(master, max_failures))
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
            builder = builder.master(retrying)
    preload = preload_settings(request.job, master, effective, os.environ["PYSPARK_PYTHON"])
    conf.update(preload)
    for key, value in conf.items():
        if key in launcher and key not in chosen and key not in required and key not in preload:
            continue  # spark-submit's own value stands: a default of ours must not replace it
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    # getOrCreate may have found a context whose settings the builder could not change
    check_running_spark_settings(dict(spark.sparkContext.getConf().getAll()))
    # Task retries are expected (region failover) and reported by the engine itself.
    spark.sparkContext.setLogLevel(os.environ.get("SEATUNNEL_CKPT_SPARK_LOG_LEVEL", "ERROR"))
    return spark


def _launcher_conf() -> dict[str, str]:
    """The settings spark-submit started this driver with (its --conf, spark-defaults),
    from the JVM it launched."""
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()
    return dict(SparkConf().getAll())


class JobRun:
    """One attempt at running a job; ``run()`` returns the outcome."""

    def __init__(self, request: RunRequest, progress: Callable[[str], None] | None = None):
        self.request = request
        self.progress = progress or (lambda line: print(line, file=sys.stderr, flush=True))
        self.storage = create_storage(request.config.storage)
        self.store = CompletedCheckpointStore(self.storage, request.job_id, PIPELINE_ID)
        # delete-on-finish may delete the job under a driver that was taken over: it must
        # know its claim gone for a takeover (engine/fencing.py)
        self.fence = FenceLog(self.storage, request.job_id, deletable=request.config.deletes_on_finish)
        self.attempt_number = 0
        self.restored_id: int | None = None
        self.spark: Any = None
        self._loop: DriverLoop | None = None
        self._released = False
        self._job_group = f"seatunnel-ckpt-{request.job_id}-{secrets.token_hex(4)}"
        #: --discard-existing deleted the job's checkpoints in this run
        self.discarded = False
        #: the run's heartbeat in storage (heartbeat.py), from the claim to the recorded outcome
        self._heartbeat: HeartbeatWriter | None = None
        self._application_id: str | None = None
        #: the attempt's checkpoint history recorder (history/), from the claim to the end
        self._history: HistoryRecorder | None = None
        #: the job's sink identities, recorded in every checkpoint (set by the claim)
        self.sink_layout: tuple[Any, ...] = ()

    # ---- restore selection ----------------------------------------------------------------
    def choose_restore(self, existing: Mapping[str, Any] | None = None) -> Any:
        """The manifest to restore (None: from the start). ``existing`` is ``job.json``
        as read before the claim."""
        mode = parse_restore(self.request.restore)
        job_id = self.request.job_id
        existing = existing or {}
        if existing.get(DISCARDING):
            self.progress(f"job {job_id}: an earlier --discard-existing was interrupted; finishing it first "
                          "(the checkpoints go, committed output stays), then starting from the beginning")
            self._discard(existing)
            return None
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
                self._discard(existing)
            return None
        try:
            return self.store.restorable(int(mode))
        except CheckpointStorageError as err:
            raise ConfigError("--restore", str(err)) from None

    def _discard(self, existing: Mapping[str, Any]) -> None:
        """Delete the job's checkpoints (``--discard-existing``); the caller then lets the
        sink drop its bookkeeping (``discard_job``). Marked in ``job.json`` first: a run
        that dies in between (checkpoints gone, the sink still counting on them: a File
        sink's rollback would take the committed output too) is finished by the next run,
        whatever it asks to restore. The claim's ``job.json`` write clears the mark."""
        job_id = self.request.job_id
        self.storage.write_document(job_id, JOB_DOCUMENT, {**existing, DISCARDING: True})
        entries = self.storage.list_checkpoint_entries(job_id, PIPELINE_ID)
        self.storage.delete_checkpoint_dirs(job_id, PIPELINE_ID, [e for e in entries if not e.fenced])
        # Starting over: where the earlier lineage's splits started is not this one's
        # (a run killed before this one's first plan must not fall back on them).
        discard_plans(self.storage, job_id, self.attempt_number)
        self.discarded = True

    # ---- job document and attempts -----------------------------------------------------------
    def _claim_fence(self, token: str, existing: Mapping[str, Any]) -> Claim:
        """Win the job's fence log; fence the checkpoint id a previous driver reserved
        and may still be completing. ``existing`` is ``job.json`` (jobs from before the
        fence log number their attempts there)."""
        job_id = self.request.job_id
        claim = self.fence.claim(token, min_attempt=int(existing.get("attempt") or 0))
        self.attempt_number = claim.attempt
        if claim.pending is not None:
            checkpoint_id, savepoint = claim.pending
            if self.storage.fence_checkpoint_id(job_id, PIPELINE_ID, checkpoint_id, savepoint):
                self.progress(
                    f"job {job_id}: fenced checkpoint {checkpoint_id} of attempt {claim.pending_attempt}, which may "
                    "still be running: it can no longer complete a checkpoint or commit output"
                )
                # Retention keeps a fenced id's marker for ever, so its uploads go now
                # (usually the checkpoint that was in flight when the old driver died).
                try:
                    self.storage.delete_state_files(job_id, PIPELINE_ID, checkpoint_id, savepoint)
                except Exception as err:  # only space; the id is fenced either way
                    log.info("could not delete the state files of fenced checkpoint %d: %s", checkpoint_id, err)
        return claim

    def _claim(self, token: str, restored_id: int | None, existing: Mapping[str, Any], highest_id: int = 0) -> int:
        """Record the claim in ``job.json`` (``existing``: as read before the claim);
        returns the highest checkpoint id this job ever used."""
        job_id = self.request.job_id
        # Recorded here because checkpoints newer than a restored one are deleted (see
        # _restore_output): ids must still never be reused.
        highest_id = max(highest_id, int(existing.get("highest_checkpoint_id") or 0))
        document = {
            "job_id": job_id,
            "name": self.request.job.name,
            "status": "running",
            "attempt": self.attempt_number,
            "fencing_token": token,
            "parallelism": self.request.job.parallelism,
            "highest_checkpoint_id": highest_id,
            "updated_ms": wall_ms(),
        }
        self.storage.write_document(job_id, JOB_DOCUMENT, document)
        self._record_attempt({"outcome": "running", "start_ms": wall_ms(), "restored_from": restored_id})
        return highest_id

    def _restore_output(self, committer: Any, restored_infos: list[Any]) -> None:
        """Make the checkpoints and the sink output match the restored cut, before
        anything runs.

        Every checkpoint and savepoint newer than the restored one is deleted. Resuming
        from an older cut (``--restore ID``, or a damaged latest checkpoint) rolls back
        the sink output committed after it, so the newer checkpoints no longer match the
        output: restoring one later (``--restore latest`` after this run dies) would lose
        or fail to publish the rows they cover. A sink that cannot roll back refuses
        first (``check_rollback``), while nothing has changed. The checkpoints are
        deleted *before* the output is rolled back, so a crash in between leaves the
        restored checkpoint as the latest, and the next run repeats the rollback.

        Savepoints an earlier run never completed go too: retention keeps every
        savepoint, and the only id an earlier driver could still complete was fenced
        by the claim (a fenced id stays, always).
        """
        job_id = self.request.job_id
        restored_id = self.restored_id or 0
        entries = [e for e in self.storage.list_checkpoint_entries(job_id, PIPELINE_ID) if not e.fenced]
        newer = [e for e in entries if e.checkpoint_id > restored_id]
        completed = [e.checkpoint_id for e in newer if e.completed]
        committer.check_rollback(restored_id, completed)
        if completed:
            self.progress(
                f"job {job_id}: discarding checkpoint(s) {', '.join(map(str, completed))}, newer than "
                f"{f'checkpoint {restored_id}' if restored_id else 'the start'}: their output is rolled back"
            )
        aborted_savepoints = [e for e in entries if e.savepoint and not e.completed and e.checkpoint_id <= restored_id]
        for entry in newer + aborted_savepoints:
            self.storage.delete_checkpoint_dir(job_id, PIPELINE_ID, entry.checkpoint_id, entry.savepoint)
        if restored_infos:
            committer.commit(restored_infos)
        committer.rollback(restored_id)
        committer.cleanup(restored_infos)

    # ---- the split plan ------------------------------------------------------------------------
    def plan_splits(self, source: Any, manifest: Any) -> tuple[tuple[Split, ...], dict[str, Any]]:
        """The splits this attempt reads, stored as its plan document before earlier,
        unreferenced plans are pruned; returns them and the reference every manifest of
        the attempt carries (engine/split_plan.py). No Spark here: the deterministic
        simulation (tests/simulation) drives this same code.

        The plan is part of the checkpoint: a restore (with any parallelism) keeps its
        checkpoint's plan, so split ids and ranges always match the restored positions.
        With nothing restored, the newest earlier attempt's plan of the same source is
        kept too: those attempts stopped before their first checkpoint, and the start
        positions were resolved when the job first started (Kafka's ``latest`` must not
        move on, nor a bounded job's end offsets)."""
        fingerprint = source_fingerprint(self.request.job.sources)
        stored = self._stored_plan(manifest, fingerprint)
        if stored is None:
            splits = tuple(source.splits(self.request.job.parallelism))
        else:
            splits = tuple(Split(str(split_id), spec) for split_id, spec in stored)
            added = tuple(source.discover_splits(splits))
            if added:  # appended: the stored splits keep their place, so their subtask
                self.progress(f"{len(added)} new splits since the stored plan: {split_names(s.split_id for s in added)}")
                splits += added
        return splits, self._store_plan(splits, fingerprint)

    def _store_plan(self, splits: Sequence[Split], fingerprint: str) -> dict[str, Any]:
        # A driver taken over creates and deletes nothing (the check covers the pruning too)
        self.fence.require_claim()
        ref = store_plan(self.storage, self.request.job_id, self.attempt_number, plan_entries(splits), fingerprint)
        self._prune_plans()
        return ref

    def _stored_plan(self, manifest: Any, fingerprint: str) -> list[list[Any]] | None:
        """The plan to keep: the restored checkpoint's, else an earlier attempt's of the
        same source unless the job starts over; None: ask the source for a new one."""
        if manifest is not None:
            return load_plan(self.storage, self.request.job_id, manifest.properties)
        if self.request.discard_existing or self.discarded:
            return None  # starting over: where to start is resolved again
        return self._earlier_plan(fingerprint)

    def _earlier_plan(self, fingerprint: str) -> list[list[Any]] | None:
        job_id = self.request.job_id
        found = newest_earlier_plan(self.storage, job_id, self.attempt_number)
        if found is None:
            return None
        attempt, document = found
        if document.get(SOURCE_KEY) != fingerprint:
            self.progress(f"job {job_id}: the source options differ from those attempt {attempt} planned its splits "
                          "with; making a new split plan (where each split starts is resolved again)")
            return None
        splits = document_splits(document, f"{self.storage.describe(job_id)}/{plan_path(attempt)}")
        self.progress(f"job {job_id}: nothing to restore; reading the {len(splits)} splits attempt {attempt} planned, "
                      "from where that attempt started")
        return splits

    def _record_attempt(self, fields: dict[str, Any]) -> None:
        path = f"attempts/{self.attempt_number:06d}.json"
        record = self.storage.read_document(self.request.job_id, path) or {"attempt": self.attempt_number}
        record.update(fields)
        self.storage.write_document(self.request.job_id, path, record)

    def _prune_plans(self) -> None:
        """Remove earlier attempts' split plans that no retained checkpoint or savepoint
        refers to (engine/split_plan.py); only the claimant does this, once per attempt,
        after its own plan is stored (it may be a copy of the newest earlier one)."""
        job_id = self.request.job_id
        try:
            manifests = [self.storage.read_manifest(job_id, PIPELINE_ID, e.checkpoint_id, e.savepoint)
                         for e in self.storage.list_checkpoint_entries(job_id, PIPELINE_ID) if e.completed]
        except Exception as err:  # noqa: BLE001 - a leftover plan costs storage, not correctness
            log.info("not pruning split plans of job %s: %s", job_id, err)
            return
        prune_plans(self.storage, job_id, referenced_attempts(manifests), self.attempt_number)

    def _release(self, outcome: Outcome, token: str) -> None:
        """Record the run's outcome in ``job.json`` and its attempt record.

        ``status`` / ``outcome`` is ``finished`` (input ended, final checkpoint
        committed), ``stopped`` (stop-with-savepoint: ``savepoint_id`` is where the next
        run resumes) or ``failed`` (``error`` says why).
        """
        self._released = True
        job_id = self.request.job_id
        stopped = outcome.stopped_with_savepoint
        savepoint_id = outcome.stopped_savepoint_id if stopped else None
        status = "stopped" if stopped else "finished" if outcome.finished else "failed"
        document = self.storage.read_document(job_id, JOB_DOCUMENT) or {}
        last = outcome.completed[-1].checkpoint_id if outcome.completed else self.restored_id
        fenced = self._fenced()
        if fenced and outcome.error and TAKEN_OVER not in outcome.error:
            # The claimant discards what this run staged, so its sink may have failed on
            # files that vanished: a consequence, not the cause a user should chase.
            outcome.error = f"{self.fence.fenced_error()} (it then failed: {outcome.error})"
        if fenced and not document:  # every claim writes job.json: the job was deleted
            self._leave_no_records()
            return
        if document.get("fencing_token") == token and not fenced:  # never overwrite a newer claim
            document.update(
                status=status,
                updated_ms=wall_ms(),
                final_checkpoint_id=outcome.final_checkpoint_id,
                savepoint_id=savepoint_id,
                last_checkpoint_id=last,
                error=outcome.error,
            )
            self.storage.write_document(job_id, JOB_DOCUMENT, document)
        self.fence.prune()
        self._record_attempt(
            {
                "outcome": status,
                "end_ms": wall_ms(),
                "error": outcome.error,
                "checkpoints_completed": len(outcome.completed),
                "last_checkpoint_id": last,
                "final_checkpoint_id": outcome.final_checkpoint_id,
                "savepoint_id": savepoint_id,
            }
        )
        self._end_heartbeat(FENCED if fenced else status, outcome.error, last)

    def _leave_no_records(self) -> None:
        """This driver was taken over, and the job was deleted since (the claimant
        finished it with delete-on-finish): it records no outcome, and removes the
        heartbeat its thread wrote meanwhile, so the deleted job stays empty."""
        if self._heartbeat is None:
            return
        self._heartbeat.stop()
        try:
            self.storage.delete_document(self.request.job_id, heartbeat_record_path(self.attempt_number))
        except Exception as err:  # noqa: BLE001 - a stray heartbeat costs storage only
            log.info("could not delete the heartbeat of attempt %d: %s", self.attempt_number, err)

    # ---- heartbeat ---------------------------------------------------------------------------
    def _heartbeat_interval(self) -> int:
        """``spark.seatunnel.heartbeatInterval`` from the job's env or the command line's
        --conf (spark-submit's own --conf is read once Spark runs, see _run_claimed)."""
        conf = {**self.request.job.spark_conf, **self.request.spark_conf}
        return parse_interval(conf.get(INTERVAL_KEY, DEFAULT_INTERVAL_MS))

    def _start_heartbeat(self, interval_ms: int) -> None:
        """Announce the claimed attempt's driver as alive, every ``interval_ms``, until its
        outcome is recorded (a retry waits for a live driver instead of taking over)."""
        if interval_ms <= 0:
            return
        self._heartbeat = HeartbeatWriter(
            self.storage, self.request.job_id, self.attempt_number, interval_ms=interval_ms,
            fingerprint=job_fingerprint(self.request.job.to_json()),
            status=self._heartbeat_status, health=self._health,
        ).start()

    def _heartbeat_status(self) -> dict[str, Any]:
        loop = self._loop
        last = loop.last_completed_id if loop is not None and loop.last_completed_id is not None else self.restored_id
        return {"application_id": self._application_id, "last_checkpoint_id": last}

    def _health(self) -> str | None:
        loop = self._loop
        stalled = loop.stalled_s() if loop is not None else 0.0
        if stalled > LOOP_STALL_S:
            return f"the driver loop has not run for {stalled:.0f} s"
        return None

    def _end_heartbeat(self, state: str, error: str | None, last: int | None) -> None:
        """The last record, after job.json and the attempt record: a reader that sees it
        reads the final status. Best effort: without it a reader sees the sequence stop."""
        heartbeat = self._heartbeat
        if heartbeat is None:
            return
        try:
            heartbeat.end(state, error, last_checkpoint_id=last)
        except Exception as err:  # noqa: BLE001 - never hide the run's own outcome
            log.info("could not write the last heartbeat of attempt %d: %s", self.attempt_number, err)

    def _fenced(self) -> bool:
        try:
            self.fence.check()
        except Fenced:
            return True
        return False

    def _release_after_error(self, err: BaseException, token: str) -> None:
        """An exception escaped after the claim: the attempt must not stay "running"
        (the recovery operator would count it as a driver killed without a trace)."""
        if self._released:
            return
        if isinstance(err, KeyboardInterrupt):
            detail = "interrupted"
        else:
            detail = first_line(f"{type(err).__name__}: {err}")
        try:
            self._release(Outcome(error=detail), token)
        except Exception as release_err:  # never hide the original error
            log.warning("could not record the failed attempt %d: %s", self.attempt_number, release_err)

    # ---- run ------------------------------------------------------------------------------
    def run(self, spark: Any = None) -> Outcome:
        from .routing import bind_schemas, load_sinks, load_sources, load_transforms, one_sink, preflight

        request = self.request
        job = request.job
        # A Spark setting of the job's own that breaks the engine's model: one line,
        # exit 2, before anything is claimed or started (engine/spark_settings.py).
        check_spark_settings({**job.spark_conf, **request.spark_conf})
        # Live checks of the systems the job reads and writes (reachable, tables and
        # columns as configured), before anything is claimed or started.
        sources = load_sources(job.sources)
        for source in sources:
            preflight(source)
        sinks = load_sinks(job, sources)
        outputs = bind_schemas(job.graph, sources, load_transforms(job.transforms), sinks)
        for sink, output in zip(sinks, outputs):
            preflight(sink)
            if output is not None:
                preflight(sink, lambda sink=sink, output=output: sink.accepts(output))
        sink = one_sink(sinks)
        committer = sink.create_committer(request.job_id)
        heartbeat_interval = self._heartbeat_interval()  # a bad value fails before the claim
        token = secrets.token_hex(16)
        manifest, highest_id, restored_infos = self.claim(token, sink, committer)
        try:
            self._start_heartbeat(heartbeat_interval)
            self._history = self._start_history()
            return self._run_claimed(spark, token, manifest, highest_id, committer, restored_infos, sources)
        except BaseException as err:
            self._release_after_error(err, token)
            raise
        finally:
            if self._heartbeat is not None:
                self._heartbeat.stop()
            self._close_history()

    def _close_history(self) -> None:
        """Write the history's last entries and stop its thread (once)."""
        history, self._history = self._history, None
        if history is not None:
            history.close()

    def _start_history(self) -> HistoryRecorder | None:
        """The attempt's checkpoint history (docs/history.md), opened by where it restored from."""
        size = self.request.config.history_size
        if not size:
            return None
        recorder = self.open_history(size)
        recorder.start()
        return recorder

    def open_history(self, size: int) -> HistoryRecorder:
        """The recorder, its first entry recorded, its thread not started (the simulation
        flushes it itself). A driver taken over writes no more history."""
        recorder = HistoryRecorder(self.storage, self.request.job_id, self.attempt_number, size,
                                   taken_over=self.fence.taken_over)
        recorder.record(restore_entry(self.attempt_number, wall_ms(), self.restored_id))
        return recorder

    def claim(self, token: str, sink: Any, committer: Any) -> tuple[Any, int, list[Any]]:
        """Claim the job, choose the checkpoint to restore and make the checkpoints and
        the sink output match it; returns (restored manifest or None, highest checkpoint
        id ever used, the restored commit infos). No Spark here: the deterministic
        simulation (tests/simulation) drives this same code.

        Claim first, then fence what the previous driver may still complete, and only
        then choose what to restore: a driver that is still running (a zombie) can
        complete no checkpoint this run does not see (engine/fencing.py)."""
        job_id = self.request.job_id
        self.sink_layout = sink_layout(sink)
        existing = self.storage.read_document(job_id, JOB_DOCUMENT) or {}
        claim = self._claim_fence(token, existing)
        highest_id = max(self.store.highest_id(), claim.highest_reserved)  # before --discard-existing
        manifest = self.choose_restore(existing)
        if manifest is not None:  # each sink gets its own output, wherever its block is now
            manifest = restored_for_sinks(manifest, sink, self.request.allow_non_restored_state,
                                          lambda line: self.progress(f"job {job_id}: {line}"))
        self.restored_id = manifest.checkpoint_id if manifest is not None else None
        if self.discarded:
            committer.discard_job()
        restored_infos = commit_infos_of(manifest.commit_infos) if manifest is not None else []

        highest_id = self._claim(token, self.restored_id, existing, highest_id)
        sink.run_attempt = self.attempt_number
        try:
            self._restore_output(committer, restored_infos)
        except BaseException as err:
            self._release(Outcome(error=f"restoring the sink output failed: {err}"), token)
            raise
        start_fresh = getattr(committer, "start_fresh", None)  # committers written before the hook lack it
        if manifest is None and start_fresh is not None:  # the sinks' save modes, never on a restore
            try:
                start_fresh()
            except BaseException as err:
                self._release(Outcome(error=first_line(str(err))), token)
                raise
        return manifest, highest_id, restored_infos

    def coordinator(self, manifest: Any, highest_id: int, clock: Callable[[], int] = monotonic_ms) -> CheckpointCoordinator:
        """The pipeline's coordinator, restored from ``manifest`` (None: from the start),
        numbering on above every id the job ever used."""
        config = self.request.config
        parallelism = self.request.job.parallelism
        restored = None
        if manifest is not None:
            restored = rescaled(self.store.from_manifest(manifest), parallelism)
            if restored.num_subtasks != manifest.properties.get("parallelism", restored.num_subtasks):
                self.progress(f"rescaling from {manifest.properties.get('parallelism')} to {parallelism} subtasks")
        return CheckpointCoordinator(
            PIPELINE_ID,
            parallelism,
            CoordinatorSettings(
                interval_ms=config.interval,
                timeout_ms=config.timeout,
                min_pause_ms=config.min_pause,
                max_concurrent=config.max_concurrent,
                tolerable_failure=config.tolerable_failure,
            ),
            clock,
            restored=restored,
            next_checkpoint_id=max(highest_id, self.restored_id or 0) + 1,
        )

    def end(self, outcome: Outcome, committer: Any, token: str) -> None:
        """After the driver loop: a finished job's staged leftovers go (and with
        delete-on-finish its checkpoints), then the outcome is recorded; with
        delete-on-finish the finished job is then deleted from storage as a whole."""
        request = self.request
        forget = False
        self._close_history()  # the loop is done: its last entries go before the outcome
        # A run that finished after another attempt claimed the job (its last commit
        # landed just before the claim) leaves the sink and the checkpoints to the
        # claimant: the staging its cleanup would remove may be the claimant's.
        if outcome.finished and not self._fenced():
            final_infos = []
            latest = self.store.latest_restorable(verify=False)
            if latest is not None:
                final_infos = commit_infos_of(latest.commit_infos)
            committer.cleanup(final_infos)
            if not outcome.stopped_with_savepoint:
                try:
                    committer.job_finished(self.restored_id)
                except DataError as err:  # the output is committed, but the job's own check fails
                    outcome.finished, outcome.error = False, str(err)
                    self._release(outcome, token)
                    return
            # A stop-with-savepoint is not the end of the job: its savepoint is where
            # the next run resumes, so delete-on-finish keeps it.
            if request.config.deletes_on_finish and not outcome.stopped_with_savepoint:
                self.storage.delete_checkpoint(request.job_id, PIPELINE_ID)
                committer.discard_job()
                forget = True
        self._release(outcome, token)
        if forget:
            self._forget_job()

    def _forget_job(self) -> None:
        """delete-on-finish: nothing of the finished job stays in storage (docs/storage.md,
        "When a job ends"). After the outcome is recorded (a follower of the live driver
        may read it) and the heartbeat and history stopped, so nothing writes again. The
        fence log goes first, oldest record first (``FenceLog.erase``): a driver taken
        over that still runs then finds its claim gone and creates and commits nothing;
        then the rest. A failure leaves storage only, and says how to remove it."""
        job_id = self.request.job_id
        where = self.storage.describe(job_id)
        if self._heartbeat is not None:
            self._heartbeat.stop()
        try:
            self.fence.check("deleting the finished job")  # a run that claimed since owns what is there
            self.fence.erase()
            self.storage.delete_checkpoint(job_id)
        except Exception as err:  # noqa: BLE001 - the job finished and its output is committed
            self.progress(f"job {job_id}: finished, but deleting it from {where} failed ({first_line(str(err))}); "
                          f"remove it with seatunnel-ckpt delete --yes --job-id {job_id}")
            return
        self.progress(f"job {job_id}: finished; deleted from {where} (externalized-retention: delete-on-finish)")

    def _run_claimed(
        self, spark: Any, token: str, manifest: Any, highest_id: int, committer: Any, restored_infos: list[Any],
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
        context = self.spark.sparkContext
        slots = context.defaultParallelism
        if slots < job.parallelism:
            raise ConfigError(
                "env.parallelism",
                f"{job.parallelism} subtasks must run at the same time but the Spark master offers {slots} task slots",
            )
        if not owns_spark:  # a context given to the job: its settings can no longer change
            check_running_spark_settings(dict(context.getConf().getAll()))
        self._application_id = context.applicationId
        self._heartbeat_conf(context.getConf().get(INTERVAL_KEY))
        endpoint = control_endpoint(context.getConf().get, context.master)
        source = one_source(sources)
        splits, plan_ref = self.plan_splits(source, manifest)
        plan = plan_entries(splits)
        coordinator = self.coordinator(manifest, highest_id)
        loop = DriverLoop(
            coordinator, self.store, committer, self.fence,
            properties={"job_name": job.name, "attempt": self.attempt_number, PLAN_REF_KEY: plan_ref},
            split_plan=plan,
            progress=self.progress,
            durable_infos=restored_infos,
            history=self._history,
            sinks=self.sink_layout,
        )
        if source.discovery_interval_s:
            loop.discovery = SplitDiscovery(source, splits, source.discovery_interval_s, loop.splits_discovered)
        self._loop = loop
        try:
            server = ControlServer(
                host=endpoint.bind_address, port=endpoint.port, on_message=loop.on_message,
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
        )
        restored_text = "the beginning"
        if manifest is not None:
            restored_text = f"{'savepoint' if manifest.kind.value == 'savepoint' else 'checkpoint'} {self.restored_id}"
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

    def _heartbeat_conf(self, configured: str | None) -> None:
        """spark-submit's ``--conf spark.seatunnel.heartbeatInterval`` (the operator's
        ``conf``), known only once Spark runs: the records carry the interval, so a reader
        follows the change."""
        if configured is None or self._heartbeat is None:
            return
        try:
            interval = parse_interval(configured)
        except ConfigError as err:
            log.warning("%s; heartbeats stay every %d ms", err, self._heartbeat.interval_ms)
            return
        if interval > 0:
            self._heartbeat.set_interval(interval)
        else:
            self._heartbeat.stop()

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
