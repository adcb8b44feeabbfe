"""Chaos, exactly-once, into every transactional sink at once: one Sequence source feeds
File (local parquet), Jdbc (PostgreSQL, prepared transactions: appended, and upserted by
``primary_keys``), Kafka (``EXACTLY_ONCE``, a real broker), Iceberg (sqlite catalog, data on
moto's S3) and Delta (local disk) in one checkpointed job, parallelism 2, under one kill
schedule (tests/support/chaos.py ``chaos_runs``): PySpark worker kills, a PostgreSQL
crash-restart and driver SIGKILLs, then reruns with ``--restore latest`` until one finishes.

Then every id is counted in every sink, each by a reader of committed data (pyarrow, SQL,
a ``read_committed`` consumer, the table formats' own libraries and DuckDB): each exactly
once. Every sink commits its part of each checkpoint, so one schedule proves all of their
two-phase commits, and the failure message names the sink whose count broke. It replaced
the per-connector chaos runs of these sinks (issue 52, item 7); the defects it is shown to
catch are in docs/testing.md ("One chaos job, every sink").
"""

from __future__ import annotations

import random
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.connectors import load_sink
from airflow_provider_seatunnel_ckpt.connectors.kafka.transactions import AUDIT_ENV
from tests.integration.engine.conftest import s3_options
from tests.integration.jdbc.conftest import PG_OPTIONS, Database, prepared_gids, variables_file
from tests.integration.lakehouse.conftest import Warehouse, duckdb_lake
from tests.integration.lakehouse.formats import FORMATS
from tests.servers.kafka import claimed_while_prepared
from tests.servers.kafka_records import read_ids
from tests.support.chaos import ChaosRecord, chaos_runs
from tests.support.kafka import new_topic
from tests.support.postgres import missing_ranges, restart_postgres
from tests.support.workspace import Tally, Workspace, completed_ids, read_output, tally

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

ROWS = 200_000
PARTITIONS = 4
JOB_ID = "chaos-every-sink"


@dataclass
class SinkUnderChaos:
    name: str
    options: dict[str, Any]
    #: every committed id, once per row, as a reader of committed data sees them
    ids: Callable[[], Any]


@pytest.fixture
def db(postgres_server: Any, pg_database: str) -> Database:
    return Database(postgres_server, pg_database)


def _sinks(workspace: Workspace, db: Database, kafka: Any, topic: str, s3: Any) -> list[SinkUnderChaos]:
    bucket = s3.create_bucket(f"lake-{uuid.uuid4().hex[:12]}")
    on_s3 = Warehouse("s3", f"s3://{bucket}/warehouse", workspace.root / "catalog.db", s3_options(s3))
    local = Warehouse("local", f"file://{workspace.root}/warehouse", workspace.root / "catalog.db", {})
    iceberg = FORMATS["iceberg"].options(on_s3, table="chaos")
    delta = FORMATS["delta"].options(local, table="chaos")

    def table(name: str) -> Callable[[], list[int]]:
        return lambda: [row[0] for row in db.sql(f"SELECT id FROM {name}")]

    return [
        SinkUnderChaos(
            "File",
            {"plugin_name": "File", "path": f"file://{workspace.output}/", "format": "parquet"},
            lambda: read_output(f"file://{workspace.output}/", columns=["id"]).column("id").combine_chunks(),
        ),
        SinkUnderChaos("Jdbc", {"plugin_name": "Jdbc", **PG_OPTIONS, "table": "public.appended"}, table("appended")),
        SinkUnderChaos(
            "Jdbc-keys",
            {"plugin_name": "Jdbc", **PG_OPTIONS, "table": "public.upserted", "primary_keys": ["id"]},
            table("upserted"),
        ),
        SinkUnderChaos(
            "Kafka",
            {
                "plugin_name": "Kafka",
                "bootstrap.servers": kafka.bootstrap_servers,
                "topic": topic,
                "semantics": "EXACTLY_ONCE",
            },
            lambda: read_ids(kafka, topic, PARTITIONS),  # read_committed
        ),
        SinkUnderChaos("Iceberg", iceberg, lambda: FORMATS["iceberg"].ids(load_sink(iceberg))),
        SinkUnderChaos("Delta", delta, lambda: FORMATS["delta"].ids(load_sink(delta))),
    ]


