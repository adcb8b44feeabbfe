"""Fencing two drivers of one job (engine/fencing.py), interleaved step by step on the
memory backend: whatever the order, a driver whose claim was replaced completes no
checkpoint the new driver does not see, and reuses no id."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from airflow_provider_seatunnel_ckpt.engine.fencing import FENCE_DIR, PRUNE_EVERY, Fenced, FenceLog, record_name
from airflow_provider_seatunnel_ckpt.errors import CheckpointStorageError
from airflow_provider_seatunnel_ckpt.storage import CheckpointIdTaken, CheckpointKind, CheckpointManifest
from airflow_provider_seatunnel_ckpt.storage.fs_local import LocalFileSystem
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
    reserved = 2 * PRUNE_EVERY + 20
    for checkpoint_id in range(1, reserved + 1):
        log.reserve(checkpoint_id)
    # the claim, the newest reservation, and the ones since the last prune
    assert len(storage.list_documents(JOB, FENCE_DIR)) <= 1 + PRUNE_EVERY
    claim = FenceLog(storage, JOB).claim("b")
    assert (claim.attempt, claim.highest_reserved) == (6, reserved)
    # b's claim only: it carries a's newest reservation; a finds its claim gone
    assert len(storage.list_documents(JOB, FENCE_DIR)) == 1
    with pytest.raises(Fenced, match=r"attempt 6"):
        log.reserve(reserved + 1)


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
    claimant deletes every record below its claim, which carries the newest reservation;
    each killed driver that is in fact still alive (paused) is still fenced."""
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
    assert kinds == ["claim"], kinds  # the claimant's, carrying the newest reservation
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
    b.claim("b")  # compacts a's records, 1 and 2
    b.reserve(2)
    b.reserve(3)
    log_before = sorted(storage.list_documents(JOB, FENCE_DIR))
    assert len(log_before) >= 2  # b's claim and its newest reservation at least
    deleted.clear()
    b.erase()
    assert deleted == [f"{FENCE_DIR}/{name}" for name in log_before]
    assert storage.list_documents(JOB, FENCE_DIR) == []


# ---- compaction: a fence log that stays small (issue 51, item 3) ------------------------------
@pytest.fixture(params=["memory", "local"])
def any_storage(request, tmp_path) -> FileSystemCheckpointStorage:
    if request.param == "memory":
        return FileSystemCheckpointStorage(MemoryFileSystem(f"fence-{uuid.uuid4().hex}"), "/ns/", 3)
    return FileSystemCheckpointStorage(LocalFileSystem(), f"{tmp_path}/ns/", 3)


class Recording:
    """The storage, recording every fence record created and every read."""

    def __init__(self, inner):
        self.inner = inner
        self.created: list[str] = []
        self.reads = 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def create_document(self, job_id, path, document):
        self.inner.create_document(job_id, path, document)
        self.created.append(path)

    def read_document(self, job_id, path):
        self.reads += 1
        return self.inner.read_document(job_id, path)


def fence_records(storage) -> list[int]:
    return [int(n.removesuffix(".json")) for n in storage.list_documents(JOB, FENCE_DIR)]


def assert_fenced(zombie: FenceLog, by_attempt: int | str) -> None:
    """Every way a driver learns of a takeover says so."""
    assert zombie.taken_over()
    assert zombie.watch() or zombie.watch()  # one read a call: a takeover shows within two
    with pytest.raises(Fenced, match=rf"taken over by another driver \(attempt {by_attempt}\)"):
        zombie.check()
    before = fence_records(zombie.storage)
    with pytest.raises(Fenced):
        zombie.reserve(10_000)
    assert fence_records(zombie.storage) == before  # a number it created in a gap, given back


