"""A barrier taken while a batch is in flight (engine/subtask.py, ``_take_barriers_in_flight``):
it arrives while the processing thread reads or transforms a batch, the channel's thread
takes it at once, and the cut goes before that batch: the checkpoint names the position
before it, the batch's rows go to the next epoch's writer. A barrier waits instead while
the batch is written, in the attempt's first read, and when a transform keeps state.

The subtask is driven by hand on two threads (no Spark, no socket): a transform or a
write that the test holds stands for a batch that takes long."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.connectors.api import SinkWriter
from airflow_provider_seatunnel_ckpt.connectors.sequence import SequenceSource
from airflow_provider_seatunnel_ckpt.engine.messages import CheckpointKind, TriggerBarrier, decode, encode
from airflow_provider_seatunnel_ckpt.engine.split_book import FinishedRuns, SplitBook, share_of
from airflow_provider_seatunnel_ckpt.engine.subtask import _READ, SubtaskContext, SubtaskRuntime
from airflow_provider_seatunnel_ckpt.jobfile.spec import JobSpec

pytestmark = pytest.mark.timeout(60)

BATCH = 1_000
SPLIT = "range-00000"


class Gate:
    """Holds the thread that reaches it until the test releases it."""

    def __init__(self) -> None:
        self.reached, self.released = threading.Event(), threading.Event()

    def __call__(self) -> None:
        self.reached.set()
        assert self.released.wait(20)


class Writer(SinkWriter):
    def __init__(self, log: list[Writer], gate: Gate | None) -> None:
        self.ids: list[int] = []
        self.gate = gate
        log.append(self)

    def write(self, batch: pa.RecordBatch) -> None:
        if self.gate is not None:
            self.gate()
        self.ids += batch.column("id").to_pylist()

    def prepare_commit(self, checkpoint_id: int) -> Any:
        return None


class Sink:
    def __init__(self) -> None:
        self.writers: list[Writer] = []
        self.gate: Gate | None = None  #: holds every write while set
        self.fail_open = False

    def create_writer(self, job_id: str, subtask: int, attempt: int) -> Writer:
        if self.fail_open:
            raise OSError("the sink is gone")
        return Writer(self.writers, self.gate)


class Router:
    """source -> one transform -> sink; the transform waits at ``gate`` while it is set."""

    def __init__(self) -> None:
        self.gate: Gate | None = None

    def route(self, batch: pa.RecordBatch, origin: int, operators: Any) -> list[tuple[int, pa.RecordBatch]]:
        if self.gate is not None:
            self.gate()
        return [(0, batch)]


class Client:
    def __init__(self) -> None:
        self.sent: list[Any] = []

    def send(self, raw: dict[str, Any]) -> None:
        self.sent.append(decode(raw))


class Job:
    """A subtask reading one Sequence split, started (its first batch read and written)."""

    def __init__(self, stateful: bool = False) -> None:
        source_options = {"plugin_name": "Sequence", "rows": 1_000_000, "splits": 1}
        spec = JobSpec("cut", 1, source_options, {"plugin_name": "Console"}, batch_size=BATCH)
        source = SequenceSource({"rows": 1_000_000, "splits": 1})
        splits = tuple(source.splits(1))
        context = SubtaskContext("cut", 1, spec.to_json(), splits, ("127.0.0.1", 1), "t" * 32, storage=None)
        self.rt = rt = SubtaskRuntime(context, 0, 0)
        rt._client = Client()
        rt._async = ThreadPoolExecutor(max_workers=1, thread_name_prefix="test-async")
        self.sink, self.router = Sink(), Router()
        rt._sink = self.sink  # type: ignore[assignment]
        rt._router = self.router  # type: ignore[assignment]
        rt._grouped = False
        rt._cuts_in_flight = not stateful  # as _run_attempt sets it from the job's transforms
        rt._writer = self.sink.create_writer("cut", 0, 0)
        rt._book = book = SplitBook(share_of(splits, 1, 0), {}, FinishedRuns())
        self.state = book.state_of(splits[0])
        self.reader = source.create_reader(splits[0], None, rt._context)

    def batch(self) -> None:
        assert self.rt._process_batch(self.reader, self.state, 0) is _READ

    def batch_on_a_thread(self) -> threading.Thread:
        thread = threading.Thread(target=self.batch, daemon=True)
        thread.start()
        return thread

    def barrier(self, checkpoint_id: int) -> None:
        """The coordinator's barrier, as the channel's thread delivers it."""
        self.rt._on_message(encode(TriggerBarrier(checkpoint_id, CheckpointKind.CHECKPOINT, 0)))

    def barrier_while_held(self, gate: Gate, checkpoint_id: int) -> int:
        """A batch on a thread, held at ``gate``; barrier ``checkpoint_id`` comes meanwhile.
        Returns how many barriers the subtask had taken while the batch was held, once the
        batch is done."""
        thread = self.batch_on_a_thread()
        assert gate.reached.wait(10)
        self.barrier(checkpoint_id)
        taken = self.rt.barriers_handled
        gate.released.set()
        thread.join(10)
        return taken

    def close(self) -> None:
        self.rt._async.shutdown(wait=True)


@pytest.fixture
def job():
    made: list[Job] = []

    def make(stateful: bool = False, started: bool = True) -> Job:
        made.append(Job(stateful))
        if started:
            made[-1].batch()  # the attempt's first read: never cut in flight
        return made[-1]

    yield make
    for each in made:
        each.close()


def test_a_barrier_is_taken_while_the_batch_is_transformed_and_the_cut_goes_before_it(job):
    j = job()
    j.router.gate = gate = Gate()
    thread = j.batch_on_a_thread()
    assert gate.reached.wait(10)  # the batch is read, its transform runs
    j.barrier(1)
    assert j.rt.barriers_handled == 1  # taken by the channel's thread, not after the batch
    assert j.rt._positions_at[1] == {SPLIT: BATCH}  # before the batch in flight
    gate.released.set()
    thread.join(10)
    first, second = j.sink.writers
    assert first.ids == list(range(BATCH))  # checkpoint 1's epoch: the rows before the cut
    assert second.ids == list(range(BATCH, 2 * BATCH))  # the batch in flight: the next epoch
    assert j.state.position == 2 * BATCH
    j.batch()
    assert second.ids == list(range(BATCH, 3 * BATCH)) and j.rt.barriers_handled == 1


def test_a_barrier_that_comes_while_the_batch_is_written_waits_for_the_write(job):
    j = job()
    j.sink.gate = gate = Gate()
    j.rt._writer.gate = gate  # the transforms are done: the batch is being written
    assert j.barrier_while_held(gate, 1) == 0
    j.sink.gate = None
    j.batch()  # taken before the next read: the written batch is in its epoch
    assert j.rt.barriers_handled == 1
    assert j.rt._positions_at[1] == {SPLIT: 2 * BATCH}
    assert j.sink.writers[0].ids == list(range(2 * BATCH))
    assert j.sink.writers[1].ids == list(range(2 * BATCH, 3 * BATCH))


def test_a_stateful_transform_makes_the_barrier_wait_for_the_batch(job):
    """Its split state changes while it transforms: a cut in flight could name a state
    that has seen part of the batch it puts after the cut."""
    j = job(stateful=True)
    j.router.gate = gate = Gate()
    assert j.barrier_while_held(gate, 1) == 0
    j.batch()
    assert j.rt._positions_at[1] == {SPLIT: 2 * BATCH}


def test_the_attempts_first_read_is_not_cut(job):
    """A barrier that comes while the attempt reads its first batch is taken after it, so
    that checkpoint holds rows (the first-read rule in _process_batch)."""
    j = job(started=False)
    j.router.gate = gate = Gate()
    assert j.barrier_while_held(gate, 1) == 0
    j.router.gate = None
    j.batch()
    assert j.rt._positions_at[1] == {SPLIT: BATCH}


def test_a_failure_to_take_the_barrier_in_flight_fails_the_task_at_the_next_batch(job):
    j = job()
    j.router.gate = gate = Gate()
    thread = j.batch_on_a_thread()
    assert gate.reached.wait(10)
    j.sink.fail_open = True
    j.barrier(1)  # the new epoch's writer cannot be opened
    gate.released.set()
    thread.join(10)
    with pytest.raises(OSError, match="the sink is gone"):
        j.batch()
