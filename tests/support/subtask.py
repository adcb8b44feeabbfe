"""A subtask run in threads over a fake control channel (no Spark), for the engine suites
that play the driver's side message by message (tests/integration/engine/test_subtask_*.py):
the thread it runs on and a sink whose pre-commit the test can hold."""

from __future__ import annotations

import threading
import time
from typing import Any

import pyarrow as pa

from airflow_provider_seatunnel_ckpt.connectors.api import Sink, SinkCommitter, SinkWriter
from airflow_provider_seatunnel_ckpt.engine.messages import Register
from airflow_provider_seatunnel_ckpt.engine.subtask import SubtaskContext, SubtaskRuntime
from tests.support.workspace import FakeChannel


class HeldSink(Sink):
    """Records rows per writer; ``prepare_commit`` of chosen checkpoints waits for a release."""

    plugin_name = "HeldTest"
    hold: dict[int, threading.Event] = {}
    entered: dict[int, threading.Event] = {}
    #: every writer made, one per epoch, in order (a test that resets it reads all rows)
    writers: list[HeldWriter] = []

    def create_writer(self, job_id: str, subtask: int, attempt: int) -> SinkWriter:
        writer = HeldWriter()
        HeldSink.writers.append(writer)
        return writer

    def create_committer(self, job_id: str) -> SinkCommitter:  # pragma: no cover - driver side
        raise NotImplementedError


class HeldWriter(SinkWriter):
    def __init__(self) -> None:
        self.ids: list[int] = []

    def write(self, batch: pa.RecordBatch) -> None:
        self.ids += batch.column("id").to_pylist()

    def prepare_commit(self, checkpoint_id: int) -> Any:
        if checkpoint_id in HeldSink.entered:
            HeldSink.entered[checkpoint_id].set()
        if checkpoint_id in HeldSink.hold:
            HeldSink.hold[checkpoint_id].wait(20)
        if not self.ids:
            return None
        return {"epoch": checkpoint_id, "first": self.ids[0], "last": self.ids[-1], "rows": len(self.ids)}


def start_subtask(
    context: SubtaskContext, subtask_index: int = 0
) -> tuple[SubtaskRuntime, FakeChannel, threading.Thread, list[BaseException]]:
    """Subtask ``subtask_index`` (attempt 0) running on a thread over a FakeChannel,
    registered and waiting for its RestoreState; the list collects what ``run`` raised."""
    channels: list[FakeChannel] = []

    def factory(*args: Any, **kwargs: Any) -> FakeChannel:
        channels.append(FakeChannel(*args, **kwargs))
        return channels[-1]

    subtask = SubtaskRuntime(context, subtask_index, 0, client_factory=factory)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            subtask.run()
        except BaseException as err:  # pragma: no cover - reported by the caller
            errors.append(err)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 5
    while not channels and time.monotonic() < deadline:
        time.sleep(0.01)
    channel = channels[0]
    channel.wait_for(lambda m: isinstance(m, Register))
    return subtask, channel, thread, errors
