"""Subsumption, end of input, savepoints, subtask restarts and restore, shutdown."""

from __future__ import annotations

import pytest

from airflow_provider_seatunnel_ckpt.engine.actions import DeleteCheckpointState, JobFinished, SendToSubtask
from airflow_provider_seatunnel_ckpt.engine.coordinator import Lifecycle, SubtaskStatus
from airflow_provider_seatunnel_ckpt.engine.messages import (
    CheckpointKind,
    NotifyComplete,
    RestoreState,
    StateHandle,
    TriggerBarrier,
)
from airflow_provider_seatunnel_ckpt.engine.pending import AckResult, CheckpointState
from airflow_provider_seatunnel_ckpt.errors import CheckpointFailed, FailureReason, ProtocolError

from .harness import commit_info_of, make_completed, messages, of_type, state_of

# --- subsumption ---------------------------------------------------------------------------


def test_a_completed_checkpoint_subsumes_older_pending_ones(builder):
    h = builder.with_(max_concurrent=3).started()
    first, second, third = h.trigger(), h.trigger(), h.trigger()
    h.complete(second)
    assert h.aborted == [(first, FailureReason.SUBSUMED)]
    assert h.coordinator.in_flight == {third: CheckpointState.PENDING}
    assert h[0].ack(first) is AckResult.DISCARDED


def test_savepoints_are_never_subsumed(builder):
    h = builder.with_(max_concurrent=2).started()
    savepoint, actions = h.coordinator.trigger_savepoint()
    h.run(actions)
    periodic = h.trigger()
    h.complete(periodic)
    assert h.aborted == []
    assert h.coordinator.in_flight == {savepoint: CheckpointState.PENDING}


def test_an_older_checkpoint_that_becomes_durable_late_is_not_announced(builder):
    h = builder.with_(max_concurrent=2).started()
    older, newer = h.trigger(), h.trigger()
    h.ack_all(older)
    h.complete(newer)
    h.persisted(older)
    assert h.notified == [newer]
    assert h.coordinator.latest_completed.checkpoint_id == newer


# --- end of input ----------------------------------------------------------------------------


def test_final_checkpoint_is_triggered_when_every_subtask_reached_end_of_input(builder):
    h = builder.with_(min_pause_ms=60_000).started()
    h.complete(h.trigger())  # min-pause now forbids periodic checkpoints for a minute
    assert h[0].end_of_input() == []
    actions = h[1].end_of_input()
    [barrier] = messages(actions, TriggerBarrier)
    assert barrier.kind is CheckpointKind.FINAL
    finish = h.complete(barrier.checkpoint_id)
    assert messages(finish, NotifyComplete) == [NotifyComplete(barrier.checkpoint_id)]
    assert finish[-1] == JobFinished(barrier.checkpoint_id)
    assert h.coordinator.lifecycle is Lifecycle.FINISHED
    assert h.tick(advance=10**6) == []


def test_final_checkpoint_ignores_max_concurrent(builder):
    h = builder.with_(max_concurrent=1).started()
    periodic = h.trigger()
    h[0].end_of_input()
    h[1].end_of_input()
    final = h.triggered[-1]
    assert h.coordinator.in_flight == {periodic: CheckpointState.PENDING, final: CheckpointState.PENDING}
    h.complete(final)
    assert h.aborted == [(periodic, FailureReason.SUBSUMED)]
    assert h.finished == [final]


def test_periodic_checkpoints_continue_while_only_some_inputs_ended(builder):
    h = builder.started()
    h[0].end_of_input()
    cid = h.trigger()
    assert messages(h.log, TriggerBarrier)[-1].kind is CheckpointKind.CHECKPOINT
    assert h[0].received(TriggerBarrier)[-1].checkpoint_id == cid  # a finished subtask still acks


def test_no_periodic_checkpoint_after_the_final_one_was_triggered(builder):
    h = builder.with_(max_concurrent=5).started()
    h[0].end_of_input()
    h[1].end_of_input()
    assert messages(h.tick(advance=50_000), TriggerBarrier) == []
    assert h.triggered == [1]


def test_a_failed_final_checkpoint_is_retried_one_interval_later(builder):
    h = builder.with_(tolerable_failure=3).started()
    h[0].end_of_input()
    h[1].end_of_input()
    first_final = h.triggered[-1]
    h[0].decline(first_final)
    assert messages(h.tick(advance=999), TriggerBarrier) == []
    [retry] = messages(h.tick(advance=1), TriggerBarrier)
    assert retry.kind is CheckpointKind.FINAL and retry.checkpoint_id > first_final
    h.complete(retry.checkpoint_id)
    assert h.finished == [retry.checkpoint_id]


def test_end_of_input_from_a_subtask_still_restoring_is_a_protocol_error(builder):
    h = builder.started()
    cid = h.trigger()
    h.ack_all(cid)  # persisting: the restart below must wait for its outcome
    fresh = h[0].restart()
    with pytest.raises(ProtocolError, match="end_of_input: subtask 0 is restoring"):
        fresh.end_of_input()


# --- savepoints ------------------------------------------------------------------------------


