"""Batches sized by time (engine/batch_sizer.py): the limit follows the measured pace,
shrinks at once, grows back at most twice per batch, stays within [floor, configured]."""

from __future__ import annotations

import pytest

from airflow_provider_seatunnel_ckpt.connectors.api import ReaderContext
from airflow_provider_seatunnel_ckpt.engine.batch_sizer import BatchSizer


def test_a_fast_batch_keeps_the_configured_size() -> None:
    sizer = BatchSizer(65_536, 0.05)
    # 65,536 rows in 24 ms (a job alone): no limit
    assert sizer.record(65_536, 0.024) is None
    assert sizer.record(65_536, 0.049) is None


def test_a_slow_batch_shrinks_the_next_one_to_the_target_time() -> None:
    sizer = BatchSizer(65_536, 0.05)
    # 65,536 rows in 200 ms (an eighth of a core): the next one is a quarter
    assert sizer.record(65_536, 0.2) == 16_384
    # at that pace a batch of the new size takes the target
    assert sizer.record(16_384, 0.05) == 16_384


def test_the_limit_never_goes_below_the_floor() -> None:
    sizer = BatchSizer(65_536, 0.05)
    assert sizer.floor == 16_384  # a quarter of the configured size
    assert sizer.record(65_536, 10.0) == 16_384
    assert BatchSizer(65_536, 0.05, floor=100).record(65_536, 100.0) == 100


def test_the_size_grows_back_at_most_twice_per_batch_to_no_limit() -> None:
    sizer = BatchSizer(65_536, 0.05, floor=4_096)
    assert sizer.record(65_536, 1.6) == 4_096  # 50 ms at this pace = 2,048 rows: the floor
    # the CPU is free again: 4,096 rows in 1.5 ms each time
    sizes = []
    for _ in range(10):
        limit = sizer.record(sizer.limit or 65_536, 0.0015 * (sizer.limit or 65_536) / 4_096)
        sizes.append(limit)
    assert sizes[:4] == [8_192, 16_384, 32_768, None]
    assert sizes[4:] == [None] * 6


def test_a_short_batch_is_no_evidence_for_growing() -> None:
    sizer = BatchSizer(65_536, 0.05, floor=4_096)
    assert sizer.record(65_536, 0.4) == 8_192
    # the end of a split: 10 rows, fast; the limit stays
    assert sizer.record(10, 0.0001) == 8_192
    assert sizer.record(1_000, 0.04) == 8_192  # 1,000 rows in 40 ms: fixed costs, no evidence
    # but a short batch that takes longer than the target shrinks it
    assert sizer.record(1_000, 0.1) == 4_096


def test_nothing_read_or_switched_off_changes_nothing() -> None:
    sizer = BatchSizer(65_536, 0.05)
    assert sizer.record(0, 5.0) is None  # an unbounded source with nothing new
    off = BatchSizer(65_536, 0)
    assert not off.enabled
    assert off.record(65_536, 5.0) is None


def test_a_source_with_bigger_batches_raises_the_ceiling() -> None:
    sizer = BatchSizer(65_536, 0.05)
    assert sizer.record(200_000, 0.2) == 50_000
    assert sizer.ceiling == 200_000
    assert sizer.record(50_000, 0.02) == 100_000
    assert sizer.record(100_000, 0.02) is None


def test_the_context_hands_readers_the_limit() -> None:
    context = ReaderContext(0, 1, 65_536)
    assert context.rows_for_next_batch() == 65_536
    assert context.rows_for_next_batch(20_000) == 20_000  # a source's own batch_size
    context.row_limit = 8_192
    assert context.rows_for_next_batch() == 8_192
    assert context.rows_for_next_batch(20_000) == 8_192
    assert context.rows_for_next_batch(1_000) == 1_000


@pytest.mark.parametrize("ceiling", [0, -5])
def test_a_ceiling_below_one_is_refused(ceiling: int) -> None:
    with pytest.raises(ValueError):
        BatchSizer(ceiling, 0.05)


def _job(env: dict[str, object]) -> dict[str, object]:
    return {"env": env, "source": [{"plugin_name": "Sequence", "rows": 10}], "sink": [{"plugin_name": "Console"}]}


def test_the_job_file_key_takes_zero_for_fixed_batches() -> None:
    from airflow_provider_seatunnel_ckpt.jobfile.job import load_job

    assert load_job(_job({"batch_time_ms": 0})).env["batch_time_ms"] == 0
    assert load_job(_job({"batch_time_ms": "80"})).env["batch_time_ms"] == 80
    assert "batch_time_ms" not in load_job(_job({})).env  # the engine's default: 0, fixed batches


@pytest.mark.parametrize("value", [-1, "soon", True])
def test_the_job_file_key_refuses_what_is_not_a_count_of_ms(value: object) -> None:
    from airflow_provider_seatunnel_ckpt.errors import ConfigError
    from airflow_provider_seatunnel_ckpt.jobfile.job import load_job

    with pytest.raises(ConfigError, match="batch_time_ms"):
        load_job(_job({"batch_time_ms": value}))
    with pytest.raises(ConfigError, match="positive integer"):
        load_job(_job({"batch_size": 0}))  # batch_size still may not be 0
