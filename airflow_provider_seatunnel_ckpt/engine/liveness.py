"""Liveness: the attempt's heartbeat in storage (engine/heartbeat.py), from the claim to the
recorded outcome, and its checkpoint history (history/, docs/history.md)."""

from __future__ import annotations

import logging
from typing import Any

from ..errors import ConfigError
from ..history import HistoryRecorder, restore_entry
from .completed_store import wall_ms
from .heartbeat import (
    DEFAULT_INTERVAL_MS,
    HEARTBEAT_DIR,
    INTERVAL_KEY,
    LOOP_STALL_S,
    HeartbeatWriter,
    job_fingerprint,
    parse_interval,
)
from .heartbeat import (
    record_path as heartbeat_record_path,
)
from .run_state import RunState

log = logging.getLogger(__name__)


class LivenessDuty(RunState):
    """JobRun's heartbeat and checkpoint history."""

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
            self.storage,
            self.request.job_id,
            self.attempt_number,
            interval_ms=interval_ms,
            fingerprint=job_fingerprint(self.request.job.to_json()),
            status=self._heartbeat_status,
            health=self._health,
        ).start()
        self._prune_heartbeats()

    def _prune_heartbeats(self) -> None:
        """Delete the heartbeat records of earlier attempts: a reader takes the newest
        attempt's only (``heartbeat.read_newest``), so they would pile up by one per
        driver start for nothing. Only once this attempt's own record is in storage (its
        first beat is written before this runs; a failed one keeps the previous
        attempt's, so a reader is never left with none). A driver taken over deletes
        nothing; a zombie still alive rewrites its own record, which the next claimant
        deletes again. Only tidiness."""
        job_id = self.request.job_id
        try:
            if self.fence.taken_over():
                return
            attempts = sorted(
                int(stem)
                for stem in (name.removesuffix(".json") for name in self.storage.list_documents(job_id, HEARTBEAT_DIR))
                if stem.isdigit()
            )
            if self.attempt_number not in attempts:
                attempts = attempts[:-1]  # the newest earlier one stands in for this attempt's
            for attempt in attempts:
                if attempt < self.attempt_number:
                    self.storage.delete_document(job_id, heartbeat_record_path(attempt))
        except Exception as err:  # a stray heartbeat costs storage only; the next claimant retries
            log.info("could not delete the heartbeats of earlier attempts of job %s: %s", job_id, err)

    def _heartbeat_status(self) -> dict[str, Any]:
        loop = self._loop
        last = loop.last_completed_id if loop is not None and loop.last_completed_id is not None else self.restored_id
        live = loop.live if loop is not None else {}
        return {"application_id": self._application_id, "last_checkpoint_id": last, **live}

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
        except Exception as err:  # never hide the run's own outcome
            log.info("could not write the last heartbeat of attempt %d: %s", self.attempt_number, err)

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

    def _leave_no_records(self) -> None:
        """This driver was taken over, and the job was deleted since (the claimant
        finished it with delete-on-finish): it records no outcome, and removes the
        heartbeat its thread wrote meanwhile, so the deleted job stays empty."""
        if self._heartbeat is None:
            return
        self._heartbeat.stop()
        try:
            self.storage.delete_document(self.request.job_id, heartbeat_record_path(self.attempt_number))
        except Exception as err:  # a stray heartbeat costs storage only
            log.info("could not delete the heartbeat of attempt %d: %s", self.attempt_number, err)

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
        recorder = HistoryRecorder(
            self.storage, self.request.job_id, self.attempt_number, size, taken_over=self.fence.taken_over
        )
        recorder.record(restore_entry(self.attempt_number, wall_ms(), self.restored_id))
        return recorder
