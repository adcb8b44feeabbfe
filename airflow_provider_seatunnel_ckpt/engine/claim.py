"""Claim and fence: win the job's fence log, fence the checkpoint a previous driver may
still complete, record the claim in ``job.json`` and the attempt record, and record the
outcome at the end (``_release``); with delete-on-finish, forget the finished job
(engine/fencing.py; docs/architecture.md, "Why the output is exactly-once"; docs/storage.md,
"When a job ends")."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from ..history.attempts import fold_earlier, record_path
from .completed_store import wall_ms
from .driver import Outcome, first_line
from .fencing import TAKEN_OVER, Claim, Fenced
from .heartbeat import FENCED
from .run_state import JOB_DOCUMENT, PIPELINE_ID, RunState

log = logging.getLogger(__name__)


class ClaimDuty(RunState):
    """JobRun's claim, fencing and outcome records (its heartbeat's last record comes
    from ``LivenessDuty``)."""

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
        # After this run's own record: a reader never misses an attempt, and storage holds
        # two attempt documents however often the driver restarts (history/attempts.py).
        fold_earlier(self.storage, job_id, self.attempt_number)
        return highest_id

    def _record_attempt(self, fields: dict[str, Any]) -> None:
        path = record_path(self.attempt_number)
        record = self.storage.read_document(self.request.job_id, path) or {"attempt": self.attempt_number}
        record.update(fields)
        self.storage.write_document(self.request.job_id, path, record)

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
        except Exception as err:  # the job finished and its output is committed
            self.progress(
                f"job {job_id}: finished, but deleting it from {where} failed ({first_line(str(err))}); "
                f"remove it with seatunnel-ckpt delete --yes --job-id {job_id}"
            )
            return
        self.progress(f"job {job_id}: finished; deleted from {where} (externalized-retention: delete-on-finish)")
