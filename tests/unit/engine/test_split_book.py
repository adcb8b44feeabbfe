"""The split book: finished splits cost nothing once finished (issue #34), and a restore,
with any parallelism, reads every split exactly from where its checkpoint says."""

from __future__ import annotations

import json
import random

import pytest

from airflow_provider_seatunnel_ckpt.connectors.api import Split, assign_splits
from airflow_provider_seatunnel_ckpt.engine.split_book import FinishedRuns, SplitBook, share_of
from airflow_provider_seatunnel_ckpt.engine.state_codec import (
    VERSION,
    SplitState,
    SubtaskState,
    decode_subtask_state,
    encode_snapshot,
    merge_split_states,
)
from airflow_provider_seatunnel_ckpt.storage import CorruptCheckpointError


def plan_of(n: int) -> list[Split]:
    return [Split(f"f{i:07d}", {"path": f"/data/f{i:07d}.csv"}) for i in range(n)]


def fresh_book(plan: list[Split], parallelism: int, subtask: int) -> SplitBook:
    return SplitBook.restored(share_of(plan, parallelism, subtask), SubtaskState({}), len(plan), "test")


def read(book: SplitBook, upto: int, in_progress_at: int | None = None) -> None:
    """Finish the book's first ``upto`` splits in order (as a subtask reads its share),
    then start the next one and leave it at ``in_progress_at``."""
    entries = book.unfinished()
    for index, split in entries[:upto]:
        book.state_of(split).position = 10
        book.finish(index, split, 10)
    if in_progress_at is not None and len(entries) > upto:
        book.state_of(entries[upto][1]).position = in_progress_at


def encoded(book: SplitBook, subtask: int) -> bytes:
    return bytes(encode_snapshot(book.snapshot(subtask)))


def test_the_share_is_the_round_robin_deal_with_plan_indices() -> None:
    plan = plan_of(11)
    for p in (1, 2, 3, 4):
        for s in range(p):
            share = share_of(plan, p, s)
            assert [split for _, split in share] == assign_splits(plan, p, s)
            assert all(plan[i] is split for i, split in share)


def test_a_checkpoint_costs_the_same_however_many_splits_are_finished() -> None:
    """100,000 files on 2 subtasks: the state of a subtask that has finished 500 files and
    one that has finished 49,999 differ only in digits (before: ~60 bytes per finished file,
    3.2 MB at the end; checkpoints 9x slower at 100k files than at 1k)."""
    plan = plan_of(100_000)
    early, late = fresh_book(plan, 2, 1), fresh_book(plan, 2, 1)
    read(early, 500, in_progress_at=3)
    read(late, 49_999, in_progress_at=3)
    small, large = encoded(early, 1), encoded(late, 1)
    assert len(large) - len(small) < 16, (len(small), len(large))
    assert late.finished.runs == [[1, 2, 49_999]]
    assert len(late.states) == 1  # only the split being read
    body = json.loads(large)
    assert body["version"] == VERSION and body["finished_splits"] == [[1, 2, 49_999]]


def test_a_restore_with_another_parallelism_reads_each_split_from_where_it_stood() -> None:
    plan = plan_of(40)
    rng = random.Random(7)
    books = [fresh_book(plan, 3, s) for s in range(3)]
    for book in books:
        read(book, rng.randint(0, 12), in_progress_at=4)
    finished = {i for b in books for i in b.finished.indices()}
    in_progress = {sid: st.position for b in books for sid, st in b.states.items()}
    merged = merge_split_states(decode_subtask_state(encoded(b, s), f"s{s}") for s, b in enumerate(books))
    for parallelism in (1, 2, 3, 5):
        restored = [
            SplitBook.restored(share_of(plan, parallelism, s), merged, len(plan), "t") for s in range(parallelism)
        ]
        for index, split in enumerate(plan):
            owner = restored[index % parallelism]
            assert owner.is_finished(index, split) == (index in finished)
            if split.split_id in in_progress:
                assert owner.state_of(split).position == in_progress[split.split_id]
        # every split is read by exactly one subtask, the finished ones by none
        to_read = sorted(i for b in restored for i, _ in b.unfinished())
        assert to_read == sorted(set(range(len(plan))) - finished)
        # after a rescale, each subtask's own finished splits are runs again
        assert sum(len(b.finished) for b in restored) == len(finished)


def test_a_split_whose_transform_keeps_state_stays_in_the_state_when_finished() -> None:
    plan = plan_of(4)
    book = fresh_book(plan, 1, 0)
    (i0, s0), (i1, s1) = book.unfinished()[:2]
    book.state_of(s0).operators["0"] = {"counts": {"a": 2}}
    book.finish(i0, s0, 5)
    book.state_of(s1).operators["0"] = {}  # asked for its state, kept nothing
    book.finish(i1, s1, 6)
    assert book.finished.runs == [[1, 1, 1]]
    assert book.states == {s0.split_id: SplitState(position=5, finished=True, operators={"0": {"counts": {"a": 2}}})}
    decoded = decode_subtask_state(encoded(book, 0), "t")
    again = SplitBook.restored(share_of(plan, 1, 0), decoded, len(plan), "t")
    assert [i for i, _ in again.unfinished()] == [2, 3]
    assert again.states[s0.split_id].operators == {"0": {"counts": {"a": 2}}}


