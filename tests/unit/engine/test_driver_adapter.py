"""The driver adapter without Spark or sockets: the run's outcome, stop requests."""

from __future__ import annotations

import pytest

from airflow_provider_seatunnel_ckpt.engine.actions import JobFinished, ScheduleWakeup
from airflow_provider_seatunnel_ckpt.engine.coordinator import Lifecycle
from airflow_provider_seatunnel_ckpt.engine.driver import STOP_REQUEST, DriverLoop
from airflow_provider_seatunnel_ckpt.engine.messages import Decline
from airflow_provider_seatunnel_ckpt.engine.pending import CheckpointState

from .harness import Store, Unfenced, driver_loop, of_type


@pytest.mark.parametrize(
    ("action", "final", "savepoint"),
    [
        pytest.param(JobFinished(6), 6, None, id="final-checkpoint"),
        pytest.param(JobFinished(5, stopped_with_savepoint=True), None, 5, id="stop-with-savepoint"),
    ],
)
def test_job_finished_sets_the_outcome_once_committed(builder, action, final, savepoint):
    loop = DriverLoop(
        builder.started().coordinator, store=None, committer=None, fence=Unfenced(), progress=lambda line: None
    )
    try:
        loop._execute([action])
        assert not loop.outcome.finished  # not before the ordered storage worker got there
        loop._handle(loop.events.get(timeout=10))
    finally:
        loop._io.shutdown(wait=True)
    outcome = loop.outcome
    assert (outcome.finished, outcome.final_checkpoint_id, outcome.stopped_savepoint_id) == (True, final, savepoint)
    assert outcome.stopped_with_savepoint is (savepoint is not None)


def test_a_stop_request_waits_until_every_subtask_runs(builder):
    h = builder.build()
    lines: list[str] = []
    loop = driver_loop(h, lines)
    try:
        loop.store.storage.docs[STOP_REQUEST] = {"by": "test"}
        h[0].register()
        loop._poll_requests()  # subtask 1 has not registered: refused, but kept
        loop._poll_requests()
        assert STOP_REQUEST in loop.store.storage.docs and lines == []
        h[1].register()
        loop._poll_requests()
        assert STOP_REQUEST not in loop.store.storage.docs
        savepoint = h.coordinator.stop_with_savepoint()[0]
        assert lines == [f"stop-with-savepoint requested: taking savepoint {savepoint}"]
        assert h.coordinator.in_flight == {savepoint: CheckpointState.PENDING}
        loop.store.storage.docs[STOP_REQUEST] = {"by": "test"}  # asked again meanwhile: no second savepoint
        loop._poll_requests()
        assert len(lines) == 1 and list(h.coordinator.in_flight) == [savepoint]
    finally:
        loop._io.shutdown(wait=True)


def test_a_failed_stop_savepoint_is_reported_and_the_job_keeps_running(builder):
    h = builder.started()
    lines: list[str] = []
    loop = driver_loop(h, lines)
    try:
        loop.store.storage.docs[STOP_REQUEST] = {}
        loop._poll_requests()
        [savepoint] = h.coordinator.in_flight
        loop._execute(h.coordinator.on_decline(Decline(savepoint, 1, 0, "disk full")))
        assert lines[-1] == (
            f"stop-with-savepoint: savepoint {savepoint} failed (declined); "
            "the job keeps running, request the stop again"
        )
        assert h.coordinator.lifecycle is Lifecycle.ACTIVE
        loop._poll_requests()  # the request was consumed: no retry
        assert h.coordinator.in_flight == {}
    finally:
        loop._io.shutdown(wait=True)


class RecordingCommitter:
    def __init__(self):
        self.discarded: list[tuple] = []

    def discard_orphans(self, subtask, up_to_checkpoint_id, keep):
        self.discarded.append((subtask, up_to_checkpoint_id, list(keep)))


