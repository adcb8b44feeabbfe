"""Fencing two drivers of one job (engine/fencing.py), interleaved step by step on the
memory backend: whatever the order, a driver whose claim was replaced completes no
checkpoint the new driver does not see, and reuses no id."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from airflow_provider_seatunnel_ckpt.engine.fencing import FENCE_DIR, PRUNE_EVERY, Fenced, FenceLog
from airflow_provider_seatunnel_ckpt.storage import CheckpointIdTaken, CheckpointKind, CheckpointManifest
from airflow_provider_seatunnel_ckpt.storage.fs_memory import MemoryFileSystem
from airflow_provider_seatunnel_ckpt.storage.fs_storage import FileSystemCheckpointStorage

JOB = "job"


@pytest.fixture
def storage() -> FileSystemCheckpointStorage:
    return FileSystemCheckpointStorage(MemoryFileSystem(f"fence-{uuid.uuid4().hex}"), "/ns/", 3)


def manifest(checkpoint_id: int) -> CheckpointManifest:
    return CheckpointManifest(
        job_id=JOB,
        pipeline_id=1,
        checkpoint_id=checkpoint_id,
        kind=CheckpointKind.CHECKPOINT,
        trigger_ms=1,
        complete_ms=2,
    )


def complete(storage, checkpoint_id: int) -> None:
    storage.complete_checkpoint(manifest(checkpoint_id))


def completed_ids(storage) -> list[int]:
    return [e.checkpoint_id for e in storage.list_checkpoint_entries(JOB, 1) if e.completed]


def test_a_newer_claim_fences_the_older_driver_at_its_next_reservation_and_check(storage):
    a, b = FenceLog(storage, JOB), FenceLog(storage, JOB)
    assert a.claim("a").attempt == 1
    a.reserve(1)
    complete(storage, 1)
    a.check()
    claim = b.claim("b")
    assert (claim.attempt, claim.pending, claim.highest_reserved) == (2, (1, False), 1)
    with pytest.raises(Fenced, match=r"taken over by another driver \(attempt 2\)"):
        a.reserve(2)
    with pytest.raises(Fenced, match=r"attempt 2"):
        a.check()
    b.reserve(2)  # the new driver goes on
    b.check()


def test_the_claimant_fences_the_id_the_old_driver_reserved_so_it_can_never_complete_it(storage):
    a, b = FenceLog(storage, JOB), FenceLog(storage, JOB)
    a.claim("a")
    a.reserve(1)
    complete(storage, 1)
    a.reserve(2)  # a passed its fence step for checkpoint 2 ... and pauses
    claim = b.claim("b")
    assert claim.pending == (2, False)
    assert storage.fence_checkpoint_id(JOB, 1, 2) is True
    with pytest.raises(CheckpointIdTaken):  # ... and its _metadata write, whenever it comes, fails
        complete(storage, 2)
    assert completed_ids(storage) == [1]
    [fenced] = [e for e in storage.list_checkpoint_entries(JOB, 1) if e.checkpoint_id == 2]
    assert fenced.fenced and not fenced.completed
    assert storage.get_latest_checkpoint_by_job_id_and_pipeline_id(JOB, 1).checkpoint_id == 1
    assert storage.verify_checkpoint(JOB, 1, 1) == []


def test_when_the_old_driver_completes_first_the_claimant_sees_the_checkpoint(storage):
    a, b = FenceLog(storage, JOB), FenceLog(storage, JOB)
    a.claim("a")
    a.reserve(1)
    claim = b.claim("b")
    complete(storage, 1)  # a's _metadata landed before b's fence
    assert storage.fence_checkpoint_id(JOB, 1, *claim.pending) is False
    assert completed_ids(storage) == [1]  # b restores from it


def test_a_claimant_that_died_before_fencing_leaves_the_reservation_to_the_next(storage):
    a, b, c = FenceLog(storage, JOB), FenceLog(storage, JOB), FenceLog(storage, JOB)
    a.claim("a")
    a.reserve(7, savepoint=True)
    b.claim("b")  # dies here
    claim = c.claim("c")
    assert (claim.attempt, claim.pending, claim.pending_attempt) == (3, (7, True), 1)


def test_retention_and_discarding_keep_a_fenced_id(storage):
    log = FenceLog(storage, JOB)
    log.claim("a")
    for checkpoint_id in (1, 2):
        log.reserve(checkpoint_id)
        complete(storage, checkpoint_id)
    assert storage.fence_checkpoint_id(JOB, 1, 3)
    for checkpoint_id in range(4, 10):
        log.reserve(checkpoint_id)
        complete(storage, checkpoint_id)
    entries = storage.list_checkpoint_entries(JOB, 1)
    assert [e.checkpoint_id for e in entries if e.completed] == [7, 8, 9]  # max-retained 3
    assert [e.checkpoint_id for e in entries if e.fenced] == [3]


def test_concurrent_claims_get_distinct_attempts_and_only_the_last_holds_the_job(storage):
    logs = [FenceLog(storage, JOB) for _ in range(8)]
    barrier = threading.Barrier(len(logs))

    def claim(log: FenceLog) -> None:
        barrier.wait()
        log.claim(uuid.uuid4().hex)

    threads = [threading.Thread(target=claim, args=(log,)) for log in logs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(log.attempt for log in logs) == list(range(1, 9))
    holders = []
    for log in logs:
        try:
            log.check()
            holders.append(log.attempt)
        except Fenced:
            pass
    assert holders == [8]


def test_the_log_is_pruned_and_still_knows_the_highest_reserved_id_and_attempt(storage):
    log = FenceLog(storage, JOB)
    log.claim("a", min_attempt=4)  # a job whose job.json predates the fence log
    assert log.attempt == 5
    for checkpoint_id in range(1, 2 * PRUNE_EVERY + 1):
        log.reserve(checkpoint_id)
    assert len(storage.list_documents(JOB, FENCE_DIR)) < PRUNE_EVERY
    claim = FenceLog(storage, JOB).claim("b")
    assert (claim.attempt, claim.highest_reserved) == (6, 2 * PRUNE_EVERY)
    # a's claim (what fences a), a's newest reservation, b's claim
    assert len(storage.list_documents(JOB, FENCE_DIR)) == 3
    with pytest.raises(Fenced):
        log.reserve(2 * PRUNE_EVERY + 1)


def test_a_check_while_the_driver_s_own_reservation_is_being_made_is_no_takeover(storage):
    """The driver reserves at a trigger (fence thread) while a commit's check runs (storage
    worker): the record exists a moment before ``reserve`` returns, and must not be read
    as a newer claim."""

    class SlowCreate:
        def __init__(self, inner):
            self.inner = inner
            self.created = threading.Event()

        def __getattr__(self, name):
            return getattr(self.inner, name)

        def create_document(self, *args):
            self.inner.create_document(*args)
            self.created.set()
            time.sleep(0.3)  # the reply is still on its way

    slow = SlowCreate(storage)
    log = FenceLog(slow, JOB)
    log.claim("a")
    slow.created.clear()
    reserving = threading.Thread(target=log.reserve, args=(1,))
    reserving.start()
    try:
        assert slow.created.wait(5)
        log.check("committing checkpoint 0")
    finally:
        reserving.join()
    assert log.is_newest(log.seq) and log.seq == 2


def test_a_claimant_deletes_what_killed_drivers_left_and_every_one_of_them_stays_fenced(storage):
    """A SIGKILLed driver cannot prune its reservations: a 60-minute soak with a kill every
    10 minutes left about 90 per kill in fence/, never deleted (bench/scale_soak.py). The
    claimant deletes them but the newest; the claims stay, so each killed driver that is
    in fact still alive (paused) is still fenced."""
    drivers = []
    checkpoint_id = 0
    for run in range(4):
        log = FenceLog(storage, JOB)
        claim = log.claim(f"run{run}")
        assert claim.highest_reserved == checkpoint_id  # the newest reservation survived
        for _ in range(PRUNE_EVERY + 7):  # killed between two prunes: 7 left behind
            checkpoint_id += 1
            log.reserve(checkpoint_id)
        drivers.append(log)
    claimant = FenceLog(storage, JOB)
    claim = claimant.claim("last")
    assert (claim.attempt, claim.pending, claim.highest_reserved) == (5, (checkpoint_id, False), checkpoint_id)
    kinds = [storage.read_document(JOB, f"{FENCE_DIR}/{n}")["kind"] for n in storage.list_documents(JOB, FENCE_DIR)]
    assert kinds == ["claim"] * 4 + ["reserve", "claim"], kinds  # every claim, the newest reservation
    for zombie in drivers:
        with pytest.raises(Fenced):
            zombie.reserve(checkpoint_id + 1)
        with pytest.raises(Fenced):
            zombie.check()
    claimant.reserve(checkpoint_id + 1)
    claimant.check()


def _erase_up_to(storage, seq: int) -> None:
    """The first steps of ``FenceLog.erase``: records up to ``seq``, oldest first."""
    for name in storage.list_documents(JOB, FENCE_DIR):
        if int(name.removesuffix(".json")) <= seq:
            storage.delete_document(JOB, f"{FENCE_DIR}/{name}")


def test_a_driver_taken_over_stays_fenced_while_and_after_a_finished_job_is_deleted(storage):
    """delete-on-finish erases the log with the job (issue 47, defect 6): the record that
    fenced the old driver goes too, so it must also read its own claim. Whenever the
    erasure stops, the old driver finds a claim after its records or its claim gone."""
    a, b = FenceLog(storage, JOB, deletable=True), FenceLog(storage, JOB, deletable=True)
    a.claim("a")
    ahead = a.reserve(1)  # reserved at the trigger; its _metadata write pauses
    b.claim("b")  # b fences id 1, runs the job to its end, and deletes it
    b.reserve(2)
    assert storage.fence_checkpoint_id(JOB, 1, 1) is True
    for erased_to in (1, 2, 3):  # the erasure stopped after each record in turn
        _erase_up_to(storage, erased_to)
        for taken in (a.taken_over, lambda: not a.is_newest(ahead)):
            assert taken(), erased_to
        with pytest.raises(Fenced, match="taken over by another driver"):
            a.check()
    storage.delete_checkpoint(JOB)  # the job's checkpoints go too, the fenced id 1 with them
    with pytest.raises(Fenced, match=r"which finished it and deleted its storage \(delete-on-finish\)"):
        a.reserve(2)
    assert storage.list_documents(JOB, FENCE_DIR) == []  # the number it took, given back
    assert storage.list_jobs() == []


def test_erase_deletes_the_whole_log_oldest_first(storage):
    deleted = []
    original = storage.delete_document
    storage.delete_document = lambda job_id, path: deleted.append(path) or original(job_id, path)
    a = FenceLog(storage, JOB, deletable=True)
    a.claim("a")
    a.reserve(1)
    b = FenceLog(storage, JOB, deletable=True)
    b.claim("b")
    b.reserve(2)
    deleted.clear()
    b.erase()
    assert deleted == [f"{FENCE_DIR}/{seq:012d}.json" for seq in (1, 2, 3, 4)]
    assert storage.list_documents(JOB, FENCE_DIR) == []
