"""The example DAGs, run for real: ``airflow dags test`` with local[2] Spark.

(a) happy path; (c) a job that fails mid-way and is resumed from its latest completed
checkpoint by the task's retry, or by CheckpointRecoveryOperator. For (c) the checks
come from checkpoint storage (attempt records, manifest statistics) and from the
committed output, id by id: the second attempt restored from a checkpoint, did not
reprocess what the first committed, and every row landed exactly once.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from airflow_provider_seatunnel_ckpt.hooks import get_checkpoint_hook
from tests import example_runs
from tests.example_runs import committed_ids

from .conftest import (
    AIRFLOW_HOME,
    DAGS_TEST_PYTEST_TIMEOUT,
    EXAMPLE_DAGS,
    airflow_dags_test,
    output,
    task_states,
    xcom_values,
)

pytestmark = pytest.mark.timeout(DAGS_TEST_PYTEST_TIMEOUT)

EXAMPLES = {
    "example_checkpointed_etl_local",
    "example_checkpointed_etl_s3",
    "example_fail_and_retry",
    "example_fail_and_recover",
    "example_postgres_to_lake",
    "example_lakehouse",
}


def test_dagbag_imports_every_example_dag_without_errors():
    from airflow.dag_processing.dagbag import DagBag
    from airflow.serialization.serialized_objects import DagSerialization

    bag = DagBag(dag_folder=str(EXAMPLE_DAGS))
    assert bag.import_errors == {}
    assert set(bag.dag_ids) == EXAMPLES
    for dag in bag.dags.values():
        dag.validate()
        DagSerialization.serialize_dag(dag)  # what the DAG processor stores


def local_storage(workdir: Path):
    """The examples' checkpoint storage, through the same hook the operators use."""
    return get_checkpoint_hook(
        config_file={
            "checkpoint": {
                "storage": {"plugin-config": {"storage.type": "local", "namespace": f"{workdir}/checkpoints/"}}
            }
        }
    )


@pytest.mark.slow
@pytest.mark.spark
def test_local_etl_happy_path(airflow_db, tmp_path):
    rows = 100_000
    done = airflow_dags_test("example_checkpointed_etl_local", {"workdir": str(tmp_path), "rows": rows})
    assert done.returncode == 0, output(done)
    assert task_states("example_checkpointed_etl_local") == {"etl": ("success", 1), "final_checkpoint": ("success", 1)}

    xcoms = xcom_values("example_checkpointed_etl_local")
    job_id = xcoms[("etl", "job_id")]
    result = xcoms[("etl", "return_value")]
    assert job_id.startswith("example_checkpointed_etl_local.etl.manual__")
    assert result["status"] == "finished" and result["ran"] is True
    assert result["final_checkpoint_id"] == xcoms[("etl", "final_checkpoint_id")]
    assert result["final_checkpoint"]["kind"] == "final"
    sensed = xcoms[("final_checkpoint", "return_value")]
    assert (sensed["checkpoint_id"], sensed["kind"]) == (result["final_checkpoint_id"], "final")

    hook = local_storage(tmp_path)
    assert hook.get_job_status(job_id)["status"] == "finished"
    assert hook.verify(job_id) == []
    (day,) = (tmp_path / "output" / "example_checkpointed_etl_local").iterdir()
    ids = sorted(i for part in committed_ids(day).values() for i in part)
    assert ids == list(range(rows))
    # the output, as an asset event on the task's alias
    with sqlite3.connect(AIRFLOW_HOME / "airflow.db") as db:
        events = db.execute(
            "SELECT asset.uri, asset_event.extra FROM asset_event JOIN asset ON asset.id = asset_event.asset_id "
            "WHERE asset_event.source_dag_id = ?",
            ("example_checkpointed_etl_local",),
        ).fetchall()
    assert [(uri, json.loads(extra)["job_id"]) for uri, extra in events if uri == f"file://{day}"] == [
        (f"file://{day}", job_id)
    ], events


def check_resumed_exactly_once(workdir: Path, dag_id: str) -> None:
    example_runs.check_resumed_exactly_once(workdir, dag_id, xcom_values(dag_id)[("etl", "job_id")])


