"""The driver's split enumerator (engine/split_enumerator.py): splits dealt on request,
the pool each barrier covers, and what a restarted subtask gives back."""

from __future__ import annotations

from types import SimpleNamespace

from airflow_provider_seatunnel_ckpt.engine.messages import AssignSplits
from airflow_provider_seatunnel_ckpt.engine.split_enumerator import (
    UNASSIGNED_KEY,
    SplitEnumerator,
    enumerator_for,
)
from airflow_provider_seatunnel_ckpt.engine.split_plan import REF_KEY


def _started(parallelism: int, splits: int, *, live: bool = False) -> SplitEnumerator:
    enumerator = SplitEnumerator(parallelism, range(splits), live=live)
    for subtask in range(parallelism):
        assert enumerator.restored(subtask, 0, None) == []
    return enumerator


def _dealt(sends: list) -> list[int]:
    return [index for _, _, message in sends for index in message.indices]


def test_splits_are_dealt_lowest_first_one_a_request_then_no_more() -> None:
    enumerator = _started(2, 3)
    assert enumerator.request(1, 0) == [(1, 0, AssignSplits((0,)))]
    assert enumerator.request(0, 0) == [(0, 0, AssignSplits((1,)))]
    assert enumerator.request(0, 0) == [(0, 0, AssignSplits((2,)))]
    assert enumerator.request(1, 0) == [(1, 0, AssignSplits((), no_more=True))]
    assert enumerator.unassigned == 0


def test_a_live_source_keeps_a_request_until_a_split_is_discovered() -> None:
    enumerator = _started(2, 1, live=True)
    assert _dealt(enumerator.request(0, 0)) == [0]
    assert enumerator.request(1, 0) == []  # waits: the input of a live source never ends
    assert enumerator.add([1, 2]) == [(1, 0, AssignSplits((1,)))]
    assert _dealt(enumerator.request(0, 0)) == [2]


def test_each_barrier_takes_the_pool_it_covers() -> None:
    enumerator = _started(2, 10)
    enumerator.request(0, 0)
    enumerator.request(1, 0)
    enumerator.barrier(1, [(0, 0), (1, 0)])
    assert enumerator.unassigned_at(1) == [[2, 1, 8]]
    enumerator.request(0, 0)
    enumerator.barrier(2, [(0, 0), (1, 0)])
    assert enumerator.unassigned_at(2) == [[3, 1, 7]]
    enumerator.completed(2)
    assert enumerator.unassigned_at(1) is None and enumerator.unassigned_at(2) is None


def test_a_restarted_subtask_gives_back_what_was_dealt_after_its_checkpoint() -> None:
    enumerator = _started(2, 10)
    assert _dealt(enumerator.request(0, 0)) == [0]  # before barrier 1: in checkpoint 1's state
    enumerator.barrier(1, [(0, 0), (1, 0)])
    assert _dealt(enumerator.request(0, 0)) == [1]  # after it: not in that state
    enumerator.barrier(2, [(0, 0), (1, 0)])
    assert _dealt(enumerator.request(0, 0)) == [2]
    enumerator.completed(1)
    enumerator.registered(0)
    assert enumerator.request(0, 0) == []  # the attempt it replaces is not answered
    assert enumerator.restored(0, 1, 1) == []
    # 1 and 2 are back, lowest first; 0 is in checkpoint 1's state and stays dealt
    assert _dealt(enumerator.request(1, 0)) == [1]
    assert _dealt(enumerator.request(0, 1)) == [2]
    assert _dealt(enumerator.request(0, 1)) == [3]


def test_a_restart_without_a_checkpoint_gives_back_everything_dealt() -> None:
    enumerator = _started(2, 4)
    enumerator.request(0, 0)
    enumerator.request(0, 0)
    enumerator.restored(0, 1, None)
    assert enumerator.unassigned == 4
    enumerator.barrier(1, [(0, 1), (1, 0)])
    assert enumerator.unassigned_at(1) == [[0, 1, 4]]


def test_a_restore_deals_its_checkpoints_pool_and_the_splits_discovered_since() -> None:
    manifest = SimpleNamespace(
        checkpoint_id=5, properties={UNASSIGNED_KEY: [[1, 2, 2], [6, 1, 2]], REF_KEY: {"count": 8}}
    )
    source = SimpleNamespace(reads_splits_together=False, discovery_interval_s=None)
    enumerator = enumerator_for(source, manifest, 10, 2)
    assert enumerator is not None
    enumerator.restored(0, 0, 5)
    enumerator.restored(1, 0, 5)
    assert [_dealt(enumerator.request(0, 0))[0] for _ in range(6)] == [1, 3, 6, 7, 8, 9]
    assert enumerator.request(0, 0) == [(0, 0, AssignSplits((), no_more=True))]
    # dealt before this run's first barrier: in no checkpoint, so a restart from 5 gives it back
    enumerator.registered(0)
    enumerator.restored(0, 1, 5)
    assert enumerator.unassigned == 6


def test_nothing_is_dealt_until_every_subtask_was_restored_once() -> None:
    enumerator = SplitEnumerator(2, range(4))
    enumerator.restored(1, 0, None)
    assert enumerator.request(1, 0) == []  # subtask 0's worker has not started yet
    assert enumerator.restored(0, 0, None) == [(1, 0, AssignSplits((0,)))]
    assert _dealt(enumerator.request(0, 0)) == [1]
    enumerator.registered(1)  # a restart later waits for nobody
    assert _dealt(enumerator.request(0, 0)) == [2]


def test_sources_read_together_and_round_robin_checkpoints_keep_round_robin_shares() -> None:
    together = SimpleNamespace(reads_splits_together=True)
    assert enumerator_for(together, None, 4, 2) is None
    one_at_a_time = SimpleNamespace(reads_splits_together=False, discovery_interval_s=None)
    assert enumerator_for(one_at_a_time, SimpleNamespace(properties={}), 4, 2) is None
    assert enumerator_for(one_at_a_time, None, 4, 2) is not None


def test_an_answer_deals_a_shrinking_share_of_the_pool_and_at_most_32() -> None:
    enumerator = _started(2, 1_000)
    sizes = []
    while enumerator.unassigned:
        sizes.append(len(_dealt(enumerator.request(0, 0))))
    assert sizes[0] == 32 and sizes[-8:] == [1] * 8, sizes
    assert sizes == sorted(sizes, reverse=True)
    assert sum(sizes) == 1_000
