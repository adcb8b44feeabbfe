"""Chaos, exactly-once, for a SeaTunnel job file: HOCON, two FakeSources wired by table name
to a Sql transform and two LocalFile sinks (one reads the transform's table, one reads both
sources' tables), under executor-worker kills and driver SIGKILLs with reruns
(``--restore latest``).

FakeSource's values are random but repeatable (seeded by split and position), so the rows
the job must write are known: the test generates them in-process from the same file and
compares each sink's output with them row by row, every row exactly once in each sink.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.connectors import load_source
from airflow_provider_seatunnel_ckpt.connectors.api import ReaderContext, iter_batches
from airflow_provider_seatunnel_ckpt.jobfile.job import load_job
from tests.support.chaos import ChaosRecord, chaos_runs
from tests.support.workspace import Workspace, read_output

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

ROWS_PER_READER = 100_000
EXTRA_ROWS_PER_READER = 25_000
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
  FakeSource {
    plugin_output = "extra"
    row.num = %(extra)d
    split.num = 10
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
    path = "%(output)s/aged"
    file_format_type = "parquet"
  }
  LocalFile {
    plugin_input = ["fake", "extra"]
    path = "%(output)s/all"
    file_format_type = "parquet"
  }
}
"""


def source_rows(job_path: Path, index: int) -> Counter:
    """The rows source ``index`` of the job reads, made by the same FakeSource in this process."""
    job = load_job(job_path)
    source = load_source(job.sources[index], f"source[{index}]")
    rows: Counter = Counter()
    for split in source.splits(job.parallelism):
        for batch in iter_batches(source.create_reader(split, None, ReaderContext(0, job.parallelism))):
            rows.update((row["id"], row["name"], row["age"], row["price"]) for row in batch.to_pylist())
    return rows


def _written(directory: Path, columns: tuple[str, ...]) -> tuple[Counter, pa.Table]:
    table = read_output(f"file://{directory}/")
    return Counter(zip(*(table.column(c).to_pylist() for c in columns))), table


def test_a_seatunnel_hocon_job_under_kills_writes_every_row_once(
    workspace: Workspace, chaos: tuple[random.Random, ChaosRecord]
) -> None:
    rng, record = chaos
    started = time.monotonic()
    job = workspace.root / "fake_to_local_file.conf"
    job.write_text(
        JOB % {"readers": READERS, "rows": ROWS_PER_READER, "extra": EXTRA_ROWS_PER_READER, "output": workspace.output}
    )
    config = workspace.write_config(interval=500, tolerable_failure=10)
    chaos_runs(workspace, record, rng, job, config, "chaos-seatunnel")
    record.elapsed_s = time.monotonic() - started

    fake, extra = source_rows(job, 0), source_rows(job, 1)
    assert sum(fake.values()) == ROWS_PER_READER * READERS and sum(extra.values()) == EXTRA_ROWS_PER_READER * READERS
    aged = Counter((i, name, age % 7, price) for (i, name, age, price), n in fake.items() for _ in range(n))
    lost = duplicated = 0
    for directory, columns, expected in (
        (workspace.output / "aged", ("id", "name", "age7", "price"), aged),
        (workspace.output / "all", ("id", "name", "age", "price"), fake + extra),
    ):
        written, table = _written(directory, columns)
        lost += sum((expected - written).values())
        duplicated += sum((written - expected).values())
        record.rows += table.num_rows
    record.lost, record.duplicated = lost, duplicated
    assert not lost and not duplicated, (
        f"seed {record.seed}: lost {lost}, duplicated {duplicated}; kill points: {record.kill_points}"
    )
    assert len(record.kill_points) >= 3, record.kill_points
