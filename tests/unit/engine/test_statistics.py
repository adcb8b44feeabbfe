"""Checkpoint statistics: per-subtask ACK latency measured by the coordinator's clock,
the ``_metadata`` statistics object, and the driver's progress line."""

from __future__ import annotations

import json
import time

from airflow_provider_seatunnel_ckpt.engine.completed_store import (
    CompletedCheckpointStore,
    checkpoint_statistics,
    wall_ms,
)
from airflow_provider_seatunnel_ckpt.engine.driver import CheckpointRecord, DriverLoop, completion_line
from airflow_provider_seatunnel_ckpt.engine.messages import CheckpointKind

from .harness import Unfenced, state_of

#: the keys bench/ and sensors already read; they must stay
LEGACY_KEYS = {"trigger_ms", "complete_ms", "duration_ms", "ack_duration_ms", "state_bytes", "rows", "subtasks"}
LEGACY_SUBTASK_KEYS = {"attempt", "sync_ms", "async_ms", "state_bytes", "rows_since_last"}


def _completed_with_latencies(builder, latencies):
    """Trigger one checkpoint at 1000 ms (fake clock), ACK subtask i at 1000 + latencies[i]."""
    h = builder.with_(num_subtasks=len(latencies)).started()
    cid = h.trigger()
    for subtask in sorted(range(len(latencies)), key=lambda i: latencies[i]):
        h.clock.now = 1_000 + latencies[subtask]
        h[subtask].ack(cid)
    [completed] = h.persist_requests
    return h, cid, completed


def test_each_subtask_records_its_ack_latency_on_the_coordinator_clock(builder):
    h, cid, completed = _completed_with_latencies(builder, [75, 30, 0])
    assert completed.trigger_ms == 1_000
    assert [s.ack_latency_ms for s in completed.subtasks] == [75, 30, 0]
    assert completed.acked_ms == 1_075  # the slowest ACK


def test_pending_checkpoint_reports_latencies_of_the_acks_received_so_far(builder):
    h = builder.started()
    cid = h.trigger()
    h.clock.advance(40)
    h[1].ack(cid)
    pending = h.coordinator._pending[cid]
    assert pending.ack_latencies_ms == {1: 40}
    h.clock.advance(5)
    h[1].ack(cid)  # a duplicate does not move the first ACK's time
    assert pending.ack_latencies_ms == {1: 40}


def test_metadata_statistics_have_checkpoint_and_per_subtask_fields(builder):
    _, cid, completed = _completed_with_latencies(builder, [75, 30])
    stats = checkpoint_statistics(completed, trigger_wall_ms=1_700_000_000_000, complete_wall_ms=1_700_000_000_120)
    state_sizes = [len(state_of(i, cid)) for i in range(2)]
    assert stats == {
        "trigger_ms": 1_700_000_000_000,
        "complete_ms": 1_700_000_000_120,
        "duration_ms": 120,
        "ack_duration_ms": 75,
        "persist_ms": 45,
        "state_bytes": sum(state_sizes),
        "rows": 20,
        "num_subtasks": 2,
        "subtasks": {
            "0": {
                "attempt": 0,
                "sync_ms": 1,
                "async_ms": 2,
                "state_bytes": state_sizes[0],
                "rows_since_last": 10,
                "ack_latency_ms": 75,
                "ack_ms": 1_700_000_000_075,
            },
            "1": {
                "attempt": 0,
                "sync_ms": 1,
                "async_ms": 2,
                "state_bytes": state_sizes[1],
                "rows_since_last": 10,
                "ack_latency_ms": 30,
                "ack_ms": 1_700_000_000_030,
            },
        },
    }
    assert LEGACY_KEYS <= stats.keys()
    assert all(LEGACY_SUBTASK_KEYS <= s.keys() for s in stats["subtasks"].values())
    json.dumps(stats, allow_nan=False)  # goes into _metadata as is


