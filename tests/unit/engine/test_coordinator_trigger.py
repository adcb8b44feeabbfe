"""When checkpoints are triggered: interval, min-pause, max-concurrent, timeout, ids."""

from __future__ import annotations

import pytest

from airflow_provider_seatunnel_ckpt.engine.actions import Broadcast, ScheduleWakeup
from airflow_provider_seatunnel_ckpt.engine.coordinator import CoordinatorSettings
from airflow_provider_seatunnel_ckpt.engine.messages import AbortCheckpoint, CheckpointKind, TriggerBarrier
from airflow_provider_seatunnel_ckpt.engine.pending import CheckpointState
from airflow_provider_seatunnel_ckpt.errors import FailureReason

from .harness import CoordinatorBuilder, make_completed, messages, of_type


def test_no_checkpoint_until_every_subtask_registered(builder):
    h = builder.build()
    h[0].register()
    assert h.tick(advance=5_000) == []
    h[1].register()
    assert h.wakeups == [1_000]  # one interval after the coordinator started
    assert messages(h.tick(), TriggerBarrier) != []


def test_periodic_trigger_fires_when_interval_elapsed(builder):
    h = builder.started()
    assert messages(h.tick(advance=999), TriggerBarrier) == []
    actions = h.tick(advance=1)
    [broadcast] = of_type(actions, Broadcast)
    assert broadcast.message == TriggerBarrier(1, CheckpointKind.CHECKPOINT, 1_000)
    assert broadcast.targets == ((0, 0), (1, 0))
    assert [s.received(TriggerBarrier) for s in h.subtasks] == [[broadcast.message]] * 2


def test_interval_is_measured_from_the_last_trigger(builder):
    h = builder.started()
    first = h.trigger()
    h.clock.advance(900)
    h.complete(first)
    assert messages(h.tick(advance=99), TriggerBarrier) == []
    [barrier] = messages(h.tick(advance=1), TriggerBarrier)
    assert (barrier.checkpoint_id, barrier.timestamp_ms) == (2, 2_000)


def test_min_pause_delays_the_next_trigger_after_a_completion(builder):
    h = builder.with_(min_pause_ms=800).started()
    first = h.trigger()  # at 1000
    h.clock.now = 1_500
    h.complete(first)
    assert h.coordinator.next_wakeup_ms() == 2_300  # max(1000 + 1000, 1500 + 800)
    assert messages(h.tick(advance=500), TriggerBarrier) == []  # 2000: interval passed, pause not
    assert messages(h.tick(advance=299), TriggerBarrier) == []
    [barrier] = messages(h.tick(advance=1), TriggerBarrier)
    assert barrier.timestamp_ms == 2_300


def test_max_concurrent_blocks_triggers_until_a_slot_frees(builder):
    h = builder.with_(max_concurrent=2).started()
    assert [h.trigger(), h.trigger()] == [1, 2]
    assert messages(h.tick(advance=5_000), TriggerBarrier) == []
    assert h.coordinator.next_wakeup_ms() == 11_000  # only checkpoint 1's timeout is left
    h.complete(1)
    assert messages(h.tick(), TriggerBarrier)[0].checkpoint_id == 3


def test_a_persisting_checkpoint_still_occupies_a_slot(builder):
    h = builder.started()
    first = h.trigger()
    h.ack_all(first)
    assert h.coordinator.in_flight == {first: CheckpointState.PERSISTING}
    assert messages(h.tick(advance=50_000), TriggerBarrier) == []


def test_timeout_expires_a_pending_checkpoint_as_expired(builder):
    h = builder.with_(timeout_ms=5_000, tolerable_failure=5).started()
    cid = h.trigger()  # at 1000
    h[0].ack(cid)
    assert h.tick(advance=4_999) == []
    actions = h.tick(advance=1)
    assert h.aborted == [(cid, FailureReason.EXPIRED)]
    assert messages(actions, AbortCheckpoint) == [AbortCheckpoint(cid, "EXPIRED")]
    assert cid not in h.coordinator.in_flight
    assert h.coordinator.consecutive_failures == 1


def test_a_persisting_checkpoint_never_expires(builder):
    """Its _metadata write may still land; only the write's outcome may end it."""
    h = builder.with_(timeout_ms=5_000).started()
    cid = h.trigger()
    h.ack_all(cid)
    h.tick(advance=60_000)
    assert h.aborted == []
    h.persisted(cid)
    assert h.notified == [cid]


def test_ids_start_at_one_and_never_repeat_after_aborts(builder):
    h = builder.with_(timeout_ms=100, tolerable_failure=100).started()
    first = h.trigger()
    h.expire(first)
    second = h.trigger()
    h[0].decline(second)
    third = h.trigger()
    h.complete(third)
    assert h.triggered == [1, 2, 3]
    assert h.coordinator.next_checkpoint_id == 4


def test_ids_resume_above_the_restored_checkpoint(builder):
    h = builder.with_(restored=make_completed(7)).started()
    assert h.trigger() == 8


def test_ids_resume_above_aborted_leftovers_found_in_storage(builder):
    h = builder.with_(restored=make_completed(7), next_checkpoint_id=12).started()
    assert h.trigger() == 12


def test_next_checkpoint_id_at_or_below_the_restored_one_is_refused(builder):
    with pytest.raises(ValueError, match="would reuse ids"):
        builder.with_(restored=make_completed(7), next_checkpoint_id=7).build()


def test_wakeups_track_the_nearest_deadline(builder):
    h = builder.with_(interval_ms=1_000, timeout_ms=300, max_concurrent=2, tolerable_failure=9).started()
    assert h.wakeups == [1_000]
    h.trigger()
    assert h.wakeups[-1] == 1_300  # the timeout comes before the next interval
    h.tick(advance=300)  # expires
    assert h.wakeups[-1] == 2_000
    assert of_type(h.tick(), ScheduleWakeup) == []  # unchanged deadlines are not repeated


@pytest.mark.parametrize(
    "field, value",
    [
        ("interval_ms", 0),
        ("timeout_ms", 0),
        ("min_pause_ms", -1),
        ("max_concurrent", 0),
        ("tolerable_failure", -1),
        ("interval_ms", True),
        ("timeout_ms", 1.5),
    ],
)
def test_settings_reject_values_that_would_break_the_schedule(field, value):
    kwargs = dict(interval_ms=1, timeout_ms=1)
    kwargs[field] = value
    with pytest.raises(ValueError, match=field):
        CoordinatorSettings(**kwargs)


def test_a_restored_checkpoint_of_another_parallelism_is_refused():
    with pytest.raises(ValueError, match="changing parallelism"):
        CoordinatorBuilder(num_subtasks=3, restored=make_completed(4, num_subtasks=2)).build()
