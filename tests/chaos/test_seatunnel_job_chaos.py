"""Chaos, exactly-once, for a SeaTunnel job file: HOCON, FakeSource -> Sql -> LocalFile, under
executor-worker kills and driver SIGKILLs with reruns (``--restore latest``).

FakeSource's values are random but repeatable (seeded by split and position), so the rows
the job must write are known: the test generates them in-process from the same file and
compares the output with them row by row, every row exactly once."""

from __future__ import annotations

import random
import time
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.connectors import load_source
from airflow_provider_seatunnel_ckpt.connectors.api import ReaderContext, iter_batches
from airflow_provider_seatunnel_ckpt.engine.job import load_job
from tests.integration.engine.support import Workspace, read_output

from .conftest import ChaosRecord
from .runs import chaos_runs

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

ROWS_PER_READER = 100_000
READERS = 2
# 40 splits per reader, 0.3 s apart: about 12 s of work, so the kills land while it runs
JOB = """
env {
  parallelism = %(readers)d
  job.mode = "BATCH"
}
source {
  FakeSource {
    result_table_name = "fake"
    row.num = %(rows)d
    split.num = 40
    split.read-interval = 300
    schema = { fields { id = bigint, name = string, age = int, price = "decimal(12, 2)" } }
  }
}
transform {
  Sql {
    source_table_name = "fake"
    result_table_name = "aged"
    query = "select id, name, age %% 7 as age7, price from fake"
  }
}
sink {
  LocalFile {
    source_table_name = "aged"
    path = "%(output)s"
    file_format_type = "parquet"
  }
}
"""


def expected_rows(job_path: Path) -> Counter:
    """The rows the job must write, made by the same FakeSource in this process."""
    job = load_job(job_path)
    source = load_source(job.source, "source[0]")
    rows: Counter = Counter()
    for split in source.splits(job.parallelism):
        for batch in iter_batches(source.create_reader(split, None, ReaderContext(0, job.parallelism))):
            for row in batch.to_pylist():
                rows[(row["id"], row["name"], row["age"] % 7, row["price"])] += 1
    return rows


def test_a_seatunnel_hocon_job_under_kills_writes_every_row_once(
        workspace: Workspace, chaos: tuple[random.Random, ChaosRecord]) -> None:
    rng, record = chaos
    started = time.monotonic()
    job = workspace.root / "fake_to_local_file.conf"
    job.write_text(JOB % {"readers": READERS, "rows": ROWS_PER_READER, "output": workspace.output})
    config = workspace.write_config(interval=500, tolerable_failure=10)
    chaos_runs(workspace, record, rng, job, config, "chaos-seatunnel")
    record.elapsed_s = time.monotonic() - started

    table = read_output(f"file://{workspace.output}/")
    written: Counter = Counter(zip(*(table.column(c).to_pylist() for c in ("id", "name", "age7", "price"))))
    expected = expected_rows(job)
    assert sum(expected.values()) == ROWS_PER_READER * READERS
    lost, duplicated = expected - written, written - expected
    record.rows = table.num_rows
    record.lost, record.duplicated = sum(lost.values()), sum(duplicated.values())
    assert not lost and not duplicated, f"seed {record.seed}: lost {record.lost}, duplicated {record.duplicated}; " \
                                        f"kill points: {record.kill_points}"
    assert table.schema.field("age7").type == pa.int32() and len(record.kill_points) >= 3, record.kill_points
