"""At most one driver works on a job, whatever the timing: fencing by create-only writes.

An Airflow task whose worker stopped heartbeating is retried while the first spark-submit
may still run (a zombie): two drivers, one job id. Every step that matters is a write only
one driver can win (``FileSystem.create_new``): the fence log ``fence/<seq>.json``, where
a driver claims the job and reserves each checkpoint id before writing its
``_metadata``, and ``_metadata`` itself, created, never replaced (the claimant fences the
id the old driver reserved last with an empty one). The log stays small: a driver prunes
its own older reservations (:meth:`FenceLog.prune`) and a claimant deletes every record
below its claim, oldest first (:meth:`FenceLog.claim`), so a driver that finds its own
claim gone counts it as a takeover.

Why this is enough, and the zombie rules: docs/architecture.md, "Why the output is
exactly-once"; the backends' create-or-fail: docs/storage.md, "Create-only writes".
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

from ..errors import CheckpointError, CheckpointStorageError

log = logging.getLogger(__name__)

FENCE_DIR = "fence"
#: reservations between two prunes of a driver's own older ones. Every one: the log then
#: holds the claim and the newest reservation, whatever the moment a reader lists it
#: (with 10 it held 2 to 11 records), for one delete per checkpoint, made on the fence
#: thread that reserves ahead of the trigger, not on the checkpoint's path
PRUNE_EVERY = 1
CLAIM_TRIES = 20
#: test-only: milliseconds to sleep after each fence step, before the write it guards,
#: so a test can make another driver's claim land inside the window deterministically
TEST_WINDOW_ENV = "SEATUNNEL_CKPT_TEST_FENCE_WINDOW_MS"


class Fenced(CheckpointError):
    """Another driver took over this job id; this one must not complete or commit anything."""


#: what every takeover error says (a failure that already says it is not wrapped again)
TAKEN_OVER = "was taken over by another driver"


def record_name(seq: int) -> str:
    return f"{FENCE_DIR}/{seq:012d}.json"


def _seq_of(name: str) -> int | None:
    stem = name[: -len(".json")] if name.endswith(".json") else ""
    return int(stem) if stem.isdigit() else None


@dataclass(frozen=True)
class Claim:
    attempt: int
    seq: int
    #: (checkpoint id, savepoint) the previous driver reserved last: it may still complete it
    pending: tuple[int, bool] | None
    #: the attempt that made that reservation
    pending_attempt: int | None
    #: the highest checkpoint id any driver reserved (ids are never reused)
    highest_reserved: int


class FenceLog:
    """One driver's view of a job's fence log (its claim and reservations)."""

    def __init__(self, storage: Any, job_id: str, *, deletable: bool = False):
        self.storage = storage
        self.job_id = job_id
        #: the job's storage may be deleted while drivers run (delete-on-finish)
        self.deletable = deletable
        self.seq = 0
        self.attempt = 0
        #: the number of this driver's claim (0: it claimed nothing)
        self._claim_seq = 0
        self._reserved = 0
        self._prunable_from = 1
        #: the compaction at the claim did not finish: prune() goes on with it
        self._compact_below = 0
        #: which of the two reads :meth:`watch` made last (the first reads the record after)
        self._watch_claim_next = True
        # A reservation made at a trigger (fence thread) may run while a commit's check
        # (storage worker) reads the record after ``seq``: between creating that record
        # and advancing ``seq``, the check would take the driver's own reservation for a
        # newer claim. Creating and advancing, and reading, happen under this lock.
        self._lock = threading.RLock()
        window = os.environ.get(TEST_WINDOW_ENV, "")
        self._test_window_s = int(window) / 1000 if window.isdigit() else 0.0

    # ---- claim (the new driver) -----------------------------------------------------------
    def claim(self, token: str, min_attempt: int = 0) -> Claim:
        """Create the record after the highest one; retried when another driver wins it.

        The claim's ``pending`` is the newest reservation in the log: the only one that
        can still be unresolved (every driver fences it before reserving anything), so
        the caller fences it even when drivers that claimed in between died first. The
        claim record carries it (``reservation``), so that the records below the claim
        can go: they are deleted right after it, oldest first (:meth:`_compact`)."""
        for _ in range(CLAIM_TRIES):
            seqs = self._sequence_numbers()
            last_seq = seqs[-1] if seqs else 0
            last = self._read(last_seq) if last_seq else None
            attempt = max(int((last or {}).get("attempt") or 0), min_attempt) + 1
            reservation = self._newest_reservation(seqs)
            record = {
                "seq": last_seq + 1,
                "kind": "claim",
                "attempt": attempt,
                "token": token,
                "written_ms": _now_ms(),
                "reservation": _carried(reservation),
            }
            try:
                self.storage.create_document(self.job_id, record_name(last_seq + 1), record)
            except FileExistsError:
                continue  # another driver claimed or reserved that number first: look again
            if self._listed_too_early(last_seq + 1):
                continue
            self.seq, self.attempt = last_seq + 1, attempt
            self._claim_seq = self.seq
            self._prunable_from = self.seq + 1
            self._compact_below = self.seq
            self._compact(seqs)
            if reservation is None:
                claim = Claim(attempt, self.seq, None, None, 0)
            else:
                checkpoint_id = int(reservation["checkpoint_id"])
                pending = (checkpoint_id, bool(reservation.get("savepoint")))
                claim = Claim(attempt, self.seq, pending, int(reservation.get("attempt") or 0), checkpoint_id)
            return claim
        raise CheckpointStorageError(
            f"job {self.job_id}: could not claim the job: {CLAIM_TRIES} tries lost to other drivers writing "
            f"{self.storage.describe(self.job_id)}/{FENCE_DIR}"
        )

    def _listed_too_early(self, seq: int) -> bool:
        """Whether a record above the claim just created at ``seq`` exists: the holder
        reserved on between this claimant's listing and its create, and its prune freed
        ``seq`` (it deletes its older reservations). Such a claim would carry a stale
        newest reservation and leave the holder's newest id unfenced, and the holder
        never reads a number below its own. The holder's newest record is never pruned,
        so a listing after the create shows it; the stray claim goes (the holder's next
        prune may also take it) and the claim starts again from a fresh listing."""
        seqs = self._sequence_numbers()
        if not seqs or seqs[-1] <= seq:
            return False
        self._delete_quietly(seq)
        return True

    def _newest_reservation(self, seqs: list[int]) -> dict[str, Any] | None:
        """Reservations only grow (a claimant starts above the highest), so the newest
        one also holds the highest id ever reserved; claims may sit after it. A claim
        carries the newest reservation below it (``reservation``: compaction deleted that
        record), so the search stops at the newest claim; claims of earlier releases
        carry nothing, and the search goes on below them."""
        for seq in reversed(seqs):
            record = self._read(seq)
            if not record:
                continue  # deleted since the listing (a prune or a compaction)
            if record.get("kind") == "reserve":
                return record
            if record.get("kind") == "claim" and "reservation" in record:
                carried = record["reservation"]
                return dict(carried) if isinstance(carried, dict) else None
        return None

    # ---- the claim's holder ---------------------------------------------------------------
    def reserve(self, checkpoint_id: int, savepoint: bool = False) -> int:
        """Reserve ``checkpoint_id`` before writing its ``_metadata``; ``Fenced`` when a
        newer claim exists. Returns the record's number (see :meth:`is_newest`)."""
        with self._lock:
            seq = self.seq + 1
            record = {
                "seq": seq,
                "kind": "reserve",
                "attempt": self.attempt,
                "checkpoint_id": checkpoint_id,
                "savepoint": savepoint,
                "written_ms": _now_ms(),
            }
            try:
                self.storage.create_document(self.job_id, record_name(seq), record)
            except FileExistsError:
                raise self.fenced_error() from None
            if self._claim_gone():  # the number was free: compacted by a newer claimant, or the job deleted
                self._delete_quietly(seq)
                raise self.fenced_error()
            self.seq = seq
            self._reserved += 1
            prune = self._reserved % PRUNE_EVERY == 0
        if prune:
            self.prune()
        self._test_window(f"after reserving checkpoint {checkpoint_id}")
        return seq

    def is_newest(self, seq: int) -> bool:
        """Whether record ``seq`` is still this driver's newest: a reservation made
        ahead (at the trigger) is good for the ``_metadata`` write only while no other
        reservation of this driver came after it, and (``deletable``) while the job was
        not deleted since: with the job went the claimant's fence of that id. (A
        compaction deletes fence records only, never the claimant's fence of the id, so
        a job that keeps its storage needs no read here.)"""
        return self.seq == seq and not (self.deletable and self._claim_gone())

    def check(self, before: str = "writing") -> None:
        """``Fenced`` when a newer claim exists (before a commit)."""
        self.require_claim()
        self._test_window(f"before {before}")

    def require_claim(self) -> None:
        """:meth:`check` without its test window: before writes of the run's own records
        (its split plan), which no test lands a takeover inside."""
        with self._lock:
            if self.taken_over():
                raise self.fenced_error()

    def taken_over(self) -> bool:
        """Whether a newer claim exists or this driver's claim is gone: :meth:`check`
        without its test window, for the driver's record keepers (the history), which
        decide nothing. The claim is read second: the log is compacted and erased
        oldest first, so when the record after this driver's newest is gone, its claim
        went before."""
        with self._lock:
            return self._read(self.seq + 1) is not None or self._claim_gone()

    def watch(self) -> bool:
        """:meth:`taken_over` at one storage read a call, for a driver that asks every
        second (``DriverLoop._watch_claim``): the record after this driver's newest and
        its own claim, read in turn. Once a newer claim exists, at every moment one of
        them says so (the claim after goes only after the own claim, which never comes
        back), so a takeover is seen within two calls."""
        with self._lock:
            self._watch_claim_next = not self._watch_claim_next
            if self._watch_claim_next:
                return self._claim_gone()
            return self._read(self.seq + 1) is not None

    def _claim_gone(self) -> bool:
        """This driver's claim was deleted: a newer claimant compacted it, or the job was
        deleted (only a newer claim, or the end of the job, removes a claim). Its number
        may hold another record by then: an older zombie whose next number it was creates
        it (its reservation, deleted again at once), so the record must be this claim."""
        if self._claim_seq <= 0:
            return False
        record = self._read(self._claim_seq)
        return record is None or record.get("kind") != "claim" or record.get("attempt") != self.attempt

    def fenced_error(self) -> Fenced:
        """The error of a driver whose claim was replaced (names the newer attempt)."""
        with self._lock:
            winner = self._read(self.seq + 1)
            if winner is None:  # compacted: the newest claim tells who holds the job
                winner = self._newest_claim()
        if winner is None and self.deletable:
            return Fenced(
                f"job {self.job_id} {TAKEN_OVER}, which finished it and deleted its storage "
                "(delete-on-finish); this driver stops without completing a checkpoint or committing"
            )
        return Fenced(
            f"job {self.job_id} {TAKEN_OVER} (attempt {(winner or {}).get('attempt', '?')}); "
            "this driver stops without completing a checkpoint or committing"
        )

    def erase(self) -> None:
        """Delete the whole log, oldest record first (a finished job with delete-on-finish
        leaves nothing): every driver still running that has the flag ``deletable`` meets
        either a claim after its newest record or its own claim gone (:meth:`taken_over`).
        A failure stops it there, which keeps that true."""
        for seq in self._sequence_numbers():
            self.storage.delete_document(self.job_id, record_name(seq))

    # ---- helpers ---------------------------------------------------------------------------
    def _sequence_numbers(self) -> list[int]:
        names = self.storage.list_documents(self.job_id, FENCE_DIR)
        return sorted(s for s in (_seq_of(n) for n in names) if s is not None)

    def _read(self, seq: int) -> dict[str, Any] | None:
        return self.storage.read_document(self.job_id, record_name(seq))

    def _newest_claim(self) -> dict[str, Any] | None:
        for seq in reversed(self._sequence_numbers()):
            record = self._read(seq)
            if record and record.get("kind") == "claim" and int(record.get("seq") or 0) != self._claim_seq:
                return record
        return None

    def prune(self) -> None:
        """Delete this driver's own reservation records but the newest (and finish a
        compaction the claim could not).

        A driver never deletes its own claim: the claim after a driver's last record is
        what fences that driver, and a deleted record would be a free number a fenced
        driver could still create. A reservation is only ever the target of its own
        driver, which has moved past it; the newest stays, so a claimant finds the
        highest id reserved."""
        if self._compact_below:
            self._compact(self._sequence_numbers())
        try:
            for seq in range(self._prunable_from, self.seq):
                self.storage.delete_document(self.job_id, record_name(seq))
                self._prunable_from = seq + 1
        except CheckpointStorageError as err:  # only tidiness: the next prune retries
            log.info("could not prune the fence log of job %s: %s", self.job_id, err)

    def _compact(self, seqs: list[int]) -> None:
        """Delete every record below this driver's claim, oldest first: the claims and
        reservations of earlier drivers (the claim carries what the next claimant needs
        of them). The log then holds this claim and what its driver reserves since.

        Safe while earlier drivers still run (zombies): no driver creates a number below
        its own newest record, and a claimant starts above the highest, so a deleted
        number is created again only by a zombie whose next number it was; oldest first,
        its own claim went before that number, and a zombie reads (or, after creating,
        checks) its claim: it finds either the claim after its newest record or its own
        claim gone (:meth:`taken_over`, :meth:`reserve`). What such a zombie created
        (its reservation fails and deletes it) is below the claim, and the next claimant
        compacts it if it stayed. Never the claim itself: that is the floor, which tells
        the next claimant the next free number and, with ``reservation``, what may be
        pending. Only tidiness: a failure leaves the rest to :meth:`prune` and the next
        claimant."""
        below = self._compact_below
        try:
            for seq in seqs:
                if seq < below:
                    self.storage.delete_document(self.job_id, record_name(seq))
            self._compact_below = 0
        except CheckpointStorageError as err:
            log.info("could not compact the fence log of job %s: %s", self.job_id, err)

    def _delete_quietly(self, seq: int) -> None:
        try:
            self.storage.delete_document(self.job_id, record_name(seq))
        except CheckpointStorageError as err:  # a stray record in a deleted job: storage only
            log.info("could not delete fence record %d of job %s: %s", seq, self.job_id, err)

    def _test_window(self, where: str) -> None:
        if self._test_window_s:
            print(
                f"test hook: fence window of {self._test_window_s:.1f} s open {where} (attempt {self.attempt})",
                file=sys.stderr,
                flush=True,
            )
            time.sleep(self._test_window_s)


def _carried(reservation: dict[str, Any] | None) -> dict[str, Any] | None:
    """What a claim keeps of the newest reservation below it."""
    if reservation is None:
        return None
    return {
        "attempt": int(reservation.get("attempt") or 0),
        "checkpoint_id": int(reservation["checkpoint_id"]),
        "savepoint": bool(reservation.get("savepoint")),
    }


def _now_ms() -> int:
    return int(time.time() * 1000)
