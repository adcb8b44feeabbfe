"""``seatunnel-ckpt run --check`` contacts no system, as its help and docs/jobs.md say:
a sink whose ``accepts`` reads its target (an Iceberg table in its catalog, a Delta
table at its path) is not asked, and the check says the run will ask instead."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_seatunnel_ckpt.engine.job_check import check_job
from airflow_provider_seatunnel_ckpt.jobfile.job import load_job

#: a catalog host that resolves nowhere: contacting it would fail the check
UNREACHABLE = "postgresql+psycopg://user:pw@catalog-host.invalid:5432/catalog"


def _job(sink: dict) -> dict:
    return {
        "env": {"job.name": "offline-check", "parallelism": 1},
        "source": [{"plugin_name": "Sequence", "rows": 10}],
        "sink": [sink],
    }


@pytest.mark.parametrize(
    "sink",
    [
        pytest.param(
            {
                "plugin_name": "Iceberg",
                "catalog_name": "lake",
                "namespace": "analytics",
                "table": "events",
                "iceberg.catalog.config": {"type": "sql", "uri": UNREACHABLE, "warehouse": "file:///nowhere"},
            },
            id="iceberg",
        ),
        pytest.param(
            {
                "plugin_name": "Delta",
                "path": "s3a://bucket-that-is-not-there/events",
                "fs.s3a.endpoint": "http://catalog-host.invalid:9000",
                "fs.s3a.access.key": "key",
                "fs.s3a.secret.key": "secret",
            },
            id="delta",
        ),
    ],
)
def test_a_check_never_reads_the_sinks_table(sink: dict, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    lines = check_job(load_job(_job(sink)))
    assert lines[-1].startswith("ok: the job file is valid"), lines
    assert any("checked when the job runs" in line for line in lines), lines