def test_one_source_into_every_sink_under_one_kill_schedule(
    workspace: Workspace,
    db: Database,
    kafka_broker: Any,
    s3_process_server: Any,
    chaos: tuple[random.Random, ChaosRecord],
) -> None:
    rng, record = chaos
    started = time.monotonic()
    topic = new_topic(kafka_broker, PARTITIONS)
    sinks = _sinks(workspace, db, kafka_broker, topic, s3_process_server)
    job = workspace.write_job(
        {
            "plugin_name": "Sequence",
            "rows": ROWS,
            "rows_per_second": 10_000,
            "batch_size": 2_000,
            "plugin_output": "rows",
        },
        [{**sink.options, "plugin_input": "rows"} for sink in sinks],
    )
    config = workspace.write_config(interval=1000, tolerable_failure=10, max_retained=1000)
    audit = workspace.root / "transactions.jsonl"
    workspace.env[AUDIT_ENV] = str(audit)
    logs = chaos_runs(
        workspace,
        record,
        rng,
        job,
        config,
        JOB_ID,
        "--variables",
        str(variables_file(db, workspace.root)),
        disrupt=lambda driver: restart_postgres(db, driver, record),
    )
    record.elapsed_s = time.monotonic() - started

    counts: dict[str, Tally] = {sink.name: tally(pa.array(sink.ids(), pa.int64()), ROWS) for sink in sinks}
    record.rows = sum(t.rows for t in counts.values())
    record.lost = sum(t.lost for t in counts.values())
    record.duplicated = sum(t.duplicated for t in counts.values())
    broken = {name: str(t) for name, t in counts.items() if not t.exactly_once}
    assert not broken, (
        f"seed {record.seed}: not exactly once in {sorted(broken)}: {broken}; "
        f"Jdbc missing id ranges: {missing_ranges(db, 'appended', ROWS)}, "
        f"Jdbc-keys: {missing_ranges(db, 'upserted', ROWS)}; kill points: {record.kill_points}; "
        f"drivers' logs in {workspace.logs}"
    )
    assert len(record.kill_points) >= 5, record.kill_points
    assert prepared_gids(db) == [], "prepared transactions left behind"
    # no transactional id claimed while its transaction waited, prepared, for the driver's commit
    hazards, commits = claimed_while_prepared(audit)
    assert commits > 0 and not hazards, f"{commits} Kafka commits checked; claimed while prepared: {hazards[:5]}"
    _check_table_commits(sinks, config, logs)


def _check_table_commits(sinks: list[SinkUnderChaos], config: Path, logs: list[str]) -> None:
    """DuckDB reads each table as its format's library does; every commit of the job is one
    completed checkpoint (none empty), labelled with the newest epoch in it: distinct and
    increasing (a commit of checkpoint n holds epoch n-1 alone when checkpoint n-1 was
    declined and epoch n wrote nothing new)."""
    completed = set(completed_ids(config, JOB_ID)) | {
        int(m) for text in logs for m in re.findall(r"checkpoint (\d+) \((?:checkpoint|final)\) completed", text)
    }
    for sink in sinks:
        if sink.name.lower() not in FORMATS:
            continue
        adapter = FORMATS[sink.name.lower()]
        table = load_sink(sink.options)
        duck = duckdb_lake({k: v for k, v in sink.options.items() if k.startswith("fs.s3a.")})
        assert duck.execute(
            f"SELECT count(*), count(DISTINCT id), min(id), max(id) FROM {adapter.duckdb_scan(table)}"
        ).fetchall() == [(ROWS, ROWS, 0, ROWS - 1)], sink.name
        if adapter.name == "iceberg":  # a Delta commit of ours always has add actions
            ours = [s.summary for s in table.load_table().snapshots() if s.summary.get("seatunnel.job-id") == JOB_ID]
            assert all(int(summary["added-records"]) > 0 for summary in ours), sink.name
        checkpoints = [int(c) for c in adapter.commits(table, JOB_ID)]
        assert checkpoints == sorted(set(checkpoints)) and checkpoints, (sink.name, checkpoints)
        assert len(checkpoints) <= len(completed) and max(checkpoints) <= max(completed), (
            sink.name,
            checkpoints,
            completed,
        )
