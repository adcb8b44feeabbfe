from __future__ import annotations

import time

import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.connectors.api import ReaderContext, assign_splits, iter_batches
from airflow_provider_seatunnel_ckpt.connectors.sequence import RateLimiter, SequenceSource
from airflow_provider_seatunnel_ckpt.errors import ConfigError

from .conftest import read_all


@pytest.mark.parametrize("rows", [0, 1, 7, 1000, 12_345])
@pytest.mark.parametrize("parallelism, splits", [(1, None), (3, None), (2, 5), (5, 3)])
def test_ids_exact_and_complete_over_splits(rows, parallelism, splits):
    options = {"rows": rows, "batch_size": 333}
    if splits is not None:
        options["splits"] = splits
    ids = read_all(SequenceSource(options), parallelism, batch_size=1000)
    assert sorted(ids) == list(range(rows))


def test_splits_are_contiguous_ranges_and_stable():
    source = SequenceSource({"rows": 10})
    splits = source.splits(3)
    assert [(s.spec["start"], s.spec["end"]) for s in splits] == [(0, 3), (3, 6), (6, 10)]
    assert splits == source.splits(3)
    assert len({s.split_id for s in splits}) == 3
    assert len(SequenceSource({"rows": 10, "splits": 4}).splits(3)) == 4


def test_batches_are_int64_and_respect_batch_size():
    source = SequenceSource({"rows": 10, "batch_size": 4})
    reader = source.create_reader(source.splits(1)[0], None, ReaderContext(0, 1))
    batches = list(iter_batches(reader))
    assert [b.num_rows for b in batches] == [4, 4, 2]
    assert batches[0].schema == pa.schema([pa.field("id", pa.int64(), nullable=False)])
    assert reader.position() == 10 and reader.read_batch() is None


def test_context_batch_size_is_the_default():
    source = SequenceSource({"rows": 10})
    reader = source.create_reader(source.splits(1)[0], None, ReaderContext(0, 1, batch_size=3))
    assert reader.read_batch().num_rows == 3


@pytest.mark.parametrize("stop_after", [0, 1, 2, 3])
def test_resume_from_a_position_yields_exactly_the_remaining_ids(stop_after):
    source = SequenceSource({"rows": 100, "splits": 3, "batch_size": 7})
    split = source.splits(1)[1]  # ids 33..65
    context = ReaderContext(0, 1)
    reader = source.create_reader(split, None, context)
    seen = []
    for _ in range(stop_after):
        seen += reader.read_batch().column("id").to_pylist()
    position = reader.position()
    assert position == 33 + len(seen)
    resumed = source.create_reader(split, position, context)
    rest = [i for b in iter_batches(resumed) for i in b.column("id").to_pylist()]
    assert seen + rest == list(range(33, 66))


def test_resume_at_an_arbitrary_position_mid_batch():
    source = SequenceSource({"rows": 50, "batch_size": 8})
    split = source.splits(1)[0]
    reader = source.create_reader(split, 13, ReaderContext(0, 1))
    assert [i for b in iter_batches(reader) for i in b.column("id").to_pylist()] == list(range(13, 50))
    done = source.create_reader(split, 50, ReaderContext(0, 1))
    assert done.read_batch() is None and done.position() == 50


@pytest.mark.parametrize("position", [-1, 101, "3", 2.0, True])
def test_bad_positions_are_rejected(position):
    source = SequenceSource({"rows": 100})
    with pytest.raises(ValueError, match="position"):
        source.create_reader(source.splits(1)[0], position, ReaderContext(0, 1))


def test_payload_column_size_and_cheapness():
    source = SequenceSource({"rows": 1000, "payload_bytes": 100, "batch_size": 300})
    reader = source.create_reader(source.splits(1)[0], None, ReaderContext(0, 1))
    batches = list(iter_batches(reader))
    assert [b.num_rows for b in batches] == [300, 300, 300, 100]
    payload = batches[0].column("payload")
    assert payload.type == pa.binary(100)
    assert all(len(v) == 100 for v in payload.to_pylist())
    assert batches[0].column("id").to_pylist() == list(range(300))
    # one shared buffer, not one per batch
    assert payload.buffers()[1].address == batches[1].column("payload").buffers()[1].address


