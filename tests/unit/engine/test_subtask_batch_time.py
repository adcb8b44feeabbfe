"""Batches sized by time, in the subtask's processing loop (engine/subtask.py,
engine/batch_sizer.py): while its CPU is shared a barrier waits for a batch of about the
target time, not for a whole configured batch; the batches grow back once the CPU is
free; every barrier still covers exactly the rows written before it. And a barrier that comes
while an attempt starts is taken after its first read, so that checkpoint has rows.

A fake clock: the sink's write advances it by a cost per row, as a slow or a free CPU
would, so nothing here depends on the machine's timing."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.connectors.api import SinkWriter
from airflow_provider_seatunnel_ckpt.connectors.sequence import SequenceSource
from airflow_provider_seatunnel_ckpt.engine.messages import CheckpointKind, TriggerBarrier, decode
from airflow_provider_seatunnel_ckpt.engine.split_book import FinishedRuns, SplitBook, share_of
from airflow_provider_seatunnel_ckpt.engine.subtask import _READ, SubtaskContext, SubtaskRuntime
from airflow_provider_seatunnel_ckpt.jobfile.spec import JobSpec

pytestmark = pytest.mark.timeout(60)

ROWS = 100_000_000
BATCH = 65_536
#: a configured batch on an eighth of a core (eight jobs on two cores), and alone
SHARED_S, FREE_S = 0.2, 0.024


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.per_row = SHARED_S / BATCH

    def __call__(self) -> float:
        return self.now


class Writer(SinkWriter):
    def __init__(self, clock: Clock, log: list[Any]) -> None:
        self.clock, self.log, self.rows = clock, log, 0
        log.append(self)

    def write(self, batch: pa.RecordBatch) -> None:
        self.clock.now += batch.num_rows * self.clock.per_row  # the batch's CPU work
        self.rows += batch.num_rows

    def prepare_commit(self, checkpoint_id: int) -> Any:
        return None


class Sink:
    def __init__(self, clock: Clock, log: list[Any]) -> None:
        self.clock, self.log = clock, log

    def create_writer(self, job_id: str, subtask: int, attempt: int) -> Writer:
        return Writer(self.clock, self.log)


class Router:
    """The chain source -> sink, no transform."""

    def route(self, batch: pa.RecordBatch, origin: int, operators: Any) -> Any:
        yield None, batch


class Client:
    def __init__(self) -> None:
        self.sent: list[Any] = []

    def send(self, raw: dict[str, Any]) -> None:
        self.sent.append(decode(raw))


def _runtime(env: dict[str, Any]) -> tuple[SubtaskRuntime, Clock, list[Writer], Any, Any]:
    source_options = {"plugin_name": "Sequence", "rows": ROWS, "splits": 1}
    spec = JobSpec("timed", 1, source_options, {"plugin_name": "Console"}, env=env, batch_size=BATCH)
    source = SequenceSource({"rows": ROWS, "splits": 1})
    splits = tuple(source.splits(1))
    context = SubtaskContext("timed", 1, spec.to_json(), splits, ("127.0.0.1", 1), "t" * 32, storage=None)
    runtime = SubtaskRuntime(context, 0, 0)
    clock, writers = Clock(), []
    runtime._clock = clock
    runtime._client = Client()
    runtime._async = ThreadPoolExecutor(max_workers=1, thread_name_prefix="test-async")
    runtime._sink = Sink(clock, writers)  # type: ignore[assignment]
    runtime._router = Router()
    runtime._grouped = False
    runtime._writer = runtime._sink.create_writer("timed", 0, 0)
    runtime._book = book = SplitBook(share_of(splits, 1, 0), {}, FinishedRuns())
    state = book.state_of(splits[0])
    reader = source.create_reader(splits[0], None, runtime._context)
    return runtime, clock, writers, reader, state


def _batch(runtime: SubtaskRuntime, clock: Clock, reader: Any, state: Any) -> tuple[int, float]:
    """One batch through the loop: its rows and its (fake) seconds."""
    position, started = state.position or 0, clock.now
    assert runtime._process_batch(reader, state, 0) is _READ
    return state.position - position, clock.now - started


def _barrier_wait(runtime: SubtaskRuntime, clock: Clock, reader: Any, state: Any, checkpoint_id: int) -> float:
    """A barrier arriving just as a batch starts: how long until the subtask takes it."""
    arrived = clock.now
    original = reader.read_batch

    def read_then_barrier() -> Any:
        batch = original()
        runtime._barriers.append(TriggerBarrier(checkpoint_id, CheckpointKind.CHECKPOINT, 0))
        runtime._barrier_pending = True
        return batch

    reader.read_batch = read_then_barrier
    try:
        runtime._process_batch(reader, state, 0)  # the batch in flight
    finally:
        reader.read_batch = original
    before = runtime.barriers_handled
    runtime._process_batch(reader, state, 0)  # takes the barrier before its read
    assert runtime.barriers_handled == before + 1
    return runtime._barrier_taken_at - arrived


@pytest.fixture(autouse=True)
def _note_when_barriers_are_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    real = SubtaskRuntime._take_barriers

    def take(self: SubtaskRuntime) -> None:
        self._barrier_taken_at = self._clock()  # type: ignore[attr-defined]
        real(self)

    monkeypatch.setattr(SubtaskRuntime, "_take_barriers", take)


def test_a_barrier_waits_about_the_target_time_while_the_cpu_is_shared() -> None:
    runtime, clock, writers, reader, state = _runtime({"batch_time_ms": 50})
    try:
        first = _batch(runtime, clock, reader, state)
        assert first == (BATCH, pytest.approx(SHARED_S))  # nothing measured yet: the configured size
        batches = [_batch(runtime, clock, reader, state) for _ in range(20)]
        assert all(rows == BATCH // 4 for rows, _ in batches)  # 16,384 rows: 50 ms at this pace
        assert max(seconds for _, seconds in batches) <= 0.05 + 1e-9
        waits = [_barrier_wait(runtime, clock, reader, state, checkpoint_id) for checkpoint_id in (1, 2, 3)]
        assert max(waits) <= 0.05 + 1e-9  # was a whole configured batch: 200 ms
        # each barrier covers exactly the rows written before it: its epoch's writer has them
        positions = [runtime._positions_at[c]["range-00000"] for c in (1, 2, 3)]
        epochs = [w.rows for w in writers]
        assert positions == [sum(epochs[:1]), sum(epochs[:2]), sum(epochs[:3])]
    finally:
        runtime._async.shutdown(wait=True)


def test_with_fixed_batches_a_barrier_waits_a_whole_batch() -> None:
    runtime, clock, _, reader, state = _runtime({"batch_time_ms": 0})
    try:
        batches = [_batch(runtime, clock, reader, state) for _ in range(5)]
        assert all(rows == BATCH for rows, _ in batches)
        assert _barrier_wait(runtime, clock, reader, state, 1) == pytest.approx(SHARED_S)
    finally:
        runtime._async.shutdown(wait=True)


def test_the_batches_grow_back_when_the_cpu_is_free() -> None:
    runtime, clock, _, reader, state = _runtime({"batch_time_ms": 50})
    try:
        for _ in range(5):
            _batch(runtime, clock, reader, state)
        assert runtime._context.row_limit == BATCH // 4
        clock.per_row = FREE_S / BATCH  # the other jobs ended
        grown = [_batch(runtime, clock, reader, state)[0] for _ in range(4)]
        assert grown == [BATCH // 4, BATCH // 2, BATCH, BATCH]
        assert runtime._context.row_limit is None  # the configured size again, as a lone job
    finally:
        runtime._async.shutdown(wait=True)


def test_batches_are_fixed_by_default() -> None:
    """Sizing by time is opt-in (env.batch_time_ms) until a quiet machine has measured it:
    without the key, a slow batch leaves the next one at the configured size."""
    runtime, clock, _, reader, state = _runtime({})
    try:
        for _ in range(3):
            _batch(runtime, clock, reader, state)
        assert runtime._context.row_limit is None
    finally:
        runtime._async.shutdown(wait=True)


def test_a_barrier_that_came_before_the_attempts_first_read_is_taken_after_it() -> None:
    """The driver triggers a checkpoint as soon as every subtask runs, while a restored
    subtask is still opening its connectors. Taken before the first read, that checkpoint
    holds no row, and the restored job's first output waits a whole interval for the next
    one (a restore: 0 rows at 4.3 s, the first rows committed at 5.2 s)."""
    runtime, clock, writers, reader, state = _runtime({"batch_time_ms": 0})
    try:
        runtime._barriers.append(TriggerBarrier(1, CheckpointKind.CHECKPOINT, 0))
        runtime._barrier_pending = True
        assert runtime._process_batch(reader, state, 0) is _READ
        assert runtime.barriers_handled == 0  # the first read went first
        assert runtime._process_batch(reader, state, 0) is _READ  # takes it, then reads
        assert runtime.barriers_handled == 1
        assert runtime._positions_at[1]["range-00000"] == BATCH == writers[0].rows  # the first batch is in it
        # later barriers come before the read, as ever
        runtime._barriers.append(TriggerBarrier(2, CheckpointKind.CHECKPOINT, 0))
        runtime._barrier_pending = True
        runtime._process_batch(reader, state, 0)
        assert runtime._positions_at[2]["range-00000"] == 2 * BATCH
    finally:
        runtime._async.shutdown(wait=True)