def test_savepoint_ignores_min_pause_and_max_concurrent(builder):
    h = builder.with_(min_pause_ms=60_000, max_concurrent=1).started()
    h.complete(h.trigger())
    h.clock.advance(60_000)
    periodic = h.trigger()
    savepoint, actions = h.coordinator.trigger_savepoint()
    [barrier] = messages(actions, TriggerBarrier)
    assert (barrier.checkpoint_id, barrier.kind) == (savepoint, CheckpointKind.SAVEPOINT)
    assert set(h.coordinator.in_flight) == {periodic, savepoint}


def test_savepoint_needs_every_subtask_running(builder):
    h = builder.build()
    h[0].register()
    with pytest.raises(CheckpointFailed) as err:
        h.coordinator.trigger_savepoint()
    assert err.value.reason is FailureReason.NOT_ALL_SUBTASKS_RUNNING
    assert "subtasks [1]" in str(err.value)


def test_stop_with_savepoint_finishes_the_job_once_durable(builder):
    h = builder.started()
    savepoint, actions = h.coordinator.stop_with_savepoint()
    h.run(actions)
    assert h.coordinator.stop_with_savepoint() == (savepoint, [])  # asking again is idempotent
    assert messages(h.tick(advance=5_000), TriggerBarrier) == []  # periodic paused meanwhile
    h.ack_all(savepoint)
    assert h.finished == []
    assert h.persisted(savepoint)[-1] == JobFinished(savepoint, stopped_with_savepoint=True)
    assert h.coordinator.lifecycle is Lifecycle.FINISHED


def test_a_failed_stop_with_savepoint_resumes_periodic_checkpoints(builder):
    h = builder.started()
    savepoint, actions = h.coordinator.stop_with_savepoint()
    h.run(actions)
    h[1].decline(savepoint)
    assert h.finished == [] and h.coordinator.lifecycle is Lifecycle.ACTIVE
    assert messages(h.tick(advance=1_000), TriggerBarrier)[0].kind is CheckpointKind.CHECKPOINT


# --- registration, restarts and restore --------------------------------------------------------


def test_fresh_run_subtasks_start_from_scratch(builder):
    h = builder.started()
    assert [s.restore for s in h.subtasks] == [RestoreState(None)] * 2


def test_restore_state_is_routed_to_the_right_subtask(builder):
    restored = make_completed(5, num_subtasks=3)
    h = builder.with_(num_subtasks=3, restored=restored).build()
    h[2].register()
    h[0].register()
    h[1].register()
    sends = of_type(h.log, SendToSubtask)
    assert [(a.subtask, a.attempt) for a in sends] == [(2, 0), (0, 0), (1, 0)]
    for subtask in h.subtasks:
        i = subtask.index
        assert subtask.restore == RestoreState(5, (StateHandle.of_bytes(state_of(i, 5)),), commit_info_of(i, 5))


def test_reregistration_aborts_pending_checkpoints_without_counting(builder):
    h = builder.with_(tolerable_failure=0, max_concurrent=2).started()
    first, second = h.trigger(), h.trigger()
    h[0].ack(first)
    fresh = h[1].restart()
    assert h.aborted == [(first, FailureReason.TASK_FAILURE), (second, FailureReason.TASK_FAILURE)]
    assert h.job_failures == []
    assert fresh.restore == RestoreState(None)
    assert h.coordinator.subtask_status(1) == (SubtaskStatus.RUNNING, 1)


def test_restarted_subtask_restores_from_the_latest_completed_checkpoint(builder):
    h = builder.started()
    cid = h.trigger()
    h.complete(cid)
    fresh = h[1].restart()
    assert fresh.restore.checkpoint_id == cid
    assert fresh.restore.sink_commit_info == commit_info_of(1, cid)


def test_restore_waits_for_a_persisting_checkpoint_and_uses_it_if_it_lands(builder):
    h = builder.started()
    cid = h.trigger()
    h.ack_all(cid)
    fresh = h[0].restart()
    assert fresh.restore is None
    assert h.coordinator.subtask_status(0) == (SubtaskStatus.RESTORING, 1)
    assert messages(h.tick(advance=10_000), TriggerBarrier) == []  # not all running
    h.persisted(cid)
    assert fresh.restore.checkpoint_id == cid
    assert fresh.received(NotifyComplete) == []  # it commits from RestoreState instead
    assert h.coordinator.subtask_status(0) == (SubtaskStatus.RUNNING, 1)


def test_restore_waits_for_a_persisting_checkpoint_and_skips_it_if_it_fails(builder):
    h = builder.with_(tolerable_failure=1).started()
    earlier = h.trigger()
    h.complete(earlier)
    cid = h.trigger()
    h.ack_all(cid)
    fresh = h[0].restart()
    h.persist_failed(cid)
    assert fresh.restore.checkpoint_id == earlier


def test_messages_from_an_older_attempt_are_stale(builder):
    h = builder.started()
    zombie = h[0]
    zombie.restart()
    cid = h.trigger()
    assert zombie.register() == []
    assert zombie.decline(cid) == []
    assert zombie.end_of_input() == []
    assert zombie.fail() == []
    assert h.coordinator.subtask_status(0) == (SubtaskStatus.RUNNING, 1)
    assert h.coordinator.in_flight == {cid: CheckpointState.PENDING}


