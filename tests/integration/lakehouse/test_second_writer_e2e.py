"""A second application appends to the table while our job (real Spark, through
``seatunnel-ckpt run``) commits a snapshot/version per checkpoint into it: afterwards
both writers' rows are in the table exactly once, and the job committed once per
checkpoint it labelled."""

from __future__ import annotations

import threading
import time

import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.connectors import load_sink
from tests.support.workspace import Workspace

from .conftest import Warehouse, local_warehouse  # noqa: F401 - fixture
from .formats import FORMATS

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]

ROWS = 150_000
OTHER = list(range(10_000_000, 10_000_040))


@pytest.mark.parametrize("name", ["iceberg", "delta"])
def test_a_second_writer_during_the_job(workspace: Workspace, local_warehouse: Warehouse, name: str) -> None:
    table_format = FORMATS[name]
    options = table_format.options(local_warehouse)
    load_sink(options).create_table(pa.schema([("id", pa.int64())]))  # both writers append to it
    job = workspace.write_job(
        {"plugin_name": "Sequence", "rows": ROWS, "rows_per_second": 40_000, "batch_size": 2_000}, options
    )
    config = workspace.write_config(interval=300)
    sink = load_sink(options)
    stop = threading.Event()
    appended: list[int] = []

    def other_writer() -> None:  # 40 appends of one row, spread over the job's run
        for row in OTHER:
            if stop.is_set():
                return
            table_format.append_other(sink, [row])
            appended.append(row)
            time.sleep(0.05)

    with workspace.start(job, config, "two-writers") as driver:
        assert driver.wait_for(r"checkpoint 1 \(checkpoint\) completed", 180), driver.stderr()
        thread = threading.Thread(target=other_writer)
        thread.start()
        result = driver.wait(300)
        stop.set()
        thread.join()
    assert result.returncode == 0, result.explain()
    assert len(appended) >= 10, f"the other writer appended only {len(appended)} times while the job ran"
    ids = table_format.ids(sink)
    assert ids == sorted([*range(ROWS), *appended]), f"{len(ids)} rows; expected {ROWS + len(appended)}, each once"
    commits = [int(c) for c in table_format.commits(sink, "two-writers")]
    assert commits == sorted(set(commits)) and len(commits) >= 3, commits
