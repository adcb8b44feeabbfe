"""tolerable-failure as the coordinator applies it: consecutive, counted reasons only."""

from __future__ import annotations

from airflow_provider_seatunnel_ckpt.engine.coordinator import Lifecycle
from airflow_provider_seatunnel_ckpt.engine.messages import TriggerBarrier
from airflow_provider_seatunnel_ckpt.errors import FailureReason

from .harness import messages


def _fail_one(h, how: str) -> int:
    cid = h.trigger()
    if how == "expire":
        h.expire(cid)
    elif how == "decline":
        h[0].decline(cid)
    else:
        h.ack_all(cid)
        h.persist_failed(cid)
    return cid


def test_job_fails_exactly_at_the_third_consecutive_counted_failure(builder):
    h = builder.with_(tolerable_failure=2, timeout_ms=500).started()
    _fail_one(h, "expire")
    _fail_one(h, "decline")
    assert h.job_failures == []
    assert h.coordinator.lifecycle is Lifecycle.ACTIVE
    third = _fail_one(h, "persist")
    [message] = h.job_failures
    assert "3 consecutive checkpoints failed" in message
    assert "tolerable-failure=2" in message
    assert f"checkpoint {third}: writing the checkpoint to storage failed" in message
    assert h.coordinator.lifecycle is Lifecycle.FAILED


def test_fail_job_is_the_last_action_and_is_emitted_once(builder):
    h = builder.with_(tolerable_failure=0, timeout_ms=1_500, max_concurrent=2).started()
    first = h.trigger()
    second = h.trigger()
    actions = h.expire(first)
    assert type(actions[-1]).__name__ == "FailJob"
    # The other pending checkpoint is cleaned up, and does not count (nor fail twice).
    assert (second, FailureReason.COORDINATOR_SHUTDOWN) in h.aborted
    assert len(h.job_failures) == 1
    assert h.tick(advance=100_000) == []
    assert h.coordinator.next_wakeup_ms() is None


def test_a_completed_checkpoint_in_between_resets_the_count(builder):
    h = builder.with_(tolerable_failure=2, timeout_ms=500).started()
    _fail_one(h, "expire")
    _fail_one(h, "expire")
    h.complete(h.trigger())
    assert h.coordinator.consecutive_failures == 0
    _fail_one(h, "expire")
    _fail_one(h, "decline")
    assert h.job_failures == []
    _fail_one(h, "expire")
    assert len(h.job_failures) == 1


def test_task_failures_never_count(builder):
    h = builder.with_(tolerable_failure=0).started()
    for _ in range(5):
        h.trigger()
        h[1].restart()  # aborts the pending checkpoint with TASK_FAILURE
    h.trigger()
    h[0].fail()
    assert [r for _, r in h.aborted] == [FailureReason.TASK_FAILURE] * 6
    assert h.job_failures == []
    assert h.coordinator.consecutive_failures == 0


def test_subsumed_and_shutdown_aborts_never_count(builder):
    h = builder.with_(tolerable_failure=0, max_concurrent=2).started()
    older = h.trigger()
    newer = h.trigger()
    h.complete(newer)
    pending = h.trigger()
    h.run(h.coordinator.shutdown())
    assert h.aborted == [(older, FailureReason.SUBSUMED), (pending, FailureReason.COORDINATOR_SHUTDOWN)]
    assert h.job_failures == []


def test_savepoint_failures_do_not_count(builder):
    h = builder.with_(tolerable_failure=0).started()
    cid, actions = h.coordinator.trigger_savepoint()
    h.run(actions)
    h[0].decline(cid)
    assert h.aborted == [(cid, FailureReason.DECLINED)]
    assert h.job_failures == []


def test_failure_of_a_checkpoint_older_than_the_latest_completed_does_not_count(builder):
    h = builder.with_(tolerable_failure=0, max_concurrent=2).started()
    older = h.trigger()
    newer = h.trigger()
    h.ack_all(older)  # older is now persisting, so subsumption leaves it alone
    h.complete(newer)
    h.persist_failed(older)
    assert h.aborted == [(older, FailureReason.IO_ERROR)]
    assert h.job_failures == []


def test_periodic_checkpoints_stop_after_the_job_failed(builder):
    h = builder.with_(tolerable_failure=0, timeout_ms=500).started()
    _fail_one(h, "expire")
    h.tick(advance=10_000)
    assert messages(h.log, TriggerBarrier)[-1].checkpoint_id == 1
