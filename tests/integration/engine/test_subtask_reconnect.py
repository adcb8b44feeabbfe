"""A subtask whose control channel is re-established (executor alive, connection lost).

The subtask re-registers and restarts from the state the coordinator sends back. Work
of its old registration may still be in flight at that moment; none of it may leak into
the new registration's checkpoints:

* a barrier of the old registration whose async half (sink pre-commit, upload)
  finishes *after* the reconnect must not add its staged output to the infos the next
  ACK carries: the restarted subtask re-reads those rows;
* a barrier of the new registration that arrives while the processing thread has not
  restarted yet must not be snapshotted from the old state.

These interleavings are too narrow to hit reliably with real Spark (the chaos suite
drops connections at random too), so the runtime runs here in threads with a fake
channel and a sink whose pre-commit the test can hold.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable
from typing import Any

import pytest

from airflow_provider_seatunnel_ckpt.connectors import register_sink
from airflow_provider_seatunnel_ckpt.connectors.sequence import SequenceSource
from airflow_provider_seatunnel_ckpt.engine.messages import (
    Ack,
    CheckpointKind,
    RestoreState,
    TriggerBarrier,
)
from airflow_provider_seatunnel_ckpt.engine.subtask import SubtaskContext, SubtaskRuntime
from airflow_provider_seatunnel_ckpt.jobfile.spec import JobSpec
from tests.support.subtask import HeldSink, start_subtask
from tests.support.workspace import FakeChannel

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def runtime() -> Iterable[tuple[SubtaskRuntime, FakeChannel]]:
    register_sink("HeldTest", HeldSink)
    HeldSink.hold, HeldSink.entered = {}, {}
    # 1000 rows/s in batches of 100: the processing thread passes its barrier check
    # every 0.1 s, so everything the test delivers at once is seen together.
    source = {"plugin_name": "Sequence", "rows": 1_000_000, "rows_per_second": 1_000}
    spec = JobSpec("reconnect", 1, source, {"plugin_name": "HeldTest"})
    splits = tuple(SequenceSource({"rows": 1_000_000}).splits(1))
    context = SubtaskContext("reconnect", 1, spec.to_json(), splits, ("127.0.0.1", 1), "t" * 32, storage=None)
    subtask, channel, thread, _errors = start_subtask(context)
    channel.deliver(RestoreState(None))
    yield subtask, channel
    for event in HeldSink.hold.values():
        event.set()
    subtask._fatal = RuntimeError("test over")  # stops the processing thread at its next check
    thread.join(5)


def _acks(channel: FakeChannel, checkpoint_id: int) -> list[Ack]:
    with channel.lock:
        return [m for m in channel.sent if isinstance(m, Ack) and m.checkpoint_id == checkpoint_id]


def _position(ack: Ack) -> Any:
    state = json.loads(ack.state_handles[0].inline)
    return state["splits"].get("range-00000", {}).get("position")  # no entry: not started


def test_old_prepared_output_does_not_reach_the_new_registration(runtime: tuple[SubtaskRuntime, FakeChannel]) -> None:
    subtask, channel = runtime
    HeldSink.hold[1] = threading.Event()
    HeldSink.entered[1] = threading.Event()
    time.sleep(0.5)  # some rows
    channel.deliver(TriggerBarrier(1, CheckpointKind.CHECKPOINT, 0))
    assert HeldSink.entered[1].wait(5)  # checkpoint 1's pre-commit is in progress...
    channel.on_reconnect()  # ...when the channel comes back: the subtask re-registers
    HeldSink.hold[1].set()  # and only now does the old pre-commit finish
    time.sleep(0.3)
    channel.deliver(RestoreState(None))  # the coordinator: restart from the beginning
    time.sleep(0.5)
    channel.deliver(TriggerBarrier(2, CheckpointKind.CHECKPOINT, 0))
    ack = channel.wait_for(lambda m: isinstance(m, Ack) and m.checkpoint_id == 2)
    epochs = [epoch for epoch, _info in (ack.sink_commit_info or [])]
    assert epochs == [2], f"checkpoint 2 carries output of the old registration: {ack.sink_commit_info}"
    assert ack.sink_commit_info[0][1]["first"] == 0  # the restart re-read from the restored position
    assert not _acks(channel, 1), "an ACK of the old registration was sent after it re-registered"


def test_new_barrier_is_not_snapshotted_from_the_old_state(runtime: tuple[SubtaskRuntime, FakeChannel]) -> None:
    subtask, channel = runtime
    time.sleep(1.0)  # about 1000 rows read by the first registration
    # Reconnect, the coordinator's restore answer and its next barrier all arrive
    # while the processing thread is between two batches.
    channel.on_reconnect()
    channel.deliver(RestoreState(None))
    channel.deliver(TriggerBarrier(5, CheckpointKind.CHECKPOINT, 0))
    ack = channel.wait_for(lambda m: isinstance(m, Ack) and m.checkpoint_id == 5)
    position = _position(ack)
    assert position is None or position < 300, (
        f"checkpoint 5 was snapshotted at position {position}: the state of the old registration, not the restored one"
    )
