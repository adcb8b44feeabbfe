"""The driver loop when publishing a completed checkpoint's output fails.

After NotifyComplete the subtasks forget the commit infos of that checkpoint, so only
a restore *from that very checkpoint* replays them. A failed commit therefore fails the
run, and no later checkpoint may complete in the meantime: its manifest would not carry
those infos, a restore from it would never publish them, and its sink cleanup would
delete them (rows lost). The chaos suite hit exactly this window (a storage error in the
commit while the next checkpoint's ``_metadata`` write was queued on the
same storage worker); here it is reproduced deterministically with a real coordinator,
driver loop and memory storage, a fake control channel and a sink committer the test
holds and then fails.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest

from airflow_provider_seatunnel_ckpt.engine.completed_store import CompletedCheckpointStore
from airflow_provider_seatunnel_ckpt.engine.coordinator import CheckpointCoordinator, CoordinatorSettings
from airflow_provider_seatunnel_ckpt.engine.driver import DriverLoop, monotonic_ms
from airflow_provider_seatunnel_ckpt.engine.fencing import FenceLog
from airflow_provider_seatunnel_ckpt.engine.messages import (
    Ack,
    AckStats,
    Register,
    StateHandle,
    TriggerBarrier,
    decode,
    encode,
)
from airflow_provider_seatunnel_ckpt.errors import CheckpointStorageError
from airflow_provider_seatunnel_ckpt.storage.fs_memory import MemoryFileSystem
from airflow_provider_seatunnel_ckpt.storage.fs_storage import FileSystemCheckpointStorage

pytestmark = pytest.mark.timeout(60)

TOKEN = "fencing-token"


class HeldCommitter:
    """Commits of checkpoint 1 wait for ``gate``, then fail like a storage outage."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.entered = threading.Event()
        self.committed: list[Any] = []

    def commit(self, infos: Any) -> None:
        infos = list(infos)
        if any(info.get("epoch") == 1 for info in infos):
            self.entered.set()
            self.gate.wait(20)
            raise CheckpointStorageError("hdfs: cannot move part-0: injected failure, after 6 attempts")
        self.committed += infos


class AutoAckChannel:
    """The control server: every barrier is ACKed at once by the one subtask."""

    def __init__(self, loop: DriverLoop) -> None:
        self.loop = loop
        self.barriers: list[int] = []

    def send(self, connection_id: Any, raw: Any) -> None:
        message = decode(raw)
        if isinstance(message, TriggerBarrier):
            cid = message.checkpoint_id
            self.barriers.append(cid)
            ack = Ack(cid, 0, 0, (StateHandle.of_bytes(b"{}"),), [[cid, {"epoch": cid}]], AckStats(rows_since_last=1))
            self.loop.on_message(connection_id, encode(ack))


def test_no_checkpoint_completes_after_a_failed_commit() -> None:
    storage = FileSystemCheckpointStorage(MemoryFileSystem(f"commit-{uuid.uuid4().hex}"), "/ns/", 10)
    fence = FenceLog(storage, "job")
    fence.claim(TOKEN)
    store = CompletedCheckpointStore(storage, "job", 1)
    coordinator = CheckpointCoordinator(1, 1, CoordinatorSettings(interval_ms=50, timeout_ms=30_000), monotonic_ms)
    committer = HeldCommitter()
    lines: list[str] = []
    loop = DriverLoop(coordinator, store, committer, fence, progress=lines.append)
    channel = AutoAckChannel(loop)
    loop.server = channel
    loop.on_message(1, encode(Register(0, 0)))
    outcome: list[Any] = []
    thread = threading.Thread(target=lambda: outcome.append(loop.run()), daemon=True)
    thread.start()

    assert committer.entered.wait(10), lines  # checkpoint 1 is durable; its commit is stuck
    deadline = time.monotonic() + 10
    while 2 not in coordinator.in_flight and time.monotonic() < deadline:
        time.sleep(0.005)
    # Checkpoint 2 is fully acknowledged: its _metadata write waits behind the commit.
    assert 2 in channel.barriers, channel.barriers
    time.sleep(0.2)
    committer.gate.set()  # the commit fails
    thread.join(20)
    assert outcome and not outcome[0].finished
    assert "committing the output of checkpoint 1 failed" in (outcome[0].error or "")
    completed = [e.checkpoint_id for e in storage.list_checkpoint_entries("job", 1) if e.completed]
    assert completed == [1], f"a checkpoint completed after the failed commit of checkpoint 1: {completed}"
    latest = store.latest_restorable()
    assert latest is not None and latest.checkpoint_id == 1  # the next run replays checkpoint 1's commit
