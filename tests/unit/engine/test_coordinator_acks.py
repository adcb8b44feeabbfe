"""ACK bookkeeping, declines and the persist-then-notify order."""

from __future__ import annotations

import pytest

from airflow_provider_seatunnel_ckpt.engine.actions import PersistCheckpoint
from airflow_provider_seatunnel_ckpt.engine.messages import (
    AbortCheckpoint,
    Ack,
    AckStats,
    CheckpointKind,
    NotifyComplete,
    StateHandle,
    TriggerBarrier,
)
from airflow_provider_seatunnel_ckpt.engine.pending import AckResult, CheckpointState
from airflow_provider_seatunnel_ckpt.errors import FailureReason, ProtocolError

from .harness import commit_info_of, messages, of_type, state_of


def messages_as_actions(actions):
    return [a for a in actions if isinstance(getattr(a, "message", None), NotifyComplete)]


def test_acks_are_collected_until_every_subtask_answered(builder):
    h = builder.with_(num_subtasks=3).started()
    cid = h.trigger()
    assert h[0].ack(cid) is AckResult.SUCCESS
    assert h[2].ack(cid) is AckResult.SUCCESS
    assert h.persist_requests == []
    assert h[1].ack(cid) is AckResult.SUCCESS
    assert [c.checkpoint_id for c in h.persist_requests] == [cid]


def test_persist_request_describes_the_whole_checkpoint(builder):
    h = builder.started()
    cid = h.trigger()  # at 1000
    h.clock.advance(30)
    h[1].ack(cid)
    h.clock.advance(20)
    h[0].ack(cid)
    [completed] = h.persist_requests
    assert (completed.pipeline_id, completed.checkpoint_id, completed.kind) == (1, cid, CheckpointKind.CHECKPOINT)
    assert (completed.trigger_ms, completed.acked_ms) == (1_000, 1_050)
    for i, snapshot in enumerate(completed.subtasks):
        assert snapshot.subtask == i and snapshot.attempt == 0
        assert snapshot.state_handles == (StateHandle.of_bytes(state_of(i, cid)),)
        assert snapshot.sink_commit_info == commit_info_of(i, cid)
        assert snapshot.stats.rows_since_last == 10
    assert completed.state_bytes == sum(len(state_of(i, cid)) for i in range(2))


def test_nothing_is_notified_before_the_adapter_reports_the_write_durable(builder):
    h = builder.started()
    cid = h.trigger()
    h.ack_all(cid)
    assert h.notified == []
    assert h.coordinator.latest_completed is None
    assert h.coordinator.in_flight == {cid: CheckpointState.PERSISTING}
    actions = h.persisted(cid)
    assert messages(actions, NotifyComplete) == [NotifyComplete(cid)]
    assert all(s.received(NotifyComplete) == [NotifyComplete(cid)] for s in h.subtasks)
    assert h.coordinator.latest_completed.checkpoint_id == cid
    kinds = [type(a) for a in h.log]
    first_notify = next(i for i, a in enumerate(h.log) if a in messages_as_actions(actions))
    assert kinds.index(PersistCheckpoint) < first_notify


def test_duplicate_ack_is_reported_and_changes_nothing(builder):
    h = builder.started()
    cid = h.trigger()
    assert h[0].ack(cid) is AckResult.SUCCESS
    assert h[0].ack(cid, data=b"different") is AckResult.DUPLICATE
    h[1].ack(cid)
    assert h[1].ack(cid) is AckResult.DUPLICATE  # while persisting
    [completed] = h.persist_requests
    assert completed.subtasks[0].state_handles == (StateHandle.of_bytes(state_of(0, cid)),)


def test_ack_for_an_id_never_triggered_is_unknown(builder):
    h = builder.started()
    h.trigger()
    assert h[0].ack(99) is AckResult.UNKNOWN


def test_late_ack_after_expiry_is_discarded(builder):
    h = builder.with_(timeout_ms=500, tolerable_failure=5).started()
    cid = h.trigger()
    h[0].ack(cid)
    h.expire(cid)
    assert h[1].ack(cid) is AckResult.DISCARDED
    assert h.persist_requests == []


def test_late_ack_after_completion_is_discarded(builder):
    h = builder.started()
    cid = h.trigger()
    h.complete(cid)
    assert h[0].ack(cid) is AckResult.DISCARDED