@pytest.mark.parametrize(
    "options, key",
    [
        ({}, "rows"),
        ({"rows": -1}, "rows"),
        ({"rows": True}, "rows"),
        ({"rows": 1.5}, "rows"),
        ({"rows": 10, "splits": 0}, "splits"),
        ({"rows": 10, "batch_size": 0}, "batch_size"),
        ({"rows": 10, "payload_bytes": -1}, "payload_bytes"),
        ({"rows": 10, "rows_per_second": -5}, "rows_per_second"),
        ({"rows": 10, "rows_per_second": "fast"}, "rows_per_second"),
        ({"rows": 10, "row": 10}, "row"),
    ],
)
def test_option_validation(options, key):
    with pytest.raises(ConfigError) as err:
        SequenceSource(options)
    assert err.value.key == key


def test_unknown_option_lists_known_options():
    with pytest.raises(ConfigError, match="known options: batch_size, payload_bytes, rows, rows_per_second, splits"):
        SequenceSource({"rows": 1, "speed": 3})


def test_numbers_given_as_strings_are_accepted():
    source = SequenceSource({"rows": "1_000", "rows_per_second": "2.5"})
    assert (source.rows, source.rows_per_second) == (1000, 2.5)


# ---- rate limiting ---------------------------------------------------------------------------
class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_rate_limiter_sleeps_only_when_ahead():
    clock = FakeClock()
    limiter = RateLimiter(10.0, clock=clock, sleep=clock.sleep)
    limiter.acquire(5)
    assert clock.sleeps == []  # the first batch goes at once: its cost is paid by the next call
    limiter.acquire(5)
    assert clock.sleeps == [pytest.approx(0.5)]
    clock.now += 2.0  # the caller was slow: no sleep, but only 1 s of credit is kept
    limiter.acquire(5)
    assert len(clock.sleeps) == 1
    limiter.acquire(10)  # 0.5 s of credit left
    assert len(clock.sleeps) == 1
    limiter.acquire(10)  # the credit is used up: the 10 rows before are due in 0.5 s
    assert clock.sleeps[-1] == pytest.approx(0.5)
    limiter.acquire(10)
    assert clock.sleeps[-1] == pytest.approx(1.0)


def test_rate_limit_is_roughly_obeyed():
    source = SequenceSource({"rows": 30, "rows_per_second": 100})
    reader = source.create_reader(source.splits(1)[0], None, ReaderContext(0, 1))
    start = time.monotonic()
    ids = [i for b in iter_batches(reader) for i in b.column("id").to_pylist()]
    assert time.monotonic() - start >= 0.2 * 0.95  # 3 batches of 0.1 s; the first goes at once
    assert ids == list(range(30))


def test_rate_is_shared_by_the_subtasks_splits():
    # 4 splits over 2 subtasks: subtask 0 holds 2 of 4 splits, so gets 50 of 100 rows/s,
    # and its two readers share one limiter
    source = SequenceSource({"rows": 40, "splits": 4, "rows_per_second": 100})
    splits = assign_splits(source.splits(2), 2, 0)
    context = ReaderContext(0, 2)
    readers = [source.create_reader(s, None, context) for s in splits]
    assert readers[0]._limiter is readers[1]._limiter and readers[0]._limiter.rate == 50
    assert readers[0]._batch_size == 5  # about 0.1 s of rows per batch
    start = time.monotonic()
    total = sum(b.num_rows for r in readers for b in iter_batches(r))
    assert total == 20
    assert time.monotonic() - start >= 0.3 * 0.95  # 4 batches of 0.1 s; the first goes at once