@pytest.mark.slow
@pytest.mark.spark
def test_failed_run_is_resumed_by_the_task_retry(airflow_db, tmp_path):
    done = airflow_dags_test("example_fail_and_retry", {"workdir": str(tmp_path)})
    assert done.returncode == 0, output(done)
    assert task_states("example_fail_and_retry") == {"etl": ("success", 2), "final_checkpoint": ("success", 1)}
    assert "resuming from checkpoint" in done.stdout + done.stderr
    check_resumed_exactly_once(tmp_path, "example_fail_and_retry")


@pytest.mark.slow
@pytest.mark.spark
def test_failed_run_is_resumed_by_the_recovery_operator(airflow_db, tmp_path):
    done = airflow_dags_test("example_fail_and_recover", {"workdir": str(tmp_path)})
    assert done.returncode == 0, output(done)
    assert task_states("example_fail_and_recover") == {
        "etl": ("failed", 1),
        "recover": ("success", 1),
        "final_checkpoint": ("success", 1),
    }
    check_resumed_exactly_once(tmp_path, "example_fail_and_recover")
    recovered = xcom_values("example_fail_and_recover")[("recover", "return_value")]
    assert recovered["status"] == "finished" and [a["outcome"] for a in recovered["attempts"]] == ["failed", "finished"]


@pytest.mark.slow
@pytest.mark.spark
def test_postgres_to_lake_is_recovered_and_exactly_once(airflow_db, tmp_path, postgres_server, pg_database):
    """Example (d): credentials from a ``postgres`` connection, the first attempt fails
    mid-copy, the recovery operator resumes it; every row once; the password nowhere."""
    import pyarrow.parquet as pq

    rows = 300_000
    postgres_server.execute(
        "CREATE TABLE orders (id bigint PRIMARY KEY, amount numeric(10, 2), note text)", database=pg_database
    )
    postgres_server.execute(
        f"INSERT INTO orders SELECT g, g / 3.0, 'order ' || g FROM generate_series(0, {rows - 1}) g",
        database=pg_database,
    )
    connection = {
        "conn_type": "postgres",
        "host": postgres_server.host,
        "port": postgres_server.port,
        "login": "postgres",
        "password": postgres_server.password,
        "schema": pg_database,
    }
    conf = {"workdir": str(tmp_path), "fail_after_rows": 100_000, "checkpoint_interval_ms": 100, "fetch_size": 5_000}
    # lineage through the OpenLineage provider's file transport; the file is in AIRFLOW_HOME,
    # so the secret check below reads it too
    lineage = AIRFLOW_HOME / "openlineage-example-d.jsonl"
    transport = {"type": "file", "log_file_path": str(lineage), "append": True}
    done = airflow_dags_test(
        "example_postgres_to_lake",
        conf,
        env={
            "AIRFLOW_CONN_POSTGRES_DEFAULT": json.dumps(connection),
            "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps(transport),
        },
    )
    assert done.returncode == 0, output(done)
    assert task_states("example_postgres_to_lake") == {
        "copy": ("failed", 1),
        "recover": ("success", 1),
        "final_checkpoint": ("success", 1),
    }

    xcoms = xcom_values("example_postgres_to_lake")
    job_id = xcoms[("copy", "job_id")]
    first, second = local_storage(tmp_path).get_attempts(job_id)
    assert first["outcome"] == "failed" and "FailOnceError" in first["error"]
    assert second["outcome"] == "finished" and second["restored_from"] == first["last_checkpoint_id"]

    (run_dir,) = (tmp_path / "lake" / "public.orders").iterdir()
    ids = sorted(
        i
        for path in run_dir.glob("part-*.parquet")
        for i in pq.read_table(path, columns=["id"]).column("id").to_pylist()
    )
    assert ids == list(range(rows)), "not every row exactly once"

    # OpenLineage: the failed copy and the recovery both read the table and write the run's directory
    events = [json.loads(line) for line in lineage.read_text().splitlines() if line.strip()]
    ended = {(e["job"]["name"], e["eventType"]): e for e in events if e["eventType"] in ("COMPLETE", "FAIL")}
    failed, recovered = (
        ended[("example_postgres_to_lake.copy", "FAIL")],
        ended[("example_postgres_to_lake.recover", "COMPLETE")],
    )
    source = {
        "namespace": f"postgres://{postgres_server.host}:{postgres_server.port}",
        "name": f"{pg_database}.public.orders",
    }
    sink = {"namespace": "file", "name": str(run_dir)}
    for event in (failed, recovered):
        assert [{k: d[k] for k in ("namespace", "name")} for d in event["inputs"]] == [source]
        assert [{k: d[k] for k in ("namespace", "name")} for d in event["outputs"]] == [sink]
    assert failed["run"]["facets"]["seatunnelCheckpoint"]["job_id"] == job_id
    checkpoint = recovered["run"]["facets"]["seatunnelCheckpoint"]
    assert (checkpoint["job_id"], checkpoint["status"], checkpoint["attempt"]) == (job_id, "finished", 2)
    assert checkpoint["restored_from"] == first["last_checkpoint_id"]
    assert checkpoint["final_checkpoint_id"] == xcoms[("recover", "final_checkpoint_id")]

    secret = postgres_server.password
    places = {
        "task log": done.stdout + done.stderr,
        "XCom": json.dumps([[*k, v] for k, v in xcoms.items()], default=str),
    }
    with sqlite3.connect(AIRFLOW_HOME / "airflow.db") as db:
        places["rendered template fields"] = json.dumps(
            db.execute(
                "SELECT rendered_fields FROM rendered_task_instance_fields WHERE dag_id = 'example_postgres_to_lake'"
            ).fetchall()
        )
    for path in AIRFLOW_HOME.rglob("*"):
        # not the metadata DB's files (read above through SQL): closing a file this process
        # opened drops every POSIX lock it holds on that file, SQLite's included, and another
        # process then deletes the WAL under Airflow's open connections here
        if path.is_file() and path.suffix not in (".zip", ".py") and not path.name.startswith("airflow.db"):
            places[f"file {path.relative_to(AIRFLOW_HOME)}"] = path.read_bytes().decode("utf-8", "replace")
    assert not [where for where, text in places.items() if secret in text]