def test_fifty_driver_starts_leave_one_claim_and_every_earlier_driver_fenced(any_storage):
    """Before compaction every start left its claim for good (50 starts: 50 claims and
    the newest reservation); now the log holds the newest claim and what its driver
    reserved since, and no number is ever created twice."""
    storage = Recording(any_storage)
    drivers: list[FenceLog] = []
    checkpoint_id = 0
    sizes = []
    for run in range(50):
        log = FenceLog(storage, JOB, deletable=run % 2 == 1)
        claim = log.claim(f"run{run}")
        assert claim.attempt == run + 1
        assert claim.highest_reserved == checkpoint_id  # what the compacted records said
        if checkpoint_id:
            assert claim.pending == (checkpoint_id, False)
        assert fence_records(storage) == [log.seq]  # the claim alone: the floor
        for _ in range(run % (PRUNE_EVERY + 4)):  # some are killed between two prunes
            checkpoint_id += 1
            log.reserve(checkpoint_id)
        sizes.append(len(fence_records(storage)))
        drivers.append(log)
    assert max(sizes) <= PRUNE_EVERY + 1
    assert len(storage.created) == len(set(storage.created)), "a record number was created twice"
    assert [log.seq for log in drivers] == sorted({log.seq for log in drivers})
    holder = drivers[-1]
    for zombie in drivers[:-1]:
        assert_fenced(zombie, by_attempt=50)
        assert not zombie.is_newest(zombie.seq) or not zombie.deletable
    holder.check()
    assert not holder.taken_over() and not holder.watch() and not holder.watch()
    holder.reserve(checkpoint_id + 1)
    assert len(fence_records(storage)) <= PRUNE_EVERY + 1


def test_the_claim_watch_reads_one_record_a_call(storage):
    recording = Recording(storage)
    a, b = FenceLog(recording, JOB), FenceLog(recording, JOB)
    a.claim("a")
    a.reserve(1)
    for _ in range(4):
        recording.reads = 0
        assert not a.watch()
        assert recording.reads == 1
    b.claim("b")  # the record after a's newest: read every other call, and first
    assert a.watch()
    FenceLog(recording, JOB).claim("c")  # compacts b's claim: a's own claim went before it
    assert a.watch() or a.watch()


@pytest.mark.parametrize("deletable", [False, True])
def test_a_zombie_is_fenced_at_every_step_of_a_compaction(storage, deletable):
    """The claimant deletes the records below its claim one at a time, oldest first; a
    zombie (here two: taken over by b, and b taken over by c) looks at each step, by
    every path, and so does another claimant, which must find what may be pending."""
    a, b, c = (FenceLog(storage, JOB, deletable=deletable) for _ in range(3))
    original = storage.delete_document

    def failing(job_id, path):
        raise CheckpointStorageError("storage unavailable")

    storage.delete_document = failing  # a's prunes fail: its reservations stay, as a killed driver's would
    a.claim("a")
    for checkpoint_id in (1, 2, 3):
        a.reserve(checkpoint_id)
    a.reserve(4)  # reserved at a trigger; its _metadata write pauses
    assert storage.fence_checkpoint_id(JOB, 1, 4) is True  # as b's run does after its claim
    # b's compaction (at its claim, and again at its prune) fails too: only tidiness, c does it
    b.claim("b")  # carries checkpoint 4
    b.reserve(5)
    storage.delete_document = original
    assert fence_records(storage) == [1, 2, 3, 4, 5, 6, 7]
    steps: list[str] = []
    probing: list[FenceLog] = []

    def delete(job_id, path):
        original(job_id, path)
        if path.startswith(f"{FENCE_DIR}/") and not probing:  # c's deletions, not the zombies'
            steps.append(path)
            for zombie in (a, b):
                probing.append(zombie)
                try:
                    assert_fenced(zombie, by_attempt="[23]")
                finally:
                    probing.clear()
            # what a claimant would find now (it lists, reads, then creates above the highest)
            seqs = sorted(fence_records(storage))
            assert FenceLog(storage, JOB)._newest_reservation(seqs)["checkpoint_id"] == 5

    storage.delete_document = delete
    claim = c.claim("c")
    storage.delete_document = original
    assert (claim.attempt, claim.pending, claim.highest_reserved) == (3, (5, False), 5)
    assert steps == [f"{FENCE_DIR}/{seq:012d}.json" for seq in range(1, 8)]
    # the ids reserved ahead stay fenced in _metadata, which no compaction touches
    assert storage.fence_checkpoint_id(JOB, 1, 5) is True
    for checkpoint_id in (4, 5):
        with pytest.raises(CheckpointIdTaken):
            complete(storage, checkpoint_id)
    assert fence_records(storage) == [c.seq]
    c.check()
    c.reserve(6)