def test_a_restarted_subtask_has_its_stale_sink_work_discarded(builder):
    """A subtask registering again (region failover, re-established channel) restarts from
    the last durable checkpoint: the sink releases what it prepared for checkpoints up to
    the newest one triggered so far, keeping what the durable checkpoint names."""
    from airflow_provider_seatunnel_ckpt.engine.messages import Register, encode

    h = builder.build()
    committer = RecordingCommitter()
    loop = DriverLoop(
        h.coordinator,
        Store(),
        committer=committer,
        fence=Unfenced(),
        progress=lambda line: None,
        durable_infos=[{"gid": "restored"}],
    )
    try:
        for subtask in (0, 1):  # the first registration of each subtask: nothing to discard
            loop._handle(("message", f"conn-{subtask}", encode(Register(subtask, 0))))
        h.clock.now = max(h.clock.now, h.coordinator.next_wakeup_ms())
        loop._execute(h.coordinator.on_tick())
        triggered = h.coordinator.next_checkpoint_id - 1
        assert triggered >= 1 and committer.discarded == []
        loop._handle(("message", "conn-2", encode(Register(1, 1))))
        loop._io.submit(lambda: None).result()  # the discard runs on the ordered storage worker
        assert committer.discarded == [(1, triggered, [{"gid": "restored"}])]
    finally:
        loop._io.shutdown(wait=True)


def _local_storage(tmp_path):
    from airflow_provider_seatunnel_ckpt.config import load_config
    from airflow_provider_seatunnel_ckpt.storage import create_storage

    config = load_config(
        {
            "seatunnel": {
                "engine": {
                    "checkpoint": {
                        "storage": {
                            "type": "hdfs",
                            "plugin-config": {
                                "storage.type": "hdfs",
                                "fs.defaultFS": "file:///",
                                "namespace": f"{tmp_path}/checkpoints/",
                            },
                        }
                    }
                }
            }
        }
    )
    return create_storage(config.storage)


def _storage_loop(builder, storage, fence):
    from airflow_provider_seatunnel_ckpt.engine.completed_store import CompletedCheckpointStore

    return DriverLoop(
        builder.build().coordinator,
        CompletedCheckpointStore(storage, "zombie", 1),
        committer=None,
        fence=fence,
        progress=lambda line: None,
    )


def _files(storage, checkpoint_id, savepoint=False):
    return sorted(storage.state_file_sizes("zombie", 1, checkpoint_id, savepoint))


def test_a_taken_over_driver_deletes_nothing_when_it_aborts(builder, tmp_path):
    """The claimant counts on from the highest id reserved, so the old driver, still
    running, aborts ids the claimant completes in the same directory: its shutdown must
    not delete the claimant's state or _metadata."""
    from airflow_provider_seatunnel_ckpt.engine.fencing import FenceLog

    storage = _local_storage(tmp_path)
    old, new = FenceLog(storage, "zombie"), FenceLog(storage, "zombie")
    old.claim("old")
    new.claim("new")
    for fence in (old, new):
        storage.write_state("zombie", 1, 7, f"task-0-0-r{fence.attempt}.state", b"s" * 70_000)
    storage.fence_checkpoint_id("zombie", 1, 7)  # stands for the claimant's _metadata
    before = _files(storage, 7)
    loop = _storage_loop(builder, storage, old)
    loop._delete_aborted(7)
    assert _files(storage, 7) == before == ["_metadata", "task-0-0-r1.state", "task-0-0-r2.state"]


def test_an_aborted_checkpoint_loses_only_this_runs_uploads(builder, tmp_path):
    from airflow_provider_seatunnel_ckpt.engine.fencing import FenceLog

    storage = _local_storage(tmp_path)
    FenceLog(storage, "zombie").claim("crashed")  # run 1 crashed mid-checkpoint 8
    fence = FenceLog(storage, "zombie")
    fence.claim("live")
    storage.write_state("zombie", 1, 8, "task-0-0-r1.state", b"a" * 70_000)
    storage.write_state("zombie", 1, 8, "task-1-0-r2.state", b"b" * 70_000)
    storage.write_state("zombie", 1, 9, "task-0-0-r2.state", b"c" * 70_000)
    loop = _storage_loop(builder, storage, fence)
    loop._delete_aborted(8)
    assert _files(storage, 8) == ["task-0-0-r1.state"]  # run 1's: retention's, not ours
    loop._delete_aborted(9)
    assert [e.checkpoint_id for e in storage.list_checkpoint_entries("zombie", 1)] == [8]


def test_an_aborted_savepoint_has_its_uploads_deleted(builder, tmp_path):
    from airflow_provider_seatunnel_ckpt.engine.fencing import FenceLog

    storage = _local_storage(tmp_path)
    fence = FenceLog(storage, "zombie")
    fence.claim("live")
    storage.write_state("zombie", 1, 5, "task-0-0-r1.state", b"s" * 70_000, savepoint=True)
    loop = _storage_loop(builder, storage, fence)
    loop._delete_aborted(5, savepoint=True)
    assert storage.list_checkpoint_entries("zombie", 1) == []


