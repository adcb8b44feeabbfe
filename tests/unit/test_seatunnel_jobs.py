"""SeaTunnel's own job files (tests/fixtures/seatunnel, unchanged) are accepted and their
Assert rules hold, checked in-process: the connectors the file names, fed split by split
as the subtasks feed them, without Spark (tests/integration/engine/test_seatunnel_jobs.py
runs some of the same files under real Spark)."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_seatunnel_ckpt.engine.connectors import load_sink, load_source, load_transform
from airflow_provider_seatunnel_ckpt.engine.connectors.api import ReaderContext, assign_splits, iter_batches
from airflow_provider_seatunnel_ckpt.engine.job import load_job
from airflow_provider_seatunnel_ckpt.errors import DataError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "seatunnel"
JOB_FILES = sorted(p for p in FIXTURES.rglob("*") if p.suffix in (".conf", ".template"))
#: files whose own test in SeaTunnel expects the job to fail, and the line it must fail with
EXPECTED_FAILURES = {
    "fake_to_assert_with_multitable_exception.conf": "sink[0].rules.field_rules[0].field_value[0]: score = 200 breaks MAX 100",
}


def run_in_process(path: Path) -> int:
    """Run a job's connectors as its subtasks would, one epoch; return the rows the sink got."""
    job = load_job(path)
    source = load_source(job.source, "source[0]")
    transforms = [load_transform(t, f"transform[{i}]") for i, t in enumerate(job.transforms)]
    sink = load_sink(job.sink, "sink[0]")
    schema = source.produced_schema()
    for transform in transforms:
        schema = transform.output_schema(schema)
    if schema is not None:
        sink.accepts(schema)
    splits = source.splits(job.parallelism)
    infos, rows = [], 0
    for subtask in range(job.parallelism):
        writer = sink.create_writer("compat", subtask, 0)
        writer.open(0)
        for split in assign_splits(splits, job.parallelism, subtask):
            for batch in iter_batches(source.create_reader(split, None, ReaderContext(subtask, job.parallelism))):
                for transform in transforms:
                    batch = transform.process(batch, {} if transform.stateful else None)
                    if batch is None:
                        break
                if batch is not None and batch.num_rows:
                    writer.write(batch)
                    rows += batch.num_rows
        infos.append(writer.prepare_commit(1))
    committer = sink.create_committer("compat")
    committer.commit([info for info in infos if info is not None])
    committer.job_finished(None)
    return rows


def test_the_fixtures_are_there() -> None:
    assert len(JOB_FILES) >= 13, JOB_FILES


@pytest.mark.parametrize("path", JOB_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_seatunnel_job_file_runs_unchanged_and_its_assert_rules_hold(path: Path) -> None:
    expected = EXPECTED_FAILURES.get(path.name)
    if expected is None:
        assert run_in_process(path) > 0
        return
    with pytest.raises(DataError) as err:
        run_in_process(path)
    assert str(err.value).startswith(expected)


def test_a_broken_rule_in_a_seatunnel_file_fails_it(tmp_path: Path) -> None:
    """The rules really run: the same file with one bound tightened fails on the row that breaks it."""
    original = (FIXTURES / "seatunnel-transforms-v2-e2e-part-2" / "sql_transform.conf").read_text()
    assert "rule_value = 100" in original
    tightened = tmp_path / "sql_transform.conf"
    tightened.write_text(original.replace("rule_type = MIN_ROW\n            rule_value = 100",
                                          "rule_type = MIN_ROW\n            rule_value = 101"))
    with pytest.raises(DataError, match=r"^sink\[0\]\.rules\.row_rules\[0\]: 100 rows break MIN_ROW 101$"):
        run_in_process(tightened)
