from __future__ import annotations

import pytest

from airflow_provider_seatunnel_ckpt.engine.id_counter import CheckpointIdCounter


def started(initial: int = 1) -> CheckpointIdCounter:
    counter = CheckpointIdCounter()
    counter.start(initial)
    return counter


def test_hands_out_consecutive_ids_from_the_initial_one():
    counter = started(5)
    assert [counter.get_and_increment() for _ in range(3)] == [5, 6, 7]
    assert counter.get() == 8


def test_use_before_start_is_an_error():
    with pytest.raises(RuntimeError, match="before start"):
        CheckpointIdCounter().get_and_increment()


@pytest.mark.parametrize("bad", [0, -3, True, 2.0, None])
def test_ids_are_positive_integers(bad):
    with pytest.raises(ValueError, match="integer >= 1"):
        CheckpointIdCounter().start(bad)


def test_set_count_moves_forward_only():
    counter = started(10)
    counter.set_count(20)
    assert counter.get_and_increment() == 20
    with pytest.raises(ValueError, match="would be reused"):
        counter.set_count(15)


def test_restart_below_the_current_id_is_refused():
    counter = started(10)
    with pytest.raises(ValueError, match="would reuse ids"):
        counter.start(3)
    counter.start(12)
    assert counter.get() == 12
