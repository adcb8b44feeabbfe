"""SeaTunnel's own job files (tests/fixtures/seatunnel, unchanged) are accepted and their
Assert rules hold, checked in-process (tests/seatunnel_jobs.py: the connectors the file
names, fed split by split as the subtasks feed them, without Spark;
tests/integration/engine/test_seatunnel_jobs.py runs some of the same files under Spark)."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_seatunnel_ckpt.connectors.in_memory import InMemorySink
from airflow_provider_seatunnel_ckpt.errors import DataError
from tests.seatunnel_jobs import EXPECTED_FAILURES, run_in_process

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "seatunnel"
#: the LocalFile jobs read inputs laid out at SeaTunnel's absolute paths (a checkpoint
#: directory's files too: one job writes what the next reads), and the Kafka ones need Kafka
#: and PostgreSQL, the Jdbc ones PostgreSQL: their own tests (test_seatunnel_file_archives.py,
#: test_seatunnel_file_sources.py, tests/integration/kafka/test_seatunnel_change_formats.py,
#: tests/integration/jdbc/test_seatunnel_jdbc_jobs.py, the Iceberg ones'
#: tests/integration/lakehouse/test_iceberg_hadoop_catalog.py) lay those out and run them
OWN_TESTS = {
    "connector-file-local-e2e",
    "connector-kafka-e2e",
    "connector-jdbc-e2e",
    "connector-iceberg-e2e",
    "checkpoint-batch-disable-test-resources",
}
JOB_FILES = sorted(
    p for p in FIXTURES.rglob("*") if p.suffix in (".conf", ".template") and not OWN_TESTS & set(p.parts)
)
#: files whose sinks get no row, as their Assert rules say (MIN_ROW 0, MAX_ROW 0)
EXPECTED_EMPTY = {"filter_row_kind_exclude_insert.conf"}


@pytest.fixture(autouse=True)
def _no_inmemory_sleeps(monkeypatch: pytest.MonkeyPatch) -> None:
    """The InMemory sink's sleeps (SeaTunnel's, to let checkpoints pass) prove nothing in-process."""
    monkeypatch.setattr(InMemorySink, "exception_sleep_s", 0.0)
    monkeypatch.setattr(InMemorySink, "checkpoint_sleep_s", 0.0)


def test_the_fixtures_are_there() -> None:
    assert len(JOB_FILES) >= 13, JOB_FILES


@pytest.mark.parametrize("path", JOB_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_seatunnel_job_file_runs_unchanged_and_its_assert_rules_hold(path: Path) -> None:
    expected = EXPECTED_FAILURES.get(path.name)
    if expected is None:
        assert (run_in_process(path) == 0) == (path.name in EXPECTED_EMPTY)
        return
    error, message = expected
    with pytest.raises(error) as err:
        run_in_process(path)
    assert str(err.value).startswith(message)


def test_a_broken_rule_in_a_seatunnel_file_fails_it(tmp_path: Path) -> None:
    """The rules really run: the same file with one bound tightened fails on the row that breaks it."""
    original = (FIXTURES / "seatunnel-transforms-v2-e2e-part-2" / "sql_transform.conf").read_text()
    assert "rule_value = 100" in original
    tightened = tmp_path / "sql_transform.conf"
    tightened.write_text(
        original.replace(
            "rule_type = MIN_ROW\n            rule_value = 100", "rule_type = MIN_ROW\n            rule_value = 101"
        )
    )
    with pytest.raises(DataError, match=r"^sink\[0\]\.rules\.row_rules\[0\]: 100 rows break MIN_ROW 101$"):
        run_in_process(tightened)
