"""The benchmark helpers that decide what a figure is made of: a repetition's totals over
its rounds, the pyarrow loops run side by side, and the hold on freed memory that is
always given back."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import common
from bench.throughput_bench import ParallelLoops, _gap_note, _gap_table, combine_rounds, id_shares


def _run(rows: int, seconds: float, cpu_s: float, checkpoints: int) -> dict:
    return {
        "rows": rows,
        "spark_job_s": seconds,
        "run_s": seconds + 0.01,
        "rows_per_s": rows / seconds,
        "cpu_s": cpu_s,
        "cpu_s_by_process": {"driver": 0.1, "workers": cpu_s - 0.1, "total": cpu_s},
        "checkpoints_completed": checkpoints,
        "checkpoint_duration_ms_median": 10 * checkpoints,
    }


def test_a_repetition_is_the_totals_of_its_rounds_not_the_mean_of_their_rates() -> None:
    runs = [_run(1000, 1.0, 2.0, 3), _run(1000, 4.0, 6.0, 5), _run(1000, 1.0, 1.0, 4)]
    combined = combine_rounds(runs)
    assert combined["rows_per_s"] == pytest.approx(3000 / 6.0)  # the mean of the rates would be 750
    assert combined["rows_per_cpu_s"] == pytest.approx(3000 / 9.0, abs=0.1)
    assert combined["cpu_s"] == pytest.approx(3.0)  # per run, so CPU per row reads as for one run
    assert combined["cpu_s"] * 1e6 / combined["rows"] == pytest.approx(9.0 * 1e6 / 3000)
    assert combined["cpu_s_by_process"]["driver"] == pytest.approx(0.1)
    assert combined["spark_job_s"] == pytest.approx(2.0)
    assert combined["checkpoints_completed"] == 4 and combined["checkpoint_duration_ms_median"] == 40
    assert combined["rounds"] == runs


def test_a_pyarrow_loop_without_a_spark_job_time_combines_too() -> None:
    runs = [{**_run(500, 2.0, 2.0, 0), "spark_job_s": None}, {**_run(500, 3.0, 2.0, 0), "spark_job_s": None}]
    combined = combine_rounds(runs)
    assert combined["spark_job_s"] is None
    assert combined["rows_per_s"] == pytest.approx(1000 / 5.0)


def test_the_loops_share_the_ids_once_each() -> None:
    for rows, processes in ((150_001, 2), (10, 3), (40_000_000, 2), (1, 2)):
        shares = id_shares(rows, processes)
        assert sum(count for _, count in shares) == rows
        assert all(start == sum(c for _, c in shares[:i]) for i, (start, _) in enumerate(shares))  # back to back
        assert max(c for _, c in shares) - min(c for _, c in shares) <= 1
        if rows < 1000:
            assert [i for start, count in shares for i in range(start, start + count)] == list(range(rows))


def test_parallel_loops_run_at_once_add_up_their_cpu_and_report_a_failure(tmp_path: Path) -> None:
    loops = ParallelLoops()
    try:
        both = loops.run(150_001, tmp_path, "t", like_sink=True, processes=2)
        alone = loops.run(150_001, tmp_path, "t", like_sink=False, processes=1)
        again = loops.run(150_001, tmp_path, "t", like_sink=False, processes=2)  # the pool is started afresh
        with pytest.raises(RuntimeError, match="a pyarrow loop failed: .*missing"):
            loops.run(1000, tmp_path / "missing", "t", like_sink=True, processes=2)
        after_failure = loops.run(1000, tmp_path, "t", like_sink=False, processes=2)  # a new pool, no stale answer
    finally:
        loops.close()
    # each loop checks that its files hold its share of the rows; 2 files, one per loop
    assert both["ids"] == again["ids"] == [[0, 75_001], [75_001, 150_001]]
    assert after_failure["ids"] == [[0, 500], [500, 1000]] and after_failure["rows"] == 1000
    assert both["processes"] == 2 and both["files"] == 2 and alone["files"] == 1
    assert both["cpu_s"] > 0 and both["cpu_s_by_process"]["total"] == pytest.approx(both["cpu_s"], abs=0.01)
    assert list(tmp_path.iterdir()) == []  # every loop removed what it wrote


def test_a_loop_that_dies_is_reported_not_waited_for(tmp_path: Path) -> None:
    loops = ParallelLoops()
    try:
        loops._start(2)
        loops._loops[1][0].kill()
        with pytest.raises(RuntimeError, match="a pyarrow loop died"):
            loops._answer(*loops._loops[1], "d")
    finally:
        loops.close()
    assert loops._loops == []


def test_the_gap_to_the_limit_is_the_product_of_its_three_factors() -> None:
    cpu = {"pyarrow": 0.1, "pyarrow_like_sink": 0.125, "pyarrow_like_sink_p2": 0.14, "1s": 0.16}
    factors = [float(row[-1]) for row in _gap_table(cpu)["rows"]]
    assert factors == [0.8, pytest.approx(0.893, abs=0.001), 0.875, pytest.approx(0.625, abs=0.001)]
    assert "engine that cost nothing would score 0.71" in _gap_note(cpu)
    # the optional comparisons appear when their variants ran, and a missing one is no error
    full = _gap_note({**cpu, "pyarrow_p2": 0.11, "p1_1s": 0.13})
    assert "the plain loop alike: 0.110 in 2 processes" in full and "With one subtask" in full
    assert _gap_table({v: m for v, m in cpu.items() if v != "pyarrow_like_sink_p2"}) is None
    assert _gap_note({v: m for v, m in cpu.items() if v != "1s"}) is None


@pytest.fixture
def knobs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "min_free_ms").write_text("0\n")
    (tmp_path / "max_waiting_mib").write_text("1024\n")
    monkeypatch.setattr(common, "FREE_PAGE_REPORTING", tmp_path)
    return tmp_path


def _values(path: Path) -> dict[str, int]:
    return {name: int((path / name).read_text()) for name in ("min_free_ms", "max_waiting_mib")}


def test_freed_pages_are_held_while_the_benchmark_runs_and_the_setting_restored(knobs: Path) -> None:
    with common.freed_memory_held() as state:
        assert _values(knobs) == common.HOLD_FREED_PAGES
    assert _values(knobs) == {"min_free_ms": 0, "max_waiting_mib": 1024}
    assert state["held"] == common.HOLD_FREED_PAGES
    assert state["free_page_reporting"] == {"min_free_ms": 0, "max_waiting_mib": 1024}


def test_the_setting_is_restored_when_the_benchmark_fails(knobs: Path) -> None:
    with pytest.raises(RuntimeError), common.freed_memory_held():
        raise RuntimeError("a run failed")
    assert _values(knobs) == {"min_free_ms": 0, "max_waiting_mib": 1024}


def test_a_setting_already_above_the_hold_is_left_as_it_is(knobs: Path) -> None:
    (knobs / "max_waiting_mib").write_text("65536\n")
    with common.freed_memory_held() as state:
        assert _values(knobs)["max_waiting_mib"] == 65536
    assert _values(knobs) == {"min_free_ms": 0, "max_waiting_mib": 65536}
    assert state["held"] == {"min_free_ms": common.HOLD_FREED_PAGES["min_free_ms"], "max_waiting_mib": 65536}


def test_a_refused_second_write_undoes_the_first(knobs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_write = Path.write_text

    def write_text(self: Path, text: str, *args: object, **kwargs: object) -> int:
        if self.name == "max_waiting_mib" and text.strip() != "1024":
            raise PermissionError(13, "Permission denied")
        return real_write(self, text, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", write_text)
    with common.freed_memory_held() as state:
        assert _values(knobs)["min_free_ms"] == common.HOLD_FREED_PAGES["min_free_ms"]
    assert _values(knobs) == {"min_free_ms": 0, "max_waiting_mib": 1024}
    assert state["held"] is None and "could not hold" in state["note"]


def test_sigterm_restores_the_setting_and_the_handler(knobs: Path) -> None:
    import os
    import signal

    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(SystemExit) as stopped, common.freed_memory_held():
        assert _values(knobs) == common.HOLD_FREED_PAGES
        os.kill(os.getpid(), signal.SIGTERM)
    assert stopped.value.code == 143
    assert _values(knobs) == {"min_free_ms": 0, "max_waiting_mib": 1024}
    assert signal.getsignal(signal.SIGTERM) == before


def test_asked_not_to_hold_the_setting_is_left_alone(knobs: Path) -> None:
    with common.freed_memory_held(enabled=False) as state:
        assert _values(knobs) == {"min_free_ms": 0, "max_waiting_mib": 1024}
    assert state["held"] is None


def test_a_kernel_without_the_knobs_is_reported_not_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(common, "FREE_PAGE_REPORTING", tmp_path / "absent")
    with common.freed_memory_held() as state:
        pass
    assert state["held"] is None and "no free page reporting" in state["note"]
    assert not (tmp_path / "absent").exists()
