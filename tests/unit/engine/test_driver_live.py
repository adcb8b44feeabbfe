"""What the driver tells the person on call (the checkpoint view, through the heartbeat):
the checkpoint in flight with its ACKs, the failures counted against tolerable-failure,
and a savepoint taken on request without stopping the job."""

from __future__ import annotations

from airflow_provider_seatunnel_ckpt.engine.coordinator import Lifecycle
from airflow_provider_seatunnel_ckpt.engine.driver import SAVEPOINT_REQUEST, STOP_REQUEST
from airflow_provider_seatunnel_ckpt.engine.heartbeat import Beat, HeartbeatWriter

from .harness import Store, driver_loop


def test_the_heartbeat_carries_the_checkpoint_in_flight_with_its_acks(builder):
    h = builder.started()
    loop = driver_loop(h, [])
    try:
        checkpoint = h.trigger()
        loop._triggered[checkpoint] = (1_700_000_000_000, "checkpoint")
        h[1].ack(checkpoint)
        loop.live = loop._live()
        writer = HeartbeatWriter(Store().storage, "job", 1, status=lambda: {"last_checkpoint_id": None, **loop.live})
        beat = Beat.from_document(writer.record())
    finally:
        loop._io.shutdown(wait=True)
    assert beat is not None
    assert list(beat.in_flight) == [
        {
            "id": checkpoint,
            "kind": "checkpoint",
            "state": "pending",
            "trigger_ms": 1_700_000_000_000,
            "acknowledged": 1,
            "subtasks": 2,
        }
    ]
    assert (beat.consecutive_failures, beat.tolerable_failures) == (0, h.coordinator.tolerable_failures)


def test_a_heartbeat_of_an_older_driver_has_no_checkpoint_in_flight():
    beat = Beat.from_document({"attempt": 1, "sequence": 3, "state": "running"})
    assert beat is not None and beat.in_flight == () and beat.consecutive_failures is None


def test_a_savepoint_request_takes_a_savepoint_and_the_job_keeps_running(builder):
    h = builder.build()
    lines: list[str] = []
    loop = driver_loop(h, lines)
    try:
        loop.store.storage.docs[SAVEPOINT_REQUEST] = {"by": "test"}
        h[0].register()
        loop._poll_requests()  # subtask 1 is not running yet: the request waits
        assert SAVEPOINT_REQUEST in loop.store.storage.docs and lines == []
        h[1].register()
        loop._poll_requests()
        assert SAVEPOINT_REQUEST not in loop.store.storage.docs
        [savepoint] = h.coordinator.in_flight
        assert lines == [f"savepoint requested: taking savepoint {savepoint}"]
        assert [c["kind"] for c in loop._live()["in_flight"]] == ["savepoint"]
        h.complete(savepoint)
        assert h.coordinator.lifecycle is Lifecycle.ACTIVE and h.finished == []
    finally:
        loop._io.shutdown(wait=True)


def test_a_savepoint_request_waits_while_a_stop_with_savepoint_is_taken(builder):
    h = builder.started()
    loop = driver_loop(h, [])
    try:
        loop.store.storage.docs[STOP_REQUEST] = {}
        loop._poll_requests()
        loop.store.storage.docs[SAVEPOINT_REQUEST] = {}
        loop._poll_requests()
        assert len(h.coordinator.in_flight) == 1 and SAVEPOINT_REQUEST in loop.store.storage.docs
    finally:
        loop._io.shutdown(wait=True)