def test_claims_of_an_earlier_release_are_read_below(storage):
    """A log written before compaction: claims without ``reservation``; the next claimant
    reads down to the newest reservation, then compacts them all."""
    records = [
        {"seq": 1, "kind": "claim", "attempt": 1, "token": "a"},
        {"seq": 2, "kind": "reserve", "attempt": 1, "checkpoint_id": 9, "savepoint": True},
        {"seq": 3, "kind": "claim", "attempt": 2, "token": "b"},
        {"seq": 4, "kind": "claim", "attempt": 3, "token": "c"},
    ]
    for record in records:
        storage.create_document(JOB, f"{FENCE_DIR}/{record['seq']:012d}.json", record)
    claim = FenceLog(storage, JOB).claim("d")
    assert (claim.attempt, claim.seq, claim.pending, claim.pending_attempt) == (4, 5, (9, True), 1)
    assert fence_records(storage) == [5]
    assert FenceLog(storage, JOB).claim("e").pending == (9, True)  # carried on


def test_a_claimant_that_listed_before_the_holder_reserved_on_does_not_claim_a_pruned_number(storage):
    """A claimant lists the log, then pauses (a GC pause, a slow store) while the holder
    reserves on and prunes its older reservations: the number after the claimant's
    listing is free again. Claiming it would carry a stale newest reservation, so the
    claimant would fence an old id and leave the holder's newest one open. The claimant
    lists again after creating its record, and claims anew above what it finds."""
    holder = FenceLog(storage, JOB)
    holder.claim("holder")
    holder.reserve(1)
    claimant = FenceLog(storage, JOB)
    stale = claimant._sequence_numbers()
    listings = iter([stale])
    real = claimant._sequence_numbers
    claimant._sequence_numbers = lambda: next(listings, None) or real()  # type: ignore[method-assign]
    for checkpoint_id in range(2, PRUNE_EVERY + 2):  # the holder's prune frees the numbers after ``stale``
        holder.reserve(checkpoint_id)
    newest = PRUNE_EVERY + 1
    claim = claimant.claim("claimant")
    assert (claim.pending, claim.highest_reserved) == ((newest, False), newest)
    assert claim.seq > holder.seq
    with pytest.raises(Fenced):
        holder.reserve(newest + 1)
    with pytest.raises(Fenced):
        holder.check()
    claimant.reserve(newest + 1)
    claimant.check()


def test_a_zombies_stray_record_at_an_older_claims_number_does_not_revive_that_claim(storage):
    """Found by the simulation (seed 613, issue 51): b's claim was compacted, and a, an
    older zombie whose next number it was, creates it again (its reservation, deleted at
    once when a finds its own claim gone). Meanwhile b must still see that it lost the job:
    the number's record is no longer its claim."""
    a, b, c, d = (FenceLog(storage, JOB) for _ in range(4))
    a.claim("a")  # 1
    b.claim("b")  # 2; compacts 1
    b.reserve(1)  # 3
    c.claim("c")  # 4; compacts 2 and 3
    d.claim("d")  # 5; compacts 4
    assert fence_records(storage) == [5]
    storage.create_document(
        JOB, record_name(2), {"seq": 2, "kind": "reserve", "attempt": a.attempt, "checkpoint_id": 1}
    )
    assert b.taken_over()
    assert_fenced(b, by_attempt="4")
    with pytest.raises(Fenced):
        a.reserve(2)  # a itself finds its claim gone (and takes its stray record back)