def test_only_a_bounded_number_of_finished_ids_is_remembered(builder):
    h = builder.with_(recent_ids_kept=2).started()
    for _ in range(3):
        h.complete(h.trigger())
    assert h.triggered == [1, 2, 3]
    # 1 fell out of the window, so an ACK for it can no longer be told from garbage.
    assert h[0].ack(1) is AckResult.UNKNOWN
    assert h[0].ack(3) is AckResult.DISCARDED


def test_ack_from_a_superseded_attempt_is_ignored(builder):
    h = builder.started()
    zombie = h[0]
    fresh = zombie.restart()
    cid = h.trigger()
    assert zombie.received(TriggerBarrier) == []  # the zombie is not even sent the barrier
    assert zombie.ack(cid) is AckResult.DISCARDED
    assert h.coordinator.in_flight == {cid: CheckpointState.PENDING}
    h[1].ack(cid)
    assert h.persist_requests == []
    assert fresh.ack(cid) is AckResult.SUCCESS
    assert h.persist_requests[0].subtasks[0].attempt == fresh.attempt


def test_ack_from_an_attempt_that_never_registered_is_a_protocol_error(builder):
    h = builder.started()
    cid = h.trigger()
    with pytest.raises(ProtocolError, match=r"ack for checkpoint 1: subtask 0 attempt 5 never registered"):
        h.coordinator.on_ack(Ack(cid, 0, 5))


def test_ack_from_a_subtask_out_of_range_names_message_checkpoint_and_state(builder):
    h = builder.started()
    cid = h.trigger()
    with pytest.raises(ProtocolError) as err:
        h.coordinator.on_ack(Ack(cid, 7, 0))
    text = str(err.value)
    assert "ack for checkpoint 1" in text
    assert "subtask 7 out of range 0..1" in text
    assert "pipeline 1 active" in text and "<checkpoint 1 pending>" in text


def test_decline_aborts_counts_and_tells_every_subtask(builder):
    h = builder.with_(tolerable_failure=3).started()
    cid = h.trigger()
    h[0].ack(cid)
    actions = h[1].decline(cid, reason="disk full")
    assert messages(actions, AbortCheckpoint) == [AbortCheckpoint(cid, "DECLINED")]
    assert all(s.received(AbortCheckpoint) == [AbortCheckpoint(cid, "DECLINED")] for s in h.subtasks)
    assert h.aborted == [(cid, FailureReason.DECLINED)]
    assert h.coordinator.consecutive_failures == 1
    assert h[1].ack(cid) is AckResult.DISCARDED


def test_decline_for_a_finished_or_persisting_checkpoint_is_ignored(builder):
    h = builder.started()
    first = h.trigger()
    h.complete(first)
    assert h[0].decline(first) == []
    second = h.trigger()
    h.ack_all(second)
    assert h[0].decline(second) == []
    assert h.coordinator.in_flight == {second: CheckpointState.PERSISTING}


def test_persist_failure_aborts_as_io_error_and_counts(builder):
    h = builder.with_(tolerable_failure=1).started()
    cid = h.trigger()
    h.ack_all(cid)
    h.persist_failed(cid)
    assert h.aborted == [(cid, FailureReason.IO_ERROR)]
    assert h.notified == []
    assert h.coordinator.consecutive_failures == 1
    assert h.job_failures == []
    assert h.coordinator.latest_completed is None


@pytest.mark.parametrize("when", ["unknown", "pending", "twice"])
def test_persisted_for_a_checkpoint_not_being_persisted_is_a_protocol_error(builder, when):
    h = builder.started()
    cid = h.trigger()
    if when == "unknown":
        cid = 42
        expected = "persisted for checkpoint 42: no such checkpoint in flight"
    elif when == "pending":
        h[0].ack(cid)
        expected = "checkpoint 1: event 'metadata persisted' is illegal in state PENDING"
    else:
        h.complete(cid)
        expected = "persisted for checkpoint 1: no such checkpoint in flight"
    with pytest.raises(ProtocolError, match=expected):
        h.coordinator.on_persisted(cid)


def test_ack_stats_default_to_zero_for_minimal_acks(builder):
    h = builder.with_(num_subtasks=1).started()
    cid = h.trigger()
    result, actions = h.coordinator.on_ack(Ack(cid, 0, 0))
    assert result is AckResult.SUCCESS
    [persist] = of_type(actions, PersistCheckpoint)
    assert persist.checkpoint.subtasks[0].stats == AckStats()
