"""The barrier's split between the processing thread (snapshot only) and the async
thread (encode, upload, ACK), on a SubtaskRuntime driven by hand (no Spark, no socket)."""

from __future__ import annotations

import hashlib
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from airflow_provider_seatunnel_ckpt.connectors.api import SinkWriter
from airflow_provider_seatunnel_ckpt.connectors.sequence import SequenceSource
from airflow_provider_seatunnel_ckpt.engine import subtask as subtask_module
from airflow_provider_seatunnel_ckpt.engine.messages import (
    Ack,
    AssignSplits,
    CheckpointKind,
    TriggerBarrier,
    decode,
    encode,
)
from airflow_provider_seatunnel_ckpt.engine.split_book import FinishedRuns, SplitBook, share_of
from airflow_provider_seatunnel_ckpt.engine.state_codec import SplitState, decode_subtask_state
from airflow_provider_seatunnel_ckpt.engine.subtask import SubtaskContext, SubtaskRuntime
from airflow_provider_seatunnel_ckpt.jobfile.spec import JobSpec
from airflow_provider_seatunnel_ckpt.storage import StateHandle as StoredHandle

pytestmark = pytest.mark.timeout(60)


class Client:
    def __init__(self) -> None:
        self.sent: list[Any] = []
        self.got = threading.Event()

    def send(self, raw: dict[str, Any]) -> None:
        self.sent.append(decode(raw))
        self.got.set()


class Writer(SinkWriter):
    def write(self, batch: Any) -> None:
        pass

    def prepare_commit(self, checkpoint_id: int) -> Any:
        return None


class Sink:
    def create_writer(self, job_id: str, subtask: int, attempt: int) -> Writer:
        return Writer()