def test_task_failure_aborts_pending_and_pauses_checkpoints_until_the_next_attempt(builder):
    h = builder.started()
    cid = h.trigger()
    h[1].fail("OOM")
    assert h.aborted == [(cid, FailureReason.TASK_FAILURE)]
    assert h.coordinator.subtask_status(1) == (SubtaskStatus.FAILED, 0)
    assert messages(h.tick(advance=10_000), TriggerBarrier) == []
    h[1].restart()
    assert messages(h.tick(), TriggerBarrier) != []


def test_register_out_of_range_is_a_protocol_error(builder):
    h = builder.build()
    with pytest.raises(ProtocolError, match=r"register: subtask 2 out of range 0..1 \(coordinator: pipeline 1"):
        h.coordinator.on_register(2, 0)


# --- shutdown ----------------------------------------------------------------------------------


def test_shutdown_aborts_pending_but_lets_a_persisting_checkpoint_finish(builder):
    h = builder.with_(max_concurrent=2, tolerable_failure=0).started()
    persisting, pending = h.trigger(), h.trigger()
    h.ack_all(persisting)
    h.run(h.coordinator.shutdown())
    assert h.aborted == [(pending, FailureReason.COORDINATOR_SHUTDOWN)]
    assert h.coordinator.lifecycle is Lifecycle.SHUT_DOWN
    assert h.tick(advance=100_000) == []
    h.persisted(persisting)
    assert h.notified == [persisting]  # durable, so committing is still right
    assert h.job_failures == [] and h.finished == []
    with pytest.raises(CheckpointFailed, match="job is shut down"):
        h.coordinator.trigger_savepoint()


def test_a_failed_subtask_that_never_comes_back_fails_the_job(builder):
    """Nothing is triggered while a subtask is not running, so nothing would ever expire:
    a task that neither runs nor ends (a worker frozen with its channel gone) would hang
    the job for ever. The failover timeout bounds the wait."""
    h = builder.with_(failover_timeout_ms=5_000).started()
    cid = h.trigger()
    failed_at = h.clock.now
    h[1].fail("control connection lost")
    assert h.coordinator.next_wakeup_ms() == failed_at + 5_000
    h.tick(advance=4_999)
    assert h.job_failures == [] and h.coordinator.lifecycle is Lifecycle.ACTIVE
    h.tick(advance=1)
    [failure] = h.job_failures
    assert failure.startswith("subtask 1 did not restart within 5 s after it failed")
    assert "control connection lost" in failure and "rerun the job" in failure
    assert h.coordinator.lifecycle is Lifecycle.FAILED
    assert h.aborted == [(cid, FailureReason.TASK_FAILURE)]


def test_a_fatal_failure_fails_the_job_at_once_with_its_own_message(builder):
    """A broken rule of the job (errors.DataError: an Assert rule) would break again on
    every retry: the job fails at once with the subtask's one line, no failover wait."""
    h = builder.with_(failover_timeout_ms=5_000).started()
    cid = h.trigger()
    h[0].fail("sink[0].rules.row_rules[0]: 3 rows break MIN_ROW 4", fatal=True)
    assert h.job_failures == ["sink[0].rules.row_rules[0]: 3 rows break MIN_ROW 4"]
    assert h.coordinator.lifecycle is Lifecycle.FAILED
    assert h.aborted == [(cid, FailureReason.TASK_FAILURE)]


def test_a_subtask_that_restarts_in_time_is_not_held_against_the_job(builder):
    h = builder.with_(failover_timeout_ms=5_000).started()
    h.trigger()
    h[0].fail()
    h.clock.advance(4_000)
    h[0].restart()
    h.tick(advance=10_000)
    assert h.job_failures == [] and h.coordinator.lifecycle is Lifecycle.ACTIVE
    h[0].fail()  # a second failure starts its own clock
    h.tick(advance=4_999)
    assert h.job_failures == []


def test_no_time_due_is_said_so_the_adapter_does_not_spin(builder):
    """While a restarted subtask waits for a persisting checkpoint nothing is due: the
    coordinator replaces its earlier wakeup (now in the past) with None."""
    h = builder.started()
    cid = h.trigger()
    h.ack_all(cid)  # persisting now
    h[0].restart()  # waits for the write's outcome before it gets its restore state
    assert h.coordinator.next_wakeup_ms() is None
    assert h.wakeups[-1] is None


def test_an_aborted_savepoint_has_its_uploads_deleted_as_a_savepoint(builder):
    h = builder.started()
    savepoint, actions = h.coordinator.trigger_savepoint()
    h.run(actions)
    h[0].decline(savepoint, "disk full")
    [delete] = of_type(h.log, DeleteCheckpointState)
    assert (delete.checkpoint_id, delete.savepoint) == (savepoint, True)
    periodic = h.trigger()
    h[1].decline(periodic)
    assert of_type(h.log, DeleteCheckpointState)[-1].savepoint is False
