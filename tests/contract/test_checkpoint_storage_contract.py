"""The checkpoint storage contract, run against every backend behind its real protocol.

``make_storage`` (tests/conftest.py) builds a ``CheckpointStorage`` through the public
path users take: a SeaTunnel plugin-config -> ``load_config`` -> ``create_storage``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import pickle
import random
import threading
import time

import pytest

from airflow_provider_seatunnel_ckpt.config import ConfigError
from airflow_provider_seatunnel_ckpt.storage import (
    CheckpointIdTaken,
    CheckpointKind,
    CheckpointManifest,
    CheckpointNotFoundError,
    CheckpointStorageError,
    PipelineState,
    StateHandle,
)
from airflow_provider_seatunnel_ckpt.storage.layout import METADATA

JOB = "job-1"


def state(checkpoint_id: int, size: int = 16, pipeline_id: int = 1, job_id: str = JOB, **kw) -> PipelineState:
    rng = random.Random(checkpoint_id * 7919 + pipeline_id)
    return PipelineState(
        job_id=job_id, pipeline_id=pipeline_id, checkpoint_id=checkpoint_id, states=rng.randbytes(size), **kw
    )


def checkpoint_path(storage, checkpoint_id: int, pipeline_id: int = 1, job_id: str = JOB) -> str:
    return storage.layout.checkpoint_dir(job_id, pipeline_id, checkpoint_id)


# ------------------------------------------------------------------ round trip


@pytest.mark.parametrize("size", [0, 1, 4096, 4097, 300_000])
def test_store_and_get_round_trips_bytes_exactly(make_storage, size):
    storage = make_storage()
    original = state(7, size=size)
    storage.store_checkpoint(original)
    latest = storage.get_latest_checkpoint_by_job_id_and_pipeline_id(JOB, 1)
    assert latest.checkpoint_id == 7 and latest.states == original.states
    assert storage.get_checkpoint(JOB, 1, 7).states == original.states


def test_python_contract_example(make_storage):
    storage = make_storage()
    storage.store_checkpoint(PipelineState(job_id="j1", pipeline_id=1, checkpoint_id=7, states=b"..."))
    latest = storage.get_latest_checkpoint_by_job_id_and_pipeline_id("j1", 1)
    assert latest.checkpoint_id == 7 and latest.states == b"..."


def test_seatunnel_query_methods(make_storage):
    storage = make_storage(max_retained=10)
    for pipeline_id in (1, 2):
        for checkpoint_id in (1, 2, 3):
            storage.store_checkpoint(state(checkpoint_id, pipeline_id=pipeline_id))
    assert [s.checkpoint_id for s in storage.get_checkpoints_by_job_id_and_pipeline_id(JOB, 2)] == [1, 2, 3]
    assert sorted((s.pipeline_id, s.checkpoint_id) for s in storage.get_latest_checkpoint(JOB)) == [(1, 3), (2, 3)]
    assert len(storage.get_all_checkpoints(JOB)) == 6
    assert storage.get_latest_checkpoint_by_job_id_and_pipeline_id("other-job", 1) is None
    assert storage.get_latest_checkpoint("other-job") == []
    assert storage.list_jobs() == [JOB]


def test_get_missing_checkpoint_is_a_clear_error(make_storage):
    storage = make_storage()
    storage.store_checkpoint(state(1))
    with pytest.raises(CheckpointNotFoundError, match="no completed checkpoint 9"):
        storage.get_checkpoint(JOB, 1, 9)
    with pytest.raises(CheckpointNotFoundError, match=r"completed: 1\)"):
        storage.require_checkpoint(JOB, 1, 9)


# ------------------------------------------------------------------ completion and latest


def test_latest_is_highest_id_not_newest_write(make_storage):
    storage = make_storage(max_retained=10)
    for checkpoint_id in (5, 9, 2):  # written out of order, as after clock skew
        storage.store_checkpoint(state(checkpoint_id))
    assert storage.get_latest_checkpoint_by_job_id_and_pipeline_id(JOB, 1).checkpoint_id == 9


def test_state_without_manifest_is_not_completed(make_storage):
    """A crash between the state upload and the manifest leaves nothing 'completed'."""
    storage = make_storage()
    storage.store_checkpoint(state(1))
    storage.write_state(JOB, 1, 2, "task-0-0.state", b"x" * 10_000)
    entries = {e.checkpoint_id: e for e in storage.list_checkpoint_entries(JOB, 1)}
    assert entries[2].completed is False and entries[1].completed is True
    assert storage.get_latest_checkpoint_by_job_id_and_pipeline_id(JOB, 1).checkpoint_id == 1
    assert storage.highest_checkpoint_id(JOB, 1) == 2  # ids continue above the aborted one


def test_manifest_refuses_missing_or_short_state_files(make_storage):
    storage = make_storage()
    handle = storage.write_state(JOB, 1, 3, "task-0-0.state", b"a" * 5000)
    bogus = StateHandle(size=5000, sha256=handle.sha256, file="task-1-0.state")
    manifest = CheckpointManifest(job_id=JOB, pipeline_id=1, checkpoint_id=3, subtask_states={0: handle, 1: bogus})
    with pytest.raises(CheckpointStorageError, match="task-1-0.state is missing"):
        storage.complete_checkpoint(manifest)
    assert not storage.fs.exists(f"{checkpoint_path(storage, 3)}/{METADATA}")


def test_engine_manifest_with_subtask_state_round_trips(make_storage):
    storage = make_storage()
    handles = {i: storage.write_state(JOB, 1, 4, f"task-{i}-0.state", bytes([i]) * (5000 + i)) for i in range(3)}
    handles[3] = StateHandle.for_bytes(b"small inline state")
    manifest = CheckpointManifest(
        job_id=JOB,
        pipeline_id=1,
        checkpoint_id=4,
        kind=CheckpointKind.CHECKPOINT,
        trigger_ms=10,
        complete_ms=25,
        subtask_states=handles,
        commit_infos=({"files": ["a"]},),
        statistics={"duration_ms": 15},
        properties={"parallelism": 4},
    )
    storage.complete_checkpoint(manifest)
    latest = storage.get_latest_checkpoint_by_job_id_and_pipeline_id(JOB, 1)
    assert latest.manifest == manifest
    for i in range(3):
        assert storage.read_state(JOB, 1, 4, latest.manifest.subtask_states[i]) == bytes([i]) * (5000 + i)
    assert storage.read_state(JOB, 1, 4, latest.manifest.subtask_states[3]) == b"small inline state"
    assert storage.verify_checkpoint(JOB, 1, 4) == []


def test_a_manifest_whose_write_raised_is_found_where_it_landed(make_storage):
    """A _metadata write that raised may have landed, its answer lost (engine/driver.py
    reads it back rather than abort a checkpoint storage holds as complete)."""
    storage = make_storage()
    manifest = CheckpointManifest(
        job_id=JOB,
        pipeline_id=1,
        checkpoint_id=6,
        trigger_ms=10,
        complete_ms=25,
        subtask_states={0: StateHandle.for_bytes(b"inline")},
        properties={"attempt": 2},
    )
    assert storage.landed_at(manifest) is None
    location = storage.complete_checkpoint(manifest)
    assert storage.landed_at(manifest) == location
    # another driver's _metadata at that id (another attempt) is not this one
    assert storage.landed_at(dataclasses.replace(manifest, properties={"attempt": 3})) is None


# ------------------------------------------------------------------ corruption


def _flip_a_bit(storage, path: str) -> None:
    data = bytearray(storage.fs.read(path))
    data[len(data) // 2] ^= 0x01
    storage.fs.write_atomic(path, bytes(data))


@pytest.mark.parametrize(
    "damage", ["flip-metadata", "truncate-metadata", "flip-state", "truncate-state", "delete-state"]
)
def test_corrupt_latest_falls_back_to_previous_with_a_warning(make_storage, caplog, damage):
    storage = make_storage(max_retained=5)
    for checkpoint_id in (1, 2, 3):
        storage.store_checkpoint(state(checkpoint_id, size=10_000))  # > inline limit: a state file
    directory = checkpoint_path(storage, 3)
    target = f"{directory}/{METADATA}" if "metadata" in damage else f"{directory}/coordinator.state"
    if damage.startswith("flip"):
        _flip_a_bit(storage, target)
    elif damage.startswith("truncate"):
        storage.fs.write_atomic(target, storage.fs.read(target)[:100])
    else:
        storage.fs.delete(target)

    with caplog.at_level(logging.WARNING):
        latest = storage.get_latest_checkpoint_by_job_id_and_pipeline_id(JOB, 1)
    assert latest.checkpoint_id == 2
    assert latest.states == state(2, size=10_000).states
    assert any("chk-00000000000000000003" in r.getMessage() for r in caplog.records)
    assert storage.verify_checkpoint(JOB, 1, 3) != []
    assert storage.verify_checkpoint(JOB, 1, 2) == []


def test_garbage_and_future_manifests_are_rejected_not_unpickled(make_storage):
    storage = make_storage()
    storage.store_checkpoint(state(1))
    storage.store_checkpoint(state(2))
    path = f"{checkpoint_path(storage, 2)}/{METADATA}"
    storage.fs.write_atomic(path, pickle.dumps({"evil": True}))
    assert storage.get_latest_checkpoint_by_job_id_and_pipeline_id(JOB, 1).checkpoint_id == 1
    problems = storage.verify_checkpoint(JOB, 1, 2)
    assert problems and "not valid JSON" in problems[0]


# ------------------------------------------------------------------ retention


def _ids(storage, pipeline_id: int = 1) -> list[int]:
    return [e.checkpoint_id for e in storage.list_checkpoint_entries(JOB, pipeline_id)]


def test_retention_keeps_max_retained_newest(make_storage):
    storage = make_storage(max_retained=2)
    for checkpoint_id in range(1, 6):
        storage.store_checkpoint(state(checkpoint_id))
    assert _ids(storage) == [4, 5]


def test_retention_is_computed_from_storage_after_restart(make_storage):
    generous = make_storage(max_retained=10)
    for checkpoint_id in range(1, 6):
        generous.store_checkpoint(state(checkpoint_id))
    restarted = pickle.loads(pickle.dumps(make_storage(max_retained=2)))  # a new process's view
    restarted.store_checkpoint(state(6))
    assert _ids(restarted) == [5, 6]


def test_retention_never_removes_savepoints_and_removes_aborted_leftovers(make_storage):
    storage = make_storage(max_retained=1)
    storage.store_checkpoint(state(1))
    storage.store_checkpoint(state(2, kind=CheckpointKind.SAVEPOINT))
    storage.write_state(JOB, 1, 3, "task-0-0.state", b"aborted")  # never completed
    storage.write_state(JOB, 1, 9, "task-0-0.state", b"in flight")  # newer than latest: keep
    storage.store_checkpoint(state(4))
    entries = {(e.checkpoint_id, e.savepoint): e.completed for e in storage.list_checkpoint_entries(JOB, 1)}
    assert entries == {(2, True): True, (4, False): True, (9, False): False}
    assert storage.get_latest_savepoint(JOB, 1).checkpoint_id == 2


def test_retention_never_removes_the_latest_even_with_max_retained_one(make_storage):
    storage = make_storage(max_retained=1)
    for checkpoint_id in (1, 2):
        storage.store_checkpoint(state(checkpoint_id))
    assert _ids(storage) == [2]
    assert storage.get_latest_checkpoint_by_job_id_and_pipeline_id(JOB, 1).checkpoint_id == 2


class _CountingFs:
    """Counts the FileSystem calls a storage makes (wraps its ``fs``)."""

    def __init__(self, inner):
        self.inner = inner
        self.calls: list[str] = []

    def __getattr__(self, name):
        attr = getattr(self.inner, name)
        if not callable(attr) or name in ("describe",):
            return attr

        def counted(*args, **kwargs):
            self.calls.append(name)
            return attr(*args, **kwargs)

        return counted


def test_retention_is_one_listing_and_batched_deletes(make_storage):
    """Steady state with max-retained 2: each store lists the pipeline once (object
    stores: one prefix listing; elsewhere the pipeline and each checkpoint directory),
    probes no ``_metadata`` one by one, and deletes the subsumed checkpoint with batched
    calls, ``_metadata`` first."""
    storage = make_storage(max_retained=2)
    for checkpoint_id in (1, 2, 3):
        storage.store_checkpoint(state(checkpoint_id, size=10_000))
    counting = storage.fs = _CountingFs(storage.fs)
    storage.store_checkpoint(state(4, size=10_000))
    calls = counting.calls
    assert "info" not in calls and "exists" not in calls
    if counting.inner.flat_listing:
        assert calls.count("walk_files") == 1 and "list_dir" not in calls
        assert calls.count("delete_files") == 2 and "delete" not in calls
    else:
        assert calls.count("list_dir") == 1 + 3  # the pipeline, then chk 2, 3 and 4
    assert _ids(storage) == [3, 4]
    assert storage.get_latest_checkpoint_by_job_id_and_pipeline_id(JOB, 1).states == state(4, size=10_000).states


# ------------------------------------------------------------------ deletion


def test_delete_checkpoint_variants(make_storage):
    storage = make_storage(max_retained=10)
    for pipeline_id in (1, 2):
        for checkpoint_id in (1, 2, 3):
            storage.store_checkpoint(state(checkpoint_id, pipeline_id=pipeline_id))
    storage.delete_checkpoint(JOB, 1, 2)
    assert _ids(storage, 1) == [1, 3]
    storage.delete_checkpoint(JOB, 1, [1, 3])
    assert _ids(storage, 1) == []
    storage.delete_checkpoint(JOB, 2)
    assert _ids(storage, 2) == []
    storage.store_checkpoint(state(1))
    storage.delete_checkpoint(JOB)
    assert storage.list_jobs() == []


# ------------------------------------------------------------------ documents


def test_job_documents_round_trip(make_storage):
    storage = make_storage()
    storage.write_document(JOB, "job.json", {"status": "running", "fencing_token": "abc"})
    storage.write_document(JOB, "attempts/000001.json", {"outcome": "failed"})
    assert storage.read_document(JOB, "job.json") == {"status": "running", "fencing_token": "abc"}
    assert storage.list_documents(JOB, "attempts") == ["000001.json"]
    assert storage.read_document(JOB, "nothing.json") is None
    with pytest.raises(CheckpointStorageError):
        storage.read_document(JOB, "../escape.json")


# ------------------------------------------------------------------ fencing (one writer per job)


def test_a_checkpoint_id_completes_once_ever(make_storage):
    storage = make_storage()
    storage.store_checkpoint(state(3))
    with pytest.raises(CheckpointIdTaken):
        storage.store_checkpoint(state(3, size=17))
    assert storage.get_checkpoint(JOB, 1, 3).states == state(3).states


def test_a_fenced_id_never_completes_and_is_neither_latest_nor_retained_away(make_storage):
    storage = make_storage()
    storage.store_checkpoint(state(1))
    assert storage.fence_checkpoint_id(JOB, 1, 2) is True
    assert storage.fence_checkpoint_id(JOB, 1, 1) is False  # completed first: stays completed
    with pytest.raises(CheckpointIdTaken):
        storage.store_checkpoint(state(2, size=300_000))
    for checkpoint_id in range(3, 8):
        storage.store_checkpoint(state(checkpoint_id))
    entries = {e.checkpoint_id: e for e in storage.list_checkpoint_entries(JOB, 1)}
    assert entries[2].fenced and not entries[2].completed
    assert sorted(i for i, e in entries.items() if e.completed) == [5, 6, 7]  # max-retained 3; 2 kept
    with pytest.raises(CheckpointNotFoundError, match="fenced"):
        storage.get_checkpoint(JOB, 1, 2)
    storage.fence_checkpoint_id(JOB, 1, 8)
    assert storage.get_latest_checkpoint_by_job_id_and_pipeline_id(JOB, 1).checkpoint_id == 7


def test_a_fenced_id_s_state_files_can_go_while_its_fence_stays(make_storage):
    storage = make_storage()
    for subtask in range(2):  # uploads of the checkpoint that was in flight
        storage.write_state(JOB, 1, 4, f"task-{subtask}-0.state", bytes([subtask]) * 70_000)
    assert storage.fence_checkpoint_id(JOB, 1, 4) is True
    storage.delete_state_files(JOB, 1, 4)
    storage.delete_state_files(JOB, 1, 5)  # nothing there: fine
    [entry] = storage.list_checkpoint_entries(JOB, 1)
    assert entry.fenced and not entry.completed
    assert storage.state_file_sizes(JOB, 1, 4) == {"_metadata": 0}
    with pytest.raises(CheckpointIdTaken):
        storage.store_checkpoint(state(4))


def test_created_documents_have_exactly_one_creator(make_storage):
    storage = make_storage()
    winners: list[int] = []
    barrier = threading.Barrier(6)

    def create(index: int) -> None:
        barrier.wait()
        try:
            storage.create_document(JOB, "fence/000000000001.json", {"by": index})
            winners.append(index)
        except FileExistsError:
            pass

    threads = [threading.Thread(target=create, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(winners) == 1
    assert storage.read_document(JOB, "fence/000000000001.json") == {"by": winners[0]}


# ------------------------------------------------------------------ safety


@pytest.mark.parametrize("job_id", ["..", "../x", "/abs", "a/b", "a\x00b", "", ".hidden", "x" * 300])
def test_job_ids_that_escape_the_namespace_are_rejected(make_storage, job_id):
    storage = make_storage()
    with pytest.raises(ConfigError, match="job_id"):
        storage.store_checkpoint(PipelineState(job_id=job_id, pipeline_id=1, checkpoint_id=1, states=b""))


def test_pickle_round_trip_sees_the_same_checkpoints(make_storage):
    storage = make_storage()
    storage.store_checkpoint(state(3))
    clone = pickle.loads(pickle.dumps(storage))
    assert clone.get_latest_checkpoint_by_job_id_and_pipeline_id(JOB, 1).states == state(3).states


def test_sixteen_threads_store_concurrently(make_storage):
    storage = make_storage(max_retained=100)
    errors = []

    def worker(n: int) -> None:
        # One pipeline per thread: within a pipeline checkpoints complete in id order
        # (a newer completion subsumes older in-flight ones; see the next test).
        try:
            for checkpoint_id in (1, 2):
                storage.store_checkpoint(state(checkpoint_id, size=5000, pipeline_id=n))
        except Exception as err:  # collected and asserted below
            errors.append(err)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    stored = {(s.pipeline_id, s.checkpoint_id): s.states for s in storage.get_all_checkpoints(JOB)}
    assert stored == {(n, c): state(c, size=5000, pipeline_id=n).states for n in range(16) for c in (1, 2)}


def test_completing_a_subsumed_checkpoint_fails_cleanly(make_storage):
    """An older checkpoint still in flight when a newer one completes is subsumed:
    retention removes its state, and completing it later is refused, never half-done."""
    storage = make_storage()
    storage.write_state(JOB, 1, 1, "task-0-0.state", b"x" * 5000)
    storage.store_checkpoint(state(2))
    handle = StateHandle.for_bytes(b"x" * 5000, file="task-0-0.state")
    with pytest.raises(CheckpointStorageError, match="missing or incomplete"):
        storage.complete_checkpoint(
            CheckpointManifest(job_id=JOB, pipeline_id=1, checkpoint_id=1, subtask_states={0: handle})
        )
    assert [e.checkpoint_id for e in storage.list_checkpoint_entries(JOB, 1)] == [2]


def test_concurrent_reader_never_sees_a_partial_checkpoint(make_storage):
    storage = make_storage(max_retained=2)
    storage.store_checkpoint(state(1, size=20_000))
    stop = threading.Event()
    seen, errors = [], []

    def reader() -> None:
        while not stop.is_set():
            try:
                latest = storage.get_latest_checkpoint_by_job_id_and_pipeline_id(JOB, 1)
                if latest is not None:
                    assert latest.states == state(latest.checkpoint_id, size=20_000).states
                    seen.append(latest.checkpoint_id)
            except (CheckpointNotFoundError, FileNotFoundError):
                continue  # retention removed it between listing and reading: fine, never partial
            except Exception as err:
                errors.append(err)

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not seen and not errors and time.monotonic() < deadline:  # the reader is reading
            time.sleep(0.001)
        for checkpoint_id in range(2, 12):
            storage.store_checkpoint(state(checkpoint_id, size=20_000))
    finally:
        stop.set()
        thread.join()
    assert errors == []
    assert seen and seen == sorted(seen)


# ------------------------------------------------------------------ network failures


def test_store_and_restore_survive_transient_errors(make_faulty_storage):
    make, backend = make_faulty_storage
    storage = make()
    backend.faults.fail_next(2, status=503)
    storage.store_checkpoint(state(1, size=10_000))
    backend.faults.drop_connection_next(1)
    assert storage.get_latest_checkpoint_by_job_id_and_pipeline_id(JOB, 1).states == state(1, size=10_000).states


def test_persistent_errors_end_in_a_storage_error_not_a_missing_checkpoint(make_faulty_storage):
    make, backend = make_faulty_storage
    storage = make()
    storage.store_checkpoint(state(1))
    backend.faults.fail_all()
    with pytest.raises(CheckpointStorageError):
        storage.get_latest_checkpoint_by_job_id_and_pipeline_id(JOB, 1)


def test_permanent_errors_fail_fast_naming_backend_and_path_never_the_secret(make_denied_storage):
    make, backend = make_denied_storage
    storage = make()
    before = backend.faults.request_count if backend.faults else 0
    with pytest.raises(CheckpointStorageError) as err:
        storage.store_checkpoint(state(1, size=10_000))
    message = str(err.value)
    assert not backend.secret or backend.secret not in message
    assert "namespace" in message and "job-1" in message
    for word in backend.error_mentions:
        assert word in message
    if backend.faults is not None:
        assert backend.faults.request_count - before <= 3  # no retry loop on a 403


@pytest.mark.parametrize("sizes", [[10, 5000], [1 << 20, 3 << 20, 7]], ids=["small", "4MiB"])
def test_state_written_piece_by_piece_reads_back_whole(make_storage, sizes):
    """A subtask hands its encoded state over in pieces; the file and its handle are
    those of the pieces put together."""
    storage = make_storage()
    pieces = [bytes([n]) * size for n, size in enumerate(sizes)]
    whole = b"".join(pieces)
    handle = storage.write_state_pieces(JOB, 1, 5, "task-0-0.state", len(whole), iter(pieces))
    assert (handle.size, handle.sha256, handle.file) == (
        len(whole),
        hashlib.sha256(whole).hexdigest(),
        "task-0-0.state",
    )
    assert storage.read_state(JOB, 1, 5, handle) == whole
    assert storage.state_file_sizes(JOB, 1, 5) == {"task-0-0.state": len(whole)}


def test_pieces_that_do_not_add_up_leave_no_state_file(make_storage):
    storage = make_storage()
    with pytest.raises(ValueError, match="came to 5000 bytes, not the 6000 announced"):
        storage.write_state_pieces(JOB, 1, 6, "task-0-0.state", 6000, iter([b"a" * 3000, b"b" * 2000]))
    assert storage.state_file_sizes(JOB, 1, 6) == {}