def test_the_manifest_carries_the_statistics(builder):
    _, cid, completed = _completed_with_latencies(builder, [10, 20])
    manifest = CompletedCheckpointStore(None, "job", 1).to_manifest(completed, 1_000, {"job_name": "job"})
    assert manifest.trigger_ms == manifest.statistics["trigger_ms"] == 1_000
    assert manifest.complete_ms == manifest.statistics["complete_ms"]
    assert [manifest.statistics["subtasks"][k]["ack_latency_ms"] for k in ("0", "1")] == [10, 20]
    # what a restore reads back ignores the statistics it does not need
    restored = CompletedCheckpointStore(None, "job", 1).from_manifest(manifest)
    assert restored.kind is CheckpointKind.CHECKPOINT and [s.ack_latency_ms for s in restored.subtasks] == [0, 0]


def test_the_progress_line_names_every_subtask(builder):
    _, cid, completed = _completed_with_latencies(builder, [75, 30])
    stats = checkpoint_statistics(completed, 1_000, 1_120)
    record = CheckpointRecord(cid, "checkpoint", stats["duration_ms"], 2_048, stats["rows"], "file:///c", stats)
    line = completion_line(record, rows_total=1_234_567, rate=35_000.4)
    assert line.startswith(
        f"checkpoint {cid} (checkpoint) completed in 120 ms, 2.0 KiB state, 20 rows; 1,234,567 rows total, 35,000 rows/s"
    ), line
    assert "; acks in 75 ms, persisted in 45 ms" in line
    size = [f"{len(state_of(i, cid))} B" for i in range(2)]
    assert f"; subtask 0: ack 75 ms, sync 1 ms, async 2 ms, {size[0]}, 10 rows" in line
    assert line.endswith(f"; subtask 1: ack 30 ms, sync 1 ms, async 2 ms, {size[1]}, 10 rows"), line


def test_the_progress_line_survives_statistics_without_the_new_fields():
    record = CheckpointRecord(3, "final", 50, 10, 7, "file:///c", {"duration_ms": 50, "rows": 7})
    assert completion_line(record, 7, 1.0) == (
        "checkpoint 3 (final) completed in 50 ms, 10 B state, 7 rows; 7 rows total, 1 rows/s"
    )


class _SlowStorage:
    """What the driver's storage worker calls; ``_metadata`` takes ``write_s`` to write."""

    def __init__(self, write_s: float):
        self.write_s = write_s

    def read_document(self, job_id, path):
        return {"fencing_token": "t"}

    def complete_checkpoint(self, manifest, written=(), *, before_write=None, retention=True):
        if before_write is not None:
            before_write()
        time.sleep(self.write_s)
        return "file:///c"

    def apply_retention(self, job_id, pipeline_id):
        return []


class _Committer:
    def commit(self, infos):
        pass


def test_the_progress_line_is_trigger_to_durable_and_persisted_is_the_measured_write(builder):
    """_metadata's duration_ms ends when the manifest is built (it cannot hold its own
    write); the progress line's figure ends after the write, and "persisted in" is the
    write's measured time."""
    h, cid, completed = _completed_with_latencies(builder, [5, 10])
    lines: list[str] = []
    store = CompletedCheckpointStore(_SlowStorage(0.3), "job", 1)
    loop = DriverLoop(h.coordinator, store, _Committer(), fence=Unfenced(), progress=lines.append)
    try:
        trigger_wall = wall_ms()
        loop._persist(completed, trigger_wall)
        loop._handle(loop.events.get(timeout=10))
    finally:
        loop._io.shutdown(wait=True)
    [record] = loop.outcome.completed
    stats = record.statistics
    assert stats["duration_ms"] < 300  # as in _metadata: trigger -> manifest built
    assert record.persist_ms >= 300
    assert record.duration_ms >= stats["duration_ms"] + 300
    [line] = lines
    assert f"completed in {record.duration_ms} ms" in line
    assert f", persisted in {record.persist_ms} ms" in line
