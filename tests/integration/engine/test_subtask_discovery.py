"""A subtask with live split discovery, run in threads with a fake channel (no Spark):
it takes its round-robin share of discovered splits while it runs, waits for splits
instead of reporting the end of its input, snapshots the new splits at the next
barrier, and after a restart takes the discovered splits from its RestoreState."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from typing import Any

import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt import connectors
from airflow_provider_seatunnel_ckpt.connectors import register_sink
from airflow_provider_seatunnel_ckpt.connectors.api import ReaderContext, Source, SourceReader, Split
from airflow_provider_seatunnel_ckpt.engine.messages import (
    Ack,
    AddSplits,
    CheckpointKind,
    EndOfInput,
    FinishJob,
    RestoreState,
    TriggerBarrier,
)
from airflow_provider_seatunnel_ckpt.engine.subtask import SubtaskContext, SubtaskRuntime
from airflow_provider_seatunnel_ckpt.jobfile.spec import JobSpec
from tests.support.subtask import HeldSink, start_subtask
from tests.support.workspace import FakeChannel

pytestmark = pytest.mark.timeout(60)


class LiveSource(Source):
    """Unbounded: each split yields ten rows, then empty batches; discovers live."""

    plugin_name = "LiveTest"
    reads_splits_together = True
    discovery_interval_s = 1.0
    opened: list[tuple[str, Any]] = []

    def create_reader(self, split: Split, position: Any, context: ReaderContext) -> SourceReader:
        LiveSource.opened.append((split.split_id, position))
        return LiveReader(split, position or 0)


class LiveReader(SourceReader):
    def __init__(self, split: Split, position: int):
        self.base = int(split.spec["base"])
        self.next = position

    def read_batch(self) -> pa.RecordBatch:
        if self.next >= 10:
            time.sleep(0.01)  # an idle partition: an empty batch after a short wait
            return pa.record_batch({"id": pa.array([], pa.int64())})
        ids = list(range(self.base + self.next, self.base + 10))
        self.next = 10
        return pa.record_batch({"id": pa.array(ids, pa.int64())})

    def position(self) -> Any:
        return self.next


def _split(index: int) -> tuple[str, dict[str, Any]]:
    return (f"t-{index}", {"base": index * 100})


@pytest.fixture
def runtime(monkeypatch: pytest.MonkeyPatch) -> Iterable[tuple[SubtaskRuntime, FakeChannel]]:
    # for this test only: the registry's list of known sources is part of other tests
    monkeypatch.setitem(connectors._registry["source"], "livetest", ("LiveTest", LiveSource))
    register_sink("HeldTest", HeldSink)
    HeldSink.hold, HeldSink.entered, HeldSink.writers = {}, {}, []
    LiveSource.opened = []
    # subtask 0 of 2, started before any split exists (a pattern that matches nothing yet)
    spec = JobSpec("live", 2, {"plugin_name": "LiveTest"}, {"plugin_name": "HeldTest"})
    context = SubtaskContext("live", 1, spec.to_json(), (), ("127.0.0.1", 1), "t" * 32, storage=None)
    subtask, channel, thread, errors = start_subtask(context)
    channel.deliver(RestoreState(None))
    yield subtask, channel
    channel.deliver(FinishJob(99))
    thread.join(5)
    assert not thread.is_alive() and not errors, errors


def _state(ack: Ack) -> dict[str, Any]:
    return json.loads(ack.state_handles[0].inline)["splits"]


def test_discovered_splits_are_read_while_running_and_snapshotted(runtime: tuple[SubtaskRuntime, FakeChannel]) -> None:
    subtask, channel = runtime
    time.sleep(0.5)
    assert not [m for m in channel.sent if isinstance(m, EndOfInput)], "no splits yet is not the end of the input"
    channel.deliver(AddSplits((_split(0), _split(1), _split(2))))
    channel.deliver(TriggerBarrier(1, CheckpointKind.CHECKPOINT, 0))
    state = _state(channel.wait_for(lambda m: isinstance(m, Ack) and m.checkpoint_id == 1))
    # this subtask's round-robin share of the plan, the splits it started (one not started is left out)
    assert set(state) <= {"t-0", "t-2"}
    assert [split_id for split_id, _ in LiveSource.opened] == ["t-0", "t-2"]
    channel.deliver(AddSplits((_split(0), _split(1))))  # stale (shorter): ignored
    channel.deliver(AddSplits((_split(0), _split(1), _split(2), _split(3), _split(4))))
    expected = [base + i for base in (0, 200, 400) for i in range(10)]
    deadline = time.monotonic() + 60  # a bound, not a timing: the loop ends when the rows are in

    def written() -> list[int]:
        # every epoch's rows: barrier 1 came before the first read, so its epoch has that read's
        return sorted(i for writer in HeldSink.writers for i in writer.ids)

    while len(written()) < len(expected) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [split_id for split_id, _ in LiveSource.opened] == ["t-0", "t-2", "t-4"]
    assert written() == expected  # each discovered split's rows, once
    channel.deliver(TriggerBarrier(2, CheckpointKind.CHECKPOINT, 0))
    state = _state(channel.wait_for(lambda m: isinstance(m, Ack) and m.checkpoint_id == 2))
    assert {split_id: s["position"] for split_id, s in state.items()} == {"t-0": 10, "t-2": 10, "t-4": 10}
    assert not [m for m in channel.sent if isinstance(m, EndOfInput)]


def test_a_restart_takes_the_discovered_splits_from_its_restore_state(
    runtime: tuple[SubtaskRuntime, FakeChannel],
) -> None:
    subtask, channel = runtime
    time.sleep(0.3)
    channel.on_reconnect()  # re-registered: the coordinator's answer names the discovered splits
    channel.deliver(RestoreState(None, added_splits=(_split(0), _split(1), _split(2))))
    channel.deliver(TriggerBarrier(3, CheckpointKind.CHECKPOINT, 0))
    state = _state(channel.wait_for(lambda m: isinstance(m, Ack) and m.checkpoint_id == 3))
    assert set(state) <= {"t-0", "t-2"}  # the splits of its share it started
    assert [split_id for split_id, _ in LiveSource.opened] == ["t-0", "t-2"]
