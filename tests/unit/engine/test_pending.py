from __future__ import annotations

import pytest

from airflow_provider_seatunnel_ckpt.engine.messages import Ack, CheckpointKind
from airflow_provider_seatunnel_ckpt.engine.pending import (
    TRANSITIONS,
    AckResult,
    CheckpointEvent,
    CheckpointState,
    PendingCheckpoint,
)
from airflow_provider_seatunnel_ckpt.errors import FailureReason, ProtocolError


def pending(num_subtasks: int = 2, kind=CheckpointKind.CHECKPOINT) -> PendingCheckpoint:
    return PendingCheckpoint(pipeline_id=1, checkpoint_id=7, kind=kind, trigger_ms=100, num_subtasks=num_subtasks)


def in_state(state: CheckpointState) -> PendingCheckpoint:
    p = pending(num_subtasks=1)
    if state is CheckpointState.PENDING:
        return p
    if state is CheckpointState.ABORTED:
        p.abort(FailureReason.EXPIRED)
        return p
    p.acknowledge(Ack(7, 0, 0), 150)
    p.start_persisting()
    if state is CheckpointState.COMPLETED:
        p.mark_persisted()
    return p


FIRE = {
    CheckpointEvent.ALL_ACKED: lambda p: p.start_persisting(),
    CheckpointEvent.PERSISTED: lambda p: p.mark_persisted(),
    CheckpointEvent.PERSIST_FAILED: lambda p: p.mark_persist_failed("boom"),
    CheckpointEvent.ABORT: lambda p: p.abort(FailureReason.DECLINED, "no"),
}


def test_every_state_has_a_row_and_terminal_states_have_no_exits():
    assert set(TRANSITIONS) == set(CheckpointState)
    assert TRANSITIONS[CheckpointState.COMPLETED] == {} and TRANSITIONS[CheckpointState.ABORTED] == {}


@pytest.mark.parametrize("state", list(CheckpointState))
@pytest.mark.parametrize("event", list(CheckpointEvent))
def test_transitions_follow_the_table_and_illegal_ones_name_event_state_and_id(state, event):
    p = in_state(state)
    target = TRANSITIONS[state].get(event)
    if event is CheckpointEvent.ALL_ACKED and state is CheckpointState.PENDING:
        p.acknowledge(Ack(7, 0, 0), 150)
    if target is None:
        with pytest.raises(
            ProtocolError, match=rf"checkpoint 7: event '{event.value}' is illegal in state {state.name}"
        ):
            FIRE[event](p)
        assert p.state is state
    else:
        FIRE[event](p)
        assert p.state is target


def test_a_persisting_checkpoint_cannot_be_aborted():
    p = in_state(CheckpointState.PERSISTING)
    with pytest.raises(ProtocolError, match="illegal in state PERSISTING"):
        p.abort(FailureReason.EXPIRED)


def test_persisting_before_every_ack_is_refused():
    p = pending()
    p.acknowledge(Ack(7, 1, 0), 120)
    with pytest.raises(ProtocolError, match=r"subtasks \[0\] have not acknowledged"):
        p.start_persisting()


def test_acknowledge_outcomes():
    p = pending(num_subtasks=2)
    assert p.acknowledge(Ack(7, 0, 0), 110) is AckResult.SUCCESS
    assert p.acknowledge(Ack(7, 0, 0), 111) is AckResult.DUPLICATE
    assert p.acknowledge(Ack(7, 5, 0), 112) is AckResult.UNKNOWN
    assert not p.is_fully_acknowledged
    assert p.not_yet_acknowledged == {1}
    p.abort(FailureReason.EXPIRED, "late")
    assert p.acknowledge(Ack(7, 1, 0), 113) is AckResult.DISCARDED
    assert p.is_discarded and p.failure == (FailureReason.EXPIRED, "late")


def test_an_ack_for_another_checkpoint_is_a_routing_bug():
    with pytest.raises(ProtocolError, match="ack for checkpoint 8 routed to checkpoint 7"):
        pending().acknowledge(Ack(8, 0, 0), 100)


def test_completed_record_uses_the_last_ack_time_and_subtask_order():
    p = pending(num_subtasks=2)
    p.acknowledge(Ack(7, 1, 3), 180)
    p.acknowledge(Ack(7, 0, 2), 140)
    completed = p.start_persisting()
    assert (completed.trigger_ms, completed.acked_ms) == (100, 180)
    assert [(s.subtask, s.attempt) for s in completed.subtasks] == [(0, 2), (1, 3)]
    assert p.mark_persisted() is completed


@pytest.mark.parametrize(
    "kind, subsumable",
    [(CheckpointKind.CHECKPOINT, True), (CheckpointKind.SAVEPOINT, False), (CheckpointKind.FINAL, False)],
)
def test_only_periodic_checkpoints_can_be_subsumed(kind, subsumable):
    assert pending(kind=kind).can_be_subsumed is subsumable