def test_a_finished_split_position_goes_to_the_source_hook_once() -> None:
    plan = plan_of(3)
    book = fresh_book(plan, 1, 0)
    (i0, s0), (_, s1) = book.unfinished()[:2]
    book.state_of(s0).position = {"offset": 7}
    assert book.positions() == {s0.split_id: {"offset": 7}}
    book.finish(i0, s0, {"offset": 9})
    book.state_of(s1).position = {"offset": 1}
    assert book.positions() == {s0.split_id: {"offset": 9}, s1.split_id: {"offset": 1}}
    assert book.positions() == {s1.split_id: {"offset": 1}}


def test_runs_hold_any_set_of_indices() -> None:
    rng = random.Random(3)
    for _ in range(200):
        indices = rng.sample(range(300), rng.randint(0, 60))
        runs = FinishedRuns()
        for index in indices:
            runs.add(index)
        assert sorted(runs.indices()) == sorted(indices) and len(runs) == len(indices)
        ordered = FinishedRuns.of_sorted(sorted(indices))
        assert list(ordered.indices()) == sorted(indices)
    strided = FinishedRuns.of_sorted(range(5, 5000, 4))
    assert strided.runs == [[5, 4, 1249]]


def test_a_state_written_before_runs_existed_restores_and_is_compacted() -> None:
    plan = plan_of(3)
    legacy = SubtaskState(
        {plan[0].split_id: SplitState(position=4, finished=True), plan[1].split_id: SplitState(position=2)}
    )
    book = SplitBook.restored(share_of(plan, 1, 0), legacy, len(plan), "t")
    assert book.finished.runs == [[0, 1, 1]] and set(book.states) == {plan[1].split_id}
    assert [i for i, _ in book.unfinished()] == [1, 2]


@pytest.mark.parametrize(
    "finished, splits, message",
    [
        ([[0, 1, 5]], {}, r"\[0, 1, 5\] \(start, step, count\) are outside the plan of 4 splits"),
        ([[0, 1, 10**12]], {}, "outside the plan of 4 splits"),  # refused before any set is built
        ([[0, 0, 2]], {}, "outside the plan"),
        ([[1, 1]], {}, "malformed run"),
        ([[1, True, 1]], {}, "malformed run"),
        ({"a": 1}, {}, "not a list of runs"),
        ([[0, 1, 2], [1, 1, 1]], {}, "finished in more than one subtask's state"),
        ([[2, 1, 1]], {"f0000002": SplitState(position=1)}, "'f0000002' is both finished and in progress"),
    ],
)
def test_damaged_runs_are_refused_with_one_line(finished, splits, message) -> None:
    with pytest.raises(CorruptCheckpointError, match=message):
        SplitBook.restored(share_of(plan_of(4), 1, 0), SubtaskState(splits, finished), 4, "checkpoint 9")


def test_a_state_without_finished_runs_keeps_the_format_the_previous_release_reads() -> None:
    plan = plan_of(3)
    book = fresh_book(plan, 1, 0)
    book.state_of(plan[0]).position = 3
    body = json.loads(encoded(book, 0))
    assert body["version"] == 1 and "finished_splits" not in body
    # the same runs key in a version the framing does not allow is damage, not ignored
    body["finished_splits"] = [[1, 1, 1]]
    with pytest.raises(CorruptCheckpointError, match="version 1 cannot have finished splits"):
        decode_subtask_state(json.dumps(body).encode(), "t")
    body["version"] = VERSION
    assert decode_subtask_state(json.dumps(body).encode(), "t").finished == [[1, 1, 1]]


def test_a_share_finished_in_any_order_ends_as_one_run() -> None:
    """Splits read together (Kafka's partitions) finish in any order: 500 partitions of a
    subtask made 213-221 runs (bench/scale_bench.py --source kafka). Merged again from
    time to time, the finished share is one run, and the state stays small meanwhile."""
    plan = plan_of(2_000)
    book = fresh_book(plan, 2, 1)
    entries = book.unfinished()
    random.Random(5).shuffle(entries)
    most = 0
    for index, split in entries:
        book.state_of(split).position = 1
        book.finish(index, split, 1)
        most = max(most, len(book.finished.runs))
    book.snapshot(1)  # a checkpoint merges what finished out of order since the last one
    assert book.finished.runs == [[1, 2, 1_000]]
    assert most < 400, most  # never one run per finished split
    assert sorted(book.finished.indices()) == list(range(1, 2_000, 2))