@pytest.mark.slow
@pytest.mark.spark
def test_lakehouse_example_is_recovered_into_one_iceberg_table(airflow_db, tmp_path, postgres_server, pg_database):
    """Example (e): Postgres -> Iceberg; the first attempt fails mid-copy, the recovery
    operator resumes it; every row once in the table, read with pyiceberg; one snapshot per
    completed checkpoint, none of them twice."""
    from pyiceberg.catalog import load_catalog

    rows = 200_000
    postgres_server.execute("CREATE TABLE orders (id bigint PRIMARY KEY, amount numeric(10, 2))", database=pg_database)
    postgres_server.execute(
        f"INSERT INTO orders SELECT g, g / 3.0 FROM generate_series(0, {rows - 1}) g", database=pg_database
    )
    connection = {
        "conn_type": "postgres",
        "host": postgres_server.host,
        "port": postgres_server.port,
        "login": "postgres",
        "password": postgres_server.password,
        "schema": pg_database,
    }
    conf = {"workdir": str(tmp_path), "fail_after_rows": 80_000, "checkpoint_interval_ms": 200, "fetch_size": 5_000}
    done = airflow_dags_test("example_lakehouse", conf, env={"AIRFLOW_CONN_POSTGRES_DEFAULT": json.dumps(connection)})
    assert done.returncode == 0, output(done)
    assert task_states("example_lakehouse") == {
        "copy": ("failed", 1),
        "recover": ("success", 1),
        "final_checkpoint": ("success", 1),
    }
    job_id = xcom_values("example_lakehouse")[("copy", "job_id")]
    first, second = local_storage(tmp_path).get_attempts(job_id)
    assert first["outcome"] == "failed" and second["restored_from"] == first["last_checkpoint_id"]

    catalog = load_catalog("lake", type="sql", uri=f"sqlite:///{tmp_path}/lake/catalog.db")
    table = catalog.load_table("shop.orders")
    ids = sorted(table.scan(selected_fields=("id",)).to_arrow().column("id").to_pylist())
    assert ids == list(range(rows)), "not every row exactly once"
    checkpoints = [
        s.summary["seatunnel.checkpoint-id"] for s in table.snapshots() if s.summary.get("seatunnel.job-id") == job_id
    ]
    assert len(checkpoints) == len(set(checkpoints)) >= 2
    assert [str(f.transform) for f in table.spec().fields] == ["bucket[8]"]
