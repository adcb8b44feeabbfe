"""The jobs-at-once bench's control: the per-row work in plain processes, no engine."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from bench import bare_data_path


def test_one_process_runs_the_query_over_its_batches_into_parquet_files(tmp_path) -> None:
    found = bare_data_path.work(0.3, 1000, "select id from source where id % 2 = 0", str(tmp_path))
    written = [pq.read_table(path).column("id").to_pylist() for path in sorted(tmp_path.iterdir())]
    ids = [i for part in written for i in part]
    assert found["rows"] == len(ids) > 0
    assert all(i % 2 == 0 for i in ids)  # the query ran: only what it keeps is written
    assert len(set(ids)) == len(ids)  # every batch has ids of its own
    assert found["files"] == len(written)
    assert found["cpu_s"] > 0


def test_processes_at_once_add_up_their_rows_and_each_n_is_compared_with_one_job() -> None:
    found = bare_data_path.compare(2, [1, 2], 0.3, 1, 1000, "select id from source")
    assert [r["processes"] for r in found["runs"]["2"]] == [2]
    assert [r["processes"] for r in found["runs"]["4"]] == [4]
    assert all(r["rows"] > 0 and r["rows_per_cpu_s"] > 0 for runs in found["runs"].values() for r in runs)
    assert list(found["ratios"]) == ["2"]
    ratio = found["ratios"]["2"]
    alone, four = found["runs"]["2"][0], found["runs"]["4"][0]
    assert ratio["throughput_ratio"] == round(four["rows_per_s"] / alone["rows_per_s"], 3)
    assert ratio["processes"] == 4


def test_a_process_that_fails_fails_the_control() -> None:
    with pytest.raises(RuntimeError, match="bare data path process failed"):
        bare_data_path.run(1, 0.1, 100, "select nope from source")
