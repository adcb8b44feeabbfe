"""Resumable tracking: a try that finds the job's driver alive waits for it instead of taking over.

When an Airflow worker dies, spark-submit and the Spark driver it started usually live
on. The retry first watches the driver's heartbeat in checkpoint storage
(engine/heartbeat.py): a live driver of the same job definition (digest) is attached
to, and the try ends as its run ends; a stale, missing, ended or foreign one is taken
over as before (the claim fences it should it come back); a heartbeat that stops while
the try waits means a takeover then. The tracking (:class:`DriverTracker`) needs only
the hook's storage and a logger; :func:`attach_to_live_driver` is the operator's one call.

The rules and what the task log shows: docs/airflow.md, "When the worker dies:
resumable tracking".
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..engine.heartbeat import (
    FAILED,
    FENCED,
    Beat,
    Liveness,
    Verdict,
    read_newest,
    stale_after_ms,
)
from ..hooks.base import PIPELINE_ID
from ..storage.layout import JOB_FILE

if TYPE_CHECKING:
    from ..hooks import CheckpointStorageHook

#: what the tracker returns when this try should run the job itself (as before)
TAKE_OVER = "take over"
MAX_POLL_S = 2.0
MIN_POLL_S = 0.25


@dataclass
class Tracked:
    """How following a live driver ended."""

    #: ``finished`` / ``stopped`` / ``failed`` (the job's status), or TAKE_OVER
    outcome: str
    #: the attempt followed last
    attempt: int | None = None
    #: ``job.json`` as read at the end
    status: dict[str, Any] = field(default_factory=dict)
    #: checkpoint ids the followed driver(s) completed while this try watched
    checkpoints: list[int] = field(default_factory=list)


def _poll_s(beat: Beat | None) -> float:
    interval = (beat.interval_ms if beat is not None else 2_000) / 1000
    return max(MIN_POLL_S, min(MAX_POLL_S, interval / 2))


class DriverTracker:
    """Find a live driver of ``job_id`` and follow it to the job's end.

    ``clock`` (monotonic seconds) and ``sleep`` are injected so the rules run on a fake
    clock in tests; nothing else here keeps time."""

    def __init__(
        self,
        storage: Any,
        job_id: str,
        log: logging.Logger | Any,
        *,
        fingerprint: str | None = None,
        deletes_on_finish: bool = False,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.storage = storage
        self.job_id = job_id
        self.log = log
        self.fingerprint = fingerprint
        #: externalized-retention: delete-on-finish: the driver deletes the job it finished
        self.deletes_on_finish = deletes_on_finish
        self.clock = clock
        self.sleep = sleep
        self.completed: list[int] = []
        self._reported: int | None = None

    def _now_ms(self) -> int:
        return int(self.clock() * 1000)

    def _status(self) -> dict[str, Any]:
        return dict(self.storage.read_document(self.job_id, JOB_FILE) or {})

    # ---- find -------------------------------------------------------------------------------------
    def find(self) -> tuple[Beat, Liveness] | None:
        """The job's driver if it is alive (it proved so by advancing its heartbeat while
        watched); None when this try should run the job itself."""
        status = self._status()
        if status.get("status") != "running":
            return None  # nothing runs: finished, failed, stopped, or never started
        watch = Liveness()
        announced = False
        while True:
            beat = read_newest(self.storage, self.job_id)
            verdict = watch.observe(beat, self._now_ms())
            if verdict is Verdict.NONE or beat is None:
                self.log.info(
                    "job %s: no driver heartbeat in storage (attempt %s); running the job here",
                    self.job_id,
                    status.get("attempt"),
                )
                return None
            if not announced:
                announced = True
                if self._foreign(beat):
                    return None
                if not beat.ended:
                    self.log.info(
                        "job %s: attempt %d's driver (%s) is marked running; watching its heartbeat for up to %.0f s "
                        "before deciding to attach or take over",
                        self.job_id,
                        beat.attempt,
                        beat.where(),
                        stale_after_ms(beat.interval_ms) / 1000,
                    )
            if verdict is Verdict.ALIVE:
                self.log.info(
                    "job %s: attempt %d's driver is alive (%s; heartbeat every %.1f s, newest checkpoint %s); "
                    "attaching to it instead of taking the job over",
                    self.job_id,
                    beat.attempt,
                    beat.where(),
                    beat.interval_ms / 1000,
                    beat.last_checkpoint_id if beat.last_checkpoint_id is not None else "none",
                )
                self._reported = beat.last_checkpoint_id
                return beat, watch
            if verdict is Verdict.ENDED:
                self.log.info(
                    "job %s: attempt %d's driver has ended (%s); running the job here",
                    self.job_id,
                    beat.attempt,
                    beat.state,
                )
                return None
            if verdict is Verdict.STALE:
                self._stale(beat, watch)
                return None
            self.sleep(_poll_s(beat))

    def _foreign(self, beat: Beat) -> bool:
        if self.fingerprint is None or beat.job_fingerprint is None:
            return False
        if beat.job_fingerprint == self.fingerprint:
            return False
        self.log.warning(
            "job %s: attempt %d's driver (%s) runs another definition of the job (digest %s, this task's %s); "
            "not attaching: running the job here takes it over",
            self.job_id,
            beat.attempt,
            beat.where(),
            beat.job_fingerprint,
            self.fingerprint,
        )
        return True

    def _stale(self, beat: Beat, watch: Liveness) -> None:
        self.log.warning(
            "job %s: no heartbeat from attempt %d's driver (%s) for %.1f s; taking the job over (that driver is "
            "fenced if it comes back)",
            self.job_id,
            beat.attempt,
            beat.where(),
            watch.waited_ms(self._now_ms()) / 1000,
        )

    # ---- follow -----------------------------------------------------------------------------------
    def follow(self, beat: Beat, watch: Liveness) -> Tracked:
        """Wait for the job's outcome, logging each checkpoint the driver completes."""
        followed = beat.attempt
        fenced_at: int | None = None  # reader time the followed driver said it was taken over
        while True:
            self.sleep(_poll_s(beat))
            now = self._now_ms()
            newest = read_newest(self.storage, self.job_id)
            if newest is not None and fenced_at is not None and newest.attempt == followed:
                # taken over, and the claimant has no heartbeat (yet): give it the stale window
                if now - fenced_at >= stale_after_ms(newest.interval_ms):
                    self.log.warning(
                        "job %s: attempt %d's driver was taken over by a driver without a heartbeat; "
                        "taking the job over",
                        self.job_id,
                        followed,
                    )
                    return Tracked(TAKE_OVER, followed, self._status(), list(self.completed))
                continue
            verdict = watch.observe(newest, now)
            if newest is None:
                return self._gone(followed)
            beat = newest
            if beat.attempt != followed:
                self.log.info(
                    "job %s: attempt %d claimed the job from attempt %d; following its driver (%s)",
                    self.job_id,
                    beat.attempt,
                    followed,
                    beat.where(),
                )
                followed, fenced_at = beat.attempt, None
            self._report(beat)
            if verdict is Verdict.ENDED:
                if beat.state == FENCED:
                    fenced_at = now
                    continue
                return self._ended(beat)
            if verdict is Verdict.STALE:
                self._stale(beat, watch)
                return Tracked(TAKE_OVER, followed, self._status(), list(self.completed))

    def _gone(self, followed: int) -> Tracked:
        """The followed driver's heartbeat vanished. With delete-on-finish, a job whose
        job.json went too was deleted by the driver that finished it (a failed or stopped
        job keeps its storage): running it again would do it twice."""
        status = self._status()
        if self.deletes_on_finish and not status:
            self.log.info(
                "job %s: attempt %d's driver finished the job and deleted it from storage "
                "(delete-on-finish); %d checkpoint(s) completed while attached",
                self.job_id,
                followed,
                len(self.completed),
            )
            return Tracked("finished", followed, status, list(self.completed))
        self.log.warning(
            "job %s: the heartbeat of attempt %d's driver is gone from storage; taking the job over",
            self.job_id,
            followed,
        )
        return Tracked(TAKE_OVER, followed, status, list(self.completed))

    def _ended(self, beat: Beat) -> Tracked:
        status = self._status()
        outcome = str(status.get("status") or beat.state)
        if outcome == "running":  # job.json not updated (its write failed): the heartbeat says how it ended
            outcome = beat.state
        if outcome == FAILED:
            self.log.error(
                "job %s: attempt %d's driver failed: %s",
                self.job_id,
                beat.attempt,
                status.get("error") or beat.error or "unknown error",
            )
        else:
            self.log.info(
                "job %s: attempt %d's driver ended the job: %s (final checkpoint %s, savepoint %s); "
                "%d checkpoint(s) completed while attached",
                self.job_id,
                beat.attempt,
                outcome,
                status.get("final_checkpoint_id"),
                status.get("savepoint_id"),
                len(self.completed),
            )
        return Tracked(outcome, beat.attempt, status, list(self.completed))

    def _report(self, beat: Beat) -> None:
        """Log the checkpoints completed since the last report (one listing per change)."""
        newest = beat.last_checkpoint_id
        if newest is None or (self._reported is not None and newest <= self._reported):
            return
        since = self._reported
        self._reported = newest
        try:
            entries = [
                e
                for e in self.storage.list_checkpoint_entries(self.job_id, PIPELINE_ID)
                if e.completed and (since is None or e.checkpoint_id > since) and e.checkpoint_id <= newest
            ]
        except Exception as err:  # reporting only
            self.log.info(
                "job %s: checkpoint %d completed by attempt %d's driver (could not list: %s)",
                self.job_id,
                newest,
                beat.attempt,
                err,
            )
            self.completed.append(newest)
            return
        for entry in sorted(entries, key=lambda e: e.checkpoint_id):
            self.completed.append(entry.checkpoint_id)
            self.log.info("job %s: %s", self.job_id, self._describe(entry, beat.attempt))

    def _describe(self, entry: Any, attempt: int) -> str:
        kind = "savepoint" if entry.savepoint else "checkpoint"
        text = f"{kind} {entry.checkpoint_id} completed by attempt {attempt}'s driver"
        try:
            manifest = self.storage.read_manifest(self.job_id, PIPELINE_ID, entry.checkpoint_id, entry.savepoint)
        except Exception:  # retention may have removed it already
            return text
        stats: Mapping[str, Any] = manifest.statistics if isinstance(manifest.statistics, Mapping) else {}
        rows = stats.get("rows")
        parts = [f"{manifest.kind.value}"]
        if rows is not None:
            parts.append(f"{int(rows):,} rows")
        parts.append(f"{manifest.state_size:,} B state")
        if stats.get("duration_ms") is not None:
            parts.append(f"{int(stats['duration_ms'])} ms")
        return f"{text} ({', '.join(parts)})"

    # ---- both -------------------------------------------------------------------------------------
    def track(self) -> Tracked | None:
        """None: no live driver, run the job here. Otherwise how following it ended
        (``outcome`` TAKE_OVER when its heartbeat stopped while this try waited)."""
        found = self.find()
        if found is None:
            return None
        return self.follow(*found)