def test_the_loop_waits_instead_of_spinning_while_nothing_is_due(builder, monkeypatch):
    """A restarted subtask waiting for a persisting checkpoint: no wakeup is due, and the
    loop must block on its queue instead of ticking the coordinator in a busy loop."""
    import time

    from airflow_provider_seatunnel_ckpt.engine import driver as driver_module

    monkeypatch.setattr(driver_module, "REQUEST_POLL_S", 0.05)
    h = builder.started()
    loop = DriverLoop(
        h.coordinator, Store(), committer=None, fence=Unfenced(), progress=lambda line: None, clock=h.clock
    )
    ticks = []
    real_tick = h.coordinator.on_tick
    monkeypatch.setattr(h.coordinator, "on_tick", lambda: ticks.append(1) or real_tick())
    try:
        cid = h.trigger()
        h.ack_all(cid)  # persisting: nothing can expire or be triggered now
        h[0].restart()
        loop._execute(of_type(h.log, ScheduleWakeup))  # the wakeups, in order, as the loop got them
        h.clock.advance(60_000)  # the last time that was due is long past
        ticks.clear()
        deadline = time.monotonic() + 0.3
        while time.monotonic() < deadline:
            loop._step()
    finally:
        loop._io.shutdown(wait=True)
    assert len(ticks) <= 10, f"{len(ticks)} ticks in 0.3 s: the loop spins"


def test_a_message_over_a_replaced_connection_is_ignored(builder):
    """A subtask reconnected and registered again (same attempt): what its old connection
    still delivers belongs to the registration that restarted. An EndOfInput from it
    would trigger the final checkpoint while the restarted subtask reads its splits again."""
    from airflow_provider_seatunnel_ckpt.engine.coordinator import SubtaskStatus
    from airflow_provider_seatunnel_ckpt.engine.messages import EndOfInput, Register, encode

    h = builder.build()
    loop = DriverLoop(
        h.coordinator, Store(), committer=RecordingCommitter(), fence=Unfenced(), progress=lambda line: None
    )
    try:
        loop._handle(("message", "old-0", encode(Register(0, 0))))
        loop._handle(("message", "conn-1", encode(Register(1, 0))))
        loop._handle(("message", "new-0", encode(Register(0, 0))))  # reconnected
        loop._handle(("message", "old-0", encode(EndOfInput(0, 0))))  # late, over the old connection
        assert h.coordinator.subtask_status(0)[0] is SubtaskStatus.RUNNING
        loop._handle(("message", "new-0", encode(EndOfInput(0, 0))))
        assert h.coordinator.subtask_status(0)[0] is SubtaskStatus.END_OF_INPUT
    finally:
        loop._io.shutdown(wait=True)


class TakenOver(Unfenced):
    """A fence log in which another driver claimed the job after this one."""

    def taken_over(self) -> bool:
        return True

    def fenced_error(self) -> Exception:
        return RuntimeError("job job was taken over by another driver (attempt 2)")


def test_a_taken_over_driver_stops_while_a_commit_holds_its_io_thread(builder):
    """Seen in the Kafka contract run: a zombie whose commit hung on the io thread found
    out about the claim only at its next reservation, which waits behind that commit, so
    its barriers and subtask restarts went on opening transactions nobody fenced. The
    claim is watched on the fence thread instead, once a second."""
    import threading

    h = builder.started()
    loop = DriverLoop(h.coordinator, Store(), committer=None, fence=TakenOver(), progress=lambda line: None)
    held = threading.Event()
    loop._io.submit(held.wait)  # a commit that does not return
    try:
        assert not loop._done.is_set()
        loop._watch_claim()
        loop._handle(loop.events.get(timeout=10))
        assert loop._done.is_set()
        assert loop.outcome.error == "job job was taken over by another driver (attempt 2)"
        assert h.coordinator.lifecycle is not Lifecycle.ACTIVE
    finally:
        held.set()
        loop._io.shutdown(wait=True)
        loop._fence_io.shutdown(wait=True)


def test_a_driver_nobody_took_over_keeps_running_when_it_watches_its_claim(builder):
    h = builder.started()
    loop = DriverLoop(h.coordinator, Store(), committer=None, fence=Unfenced(), progress=lambda line: None)
    try:
        loop._watch_claim()
        loop._fence_io.submit(lambda: None).result()  # the watch ran
        assert loop.events.empty() and not loop._done.is_set()
    finally:
        loop._io.shutdown(wait=True)
        loop._fence_io.shutdown(wait=True)