class Storage:
    """The raw-bytes state service: keeps what it is given."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.threads: list[str] = []

    def write_state_pieces(self, job_id, pipeline_id, checkpoint_id, name, size, pieces, savepoint=False):
        self.threads.append(threading.current_thread().name)
        data = self.files[name] = b"".join(pieces)
        assert len(data) == size
        return StoredHandle(size=size, sha256=hashlib.sha256(data).hexdigest(), file=name)


def _runtime(states: dict[str, SplitState], storage: Any = None) -> tuple[SubtaskRuntime, Client]:
    source = {"plugin_name": "Sequence", "rows": 100}
    spec = JobSpec("snap", 1, source, {"plugin_name": "Console"})
    splits = tuple(SequenceSource({"rows": 100}).splits(1))
    context = SubtaskContext("snap", 1, spec.to_json(), splits, ("127.0.0.1", 1), "t" * 32, storage=storage)
    runtime = SubtaskRuntime(context, 0, 0)
    client = Client()
    runtime._client = client
    runtime._async = ThreadPoolExecutor(max_workers=1, thread_name_prefix="test-async")
    runtime._sink = Sink()
    runtime._writer = Writer()
    runtime._book = SplitBook(share_of(splits, 1, 0), states, FinishedRuns())
    return runtime, client


def _barrier(runtime: SubtaskRuntime, checkpoint_id: int) -> None:
    runtime._barriers.append(TriggerBarrier(checkpoint_id, CheckpointKind.CHECKPOINT, 0))
    runtime._barrier_pending = True


def test_a_slow_encoding_does_not_block_the_processing_thread(monkeypatch):
    """The processing thread only snapshots; the encoding runs on the async thread,
    and its time is in async_ms, not in sync_ms."""
    entered, release = threading.Event(), threading.Event()
    encoded_on: list[str] = []
    real_encode = subtask_module.frame_snapshot

    def slow_encode(snapshot):
        encoded_on.append(threading.current_thread().name)
        entered.set()
        assert release.wait(20)
        return real_encode(snapshot)

    monkeypatch.setattr(subtask_module, "frame_snapshot", slow_encode)
    counts = {"a": 1}
    runtime, client = _runtime({"range-00000": SplitState(position=5, operators={"0": {"counts": counts}})})
    try:
        _barrier(runtime, 1)
        started = time.perf_counter()
        runtime._take_barriers()  # what the processing thread does between two batches
        took = time.perf_counter() - started
        assert entered.wait(10), "the async thread never started encoding"
        assert took < 1.0 and not client.sent  # back to processing while the encode is held
        assert encoded_on and encoded_on[0] != threading.current_thread().name
        counts["a"] = 99  # the processing thread goes on updating its state in place
        time.sleep(0.3)
        release.set()
        assert client.got.wait(10)
    finally:
        runtime._async.shutdown(wait=True)
    [ack] = client.sent
    assert isinstance(ack, Ack) and ack.checkpoint_id == 1
    assert ack.stats.async_ms >= 300 > ack.stats.sync_ms
    state = decode_subtask_state(ack.state_handles[0].inline, "ack").splits
    assert state["range-00000"].operators["0"] == {"counts": {"a": 1}}  # as at the barrier


def test_the_async_thread_encodes_bytes_state_and_uploads_it():
    blob = bytes(range(256)) * 1024  # 256 KiB: a state file, not inline
    storage = Storage()
    runtime, client = _runtime(
        {"range-00000": SplitState(position=5, operators={"0": {"blob": blob, "n": 1}})}, storage=storage
    )
    try:
        _barrier(runtime, 3)
        runtime._take_barriers()
        assert client.got.wait(10)
    finally:
        runtime._async.shutdown(wait=True)
    [ack] = client.sent
    assert isinstance(ack, Ack), ack
    [handle] = ack.state_handles
    assert handle.path in storage.files and handle.inline is None
    assert storage.threads == ["test-async_0"]
    data = storage.files[handle.path]
    assert ack.stats.state_bytes == len(data) < len(blob) + 1024  # raw: no base64, no escaping
    restored = decode_subtask_state(data, "file").splits
    assert restored["range-00000"].operators["0"] == {"blob": blob, "n": 1}


def _wait_fatal(runtime: SubtaskRuntime) -> BaseException:
    assert runtime._wake.wait(10), "the subtask was never woken"
    runtime._async.submit(lambda: None).result(10)
    assert runtime._fatal is not None
    return runtime._fatal


def test_a_state_that_cannot_be_encoded_fails_the_task_without_declining():
    """Flink's rule: a failure in a checkpoint's synchronous part fails the task (Spark
    retries it, region failover); a Decline would count toward tolerable-failure and,
    with the default 0, fail the whole job before the retry could run."""
    runtime, client = _runtime({"range-00000": SplitState(position=5, operators={"0": {"x": float("nan")}})})
    try:
        _barrier(runtime, 2)
        runtime._take_barriers()
        fatal = _wait_fatal(runtime)
    finally:
        runtime._async.shutdown(wait=True)
    assert "encoding the state for checkpoint 2 failed" in str(fatal)
    assert client.sent == []  # no Decline: the task failure aborts the checkpoint (TASK_FAILURE)
    with pytest.raises(RuntimeError, match="encoding the state"):
        runtime._check()


class FailingPrepare(Writer):
    def prepare_commit(self, checkpoint_id: int) -> Any:
        raise OSError("S3 staging: 503 Slow Down")


def test_a_failed_sink_pre_commit_fails_the_task_without_declining():
    runtime, client = _runtime({"range-00000": SplitState(position=5)})
    runtime._writer = FailingPrepare()
    try:
        _barrier(runtime, 4)
        runtime._take_barriers()
        fatal = _wait_fatal(runtime)
    finally:
        runtime._async.shutdown(wait=True)
    assert "sink pre-commit for checkpoint 4 failed: S3 staging: 503 Slow Down" in str(fatal)
    assert client.sent == []


class FailingStorage(Storage):
    def write_state_pieces(self, *args, **kwargs):
        raise OSError("storage unreachable")


def test_a_failed_state_upload_declines_and_the_task_runs_on():
    """The asynchronous part (Flink's CHECKPOINT_ASYNC_EXCEPTION): the checkpoint is
    declined and counts; the task keeps its staged output for the next checkpoint."""
    blob = b"x" * 300_000  # not inline: uploaded
    runtime, client = _runtime(
        {"range-00000": SplitState(position=5, operators={"0": {"b": blob}})}, storage=FailingStorage()
    )
    try:
        _barrier(runtime, 5)
        runtime._take_barriers()
        assert client.got.wait(10)
    finally:
        runtime._async.shutdown(wait=True)
    [decline] = client.sent
    assert type(decline).__name__ == "Decline" and "state upload failed" in decline.reason
    assert runtime._fatal is None


def test_a_channel_lost_for_good_fails_the_task():
    """The client gave up reconnecting: the task fails (Spark retries it and the new
    attempt registers) instead of running on without checkpoints."""
    runtime, _ = _runtime({"range-00000": SplitState(position=5)})
    try:
        runtime._on_channel_closed(None)  # closed by the subtask itself: nothing to do
        assert runtime._fatal is None
        runtime._on_channel_closed(ConnectionRefusedError("gave up after 6 attempts"))
        assert runtime._restore_event.is_set() and runtime._wake.is_set()
        with pytest.raises(ConnectionError, match="control channel to the driver is lost for good"):
            runtime._check()
    finally:
        runtime._async.shutdown(wait=True)


class RecordingSource:
    def __init__(self) -> None:
        self.completed: list[dict[str, Any]] = []

    def checkpoint_completed(self, positions: dict[str, Any]) -> None:
        self.completed.append(dict(positions))


def test_the_source_hears_the_positions_of_the_newest_completed_checkpoint() -> None:
    from airflow_provider_seatunnel_ckpt.engine.messages import NotifyComplete, encode

    state = SplitState(position=10)
    runtime, client = _runtime({"s0": state}, storage=Storage())
    source = runtime._source = RecordingSource()
    for checkpoint_id, position in ((1, 10), (2, 20), (3, 30)):
        state.position = position
        _barrier(runtime, checkpoint_id)
        runtime._take_barriers()
    runtime._async.submit(lambda: None).result()
    runtime._tell_source_completed()
    assert source.completed == []  # nothing completed yet
    runtime._on_message(encode(NotifyComplete(2)))  # 1 was subsumed by 2
    runtime._tell_source_completed()
    assert source.completed == [{"s0": 20}]
    runtime._tell_source_completed()  # told once
    runtime._on_message(encode(NotifyComplete(3)))
    runtime._tell_source_completed()
    assert source.completed == [{"s0": 20}, {"s0": 30}] and runtime._positions_at == {}


def test_the_source_hears_a_finished_splits_last_position_even_if_its_checkpoint_was_subsumed() -> None:
    """A finished split leaves the state (split_book): its last position is in the
    positions of the next barrier only. When that checkpoint is subsumed by a later one
    (NotifyComplete names only the newest), the hook still hears it (Kafka's consumer
    group commit of a partition read to its end)."""
    from airflow_provider_seatunnel_ckpt.engine.messages import NotifyComplete, encode

    state = SplitState(position=10)
    runtime, client = _runtime({"s0": state}, storage=Storage())
    source = runtime._source = RecordingSource()
    index, split = runtime._book.unfinished()[0]
    runtime._book.state_of(split).position = 40
    runtime._book.finish(index, split, 50)
    _barrier(runtime, 1)
    runtime._take_barriers()
    state.position = 20
    _barrier(runtime, 2)
    runtime._take_barriers()
    runtime._async.submit(lambda: None).result()
    runtime._on_message(encode(NotifyComplete(2)))
    runtime._tell_source_completed()
    assert source.completed == [{"s0": 20, split.split_id: 50}]


def test_splits_dealt_after_a_barrier_are_not_in_its_state_even_if_booked_before_it_is_taken():
    """The read loop books dealt splits (``_take_assigned``) before ``_process_batch``
    takes the barriers waiting for it. A barrier that arrived first, then an AssignSplits
    sent after it (the driver's pool at that barrier still holds those splits): the
    state at the barrier must not name them, or a restore from it reads them twice
    (a CI run: 4,800 rows, one chunk of 32 splits, written twice after a kill)."""
    source = {"plugin_name": "Sequence", "rows": 400, "splits": 4}
    spec = JobSpec("dealt", 1, source, {"plugin_name": "Console"})
    splits = tuple(SequenceSource({"rows": 400, "splits": 4}).splits(1))
    assert len(splits) == 4
    context = SubtaskContext("dealt", 1, spec.to_json(), splits, ("127.0.0.1", 1), "t" * 32, storage=None, dealt=True)
    runtime = SubtaskRuntime(context, 0, 0)
    client = Client()
    runtime._client = client
    runtime._async = ThreadPoolExecutor(max_workers=1, thread_name_prefix="test-async")
    runtime._sink, runtime._writer = Sink(), Writer()
    runtime._book = SplitBook([], {}, FinishedRuns(), dealt=True)
    try:
        runtime._on_message(encode(AssignSplits((0,))))
        assert [index for index, _ in runtime._take_assigned()] == [0]
        runtime._on_message(encode(TriggerBarrier(1, CheckpointKind.CHECKPOINT, 0)))
        runtime._on_message(encode(AssignSplits((1, 2))))  # dealt after barrier 1 went out
        runtime._take_assigned()  # the read loop's order: the assignments first ...
        runtime._take_barriers()  # ... then the barrier, in the next batch
        assert client.got.wait(10)
        later = [index for index, _ in runtime._take_assigned()]
    finally:
        runtime._async.shutdown(wait=True)
    [ack] = client.sent
    assert isinstance(ack, Ack), ack
    named = set(decode_subtask_state(ack.state_handles[0].inline, "ack").splits)
    assert named == {splits[0].split_id}, named
    assert later == [1, 2]  # read after the barrier, in the next epoch's state