def attach_to_live_driver(
    operator: Any,
    context: Any,
    hook: CheckpointStorageHook,
    job_id: str,
    job: Any = None,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any] | None:
    """The operator's call before it submits: when a live driver of ``job_id`` runs (a
    previous try's, whose worker died), wait for it and return the operator's result
    for the job's end (``operator._result(..., ran=True)``: the same dict as a run of its
    own); raise ``AirflowException`` when that driver fails (the task's retry resumes
    from its latest checkpoint). None: run the job here, as before (no live driver, or
    its heartbeat stopped; the claim fences it)."""
    from airflow.sdk.exceptions import AirflowException

    from ..engine.heartbeat import job_fingerprint

    fingerprint = job_fingerprint(job.to_json()) if job is not None else None
    tracker = DriverTracker(
        hook.storage,
        job_id,
        operator.log,
        fingerprint=fingerprint,
        deletes_on_finish=hook.config.deletes_on_finish,
        clock=clock,
        sleep=sleep,
    )
    tracked = tracker.track()
    if tracked is None or tracked.outcome == TAKE_OVER:
        return None
    if tracked.outcome == FAILED:
        status = tracked.status
        latest = hook.get_latest_checkpoint_id(job_id)
        where = (
            f"latest completed checkpoint {latest} in {hook.describe(job_id)}: a retry resumes from it"
            if latest is not None
            else "no completed checkpoint yet: a retry starts from the beginning"
        )
        operator._lineage_run = {"job_id": job_id, "status": status.get("status"), "attempt": status.get("attempt")}
        raise AirflowException(
            f"job {job_id}: the driver of attempt {tracked.attempt}, which this try attached to, failed: "
            f"{status.get('error') or 'unknown error'}; {where}"
        )
    return operator._result(context, hook, job_id, ran=True)
