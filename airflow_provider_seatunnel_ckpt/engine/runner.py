"""Run a checkpointed job: the driver side of ``seatunnel-ckpt run`` and of spark-submit.

The driver chooses the checkpoint to restore, repairs the sink output to match it
(replays its commits, rolls back anything newer, removes uncommitted staging), claims
the job with a fresh fencing token, starts the control server and the coordinator
loop, and launches one long-running Spark task per subtask. Every run attempt is
recorded under ``attempts/`` in checkpoint storage.

``JobRun`` puts the attempt's duties together: engine/claim.py (claim, fence, outcome),
engine/restore.py (restore and split plan), engine/liveness.py (heartbeat and history),
engine/launch.py (the Spark job); engine/run_state.py holds what they share.
"""

from __future__ import annotations

import functools
import secrets
from collections.abc import Callable
from typing import Any

from ..errors import DataError
from .claim import ClaimDuty
from .completed_store import commit_infos_of, rescaled
from .coordinator import CheckpointCoordinator, CoordinatorSettings
from .driver import Outcome, first_line, monotonic_ms
from .launch import LaunchDuty
from .liveness import LivenessDuty
from .restore import RestoreDuty
from .run_state import DISCARDING, JOB_DOCUMENT, PIPELINE_ID, RunRequest, parse_restore
from .sink_identity import layout as sink_layout
from .sink_identity import restored as restored_for_sinks
from .spark_settings import check_spark_settings
from .spark_start import SparkStart, starts_its_own_jvm

__all__ = ["DISCARDING", "JOB_DOCUMENT", "PIPELINE_ID", "JobRun", "RunRequest", "parse_restore"]


class JobRun(ClaimDuty, RestoreDuty, LivenessDuty, LaunchDuty):
    """One attempt at running a job; ``run()`` returns the outcome."""

    def run(self, spark: Any = None) -> Outcome:
        from .routing import bind_schemas, load_sinks, load_sources, load_transforms, one_sink, preflight

        request = self.request
        job = request.job
        # Spark starts beside the checks, the claim and the restore, its output held
        # until the claim (engine/spark_start.py; `seatunnel-ckpt run` starts it before
        # this; under spark-submit it is created after the claim); no Spark job runs before that.
        starting = spark if isinstance(spark, SparkStart) else None
        try:
            # A Spark setting of the job's own that breaks the engine's model: one line,
            # exit 2, before anything is claimed or started (engine/spark_settings.py).
            check_spark_settings({**job.spark_conf, **request.spark_conf})
            if spark is None and starts_its_own_jvm():
                starting = SparkStart(request)
            # Live checks of the systems the job reads and writes (reachable, tables and
            # columns as configured), before anything is claimed.
            sources = load_sources(job.sources)
            for source in sources:
                preflight(source)
            sinks = load_sinks(job, sources)
            outputs = bind_schemas(job.graph, sources, load_transforms(job.transforms), sinks)
            checkpoints = request.config
            for sink, output in zip(sinks, outputs):
                preflight(sink)
                preflight(
                    sink, functools.partial(sink.accepts_checkpointing, checkpoints.interval, checkpoints.timeout)
                )
                if output is not None:
                    preflight(sink, functools.partial(sink.accepts, output))
            sink = one_sink(sinks)
            committer = sink.create_committer(request.job_id)
            heartbeat_interval = self._heartbeat_interval()  # a bad value fails before the claim
            token = secrets.token_hex(16)
            manifest, highest_id, restored_infos = self.claim(token, sink, committer)
        except BaseException:
            if starting is not None:
                starting.abandon()
            raise
        try:
            self._start_heartbeat(heartbeat_interval)
            self._history = self._start_history()
            return self._run_claimed(starting or spark, token, manifest, highest_id, committer, restored_infos, sources)
        except BaseException as err:
            self._release_after_error(err, token)
            raise
        finally:
            if self._heartbeat is not None:
                self._heartbeat.stop()
            self._close_history()

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
            manifest = restored_for_sinks(
                manifest,
                sink,
                self.request.allow_non_restored_state,
                lambda line: self.progress(f"job {job_id}: {line}"),
            )
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

    def coordinator(
        self, manifest: Any, highest_id: int, clock: Callable[[], int] = monotonic_ms
    ) -> CheckpointCoordinator:
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
