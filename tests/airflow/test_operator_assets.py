"""The sink's asset alias for mapped tasks and for recovery, in the serialized DAG and in
real ``dag.test()`` runs against the metadata DB: a ``.partial().expand()`` task declares
and feeds the same alias as a plain one, and a recovery's output reaches the DAGs
scheduled on the job it recovered.

No Spark: the jobs are already finished in checkpoint storage, so each task takes the
"nothing to run" path, which announces the output as a run of its own does.
"""

from __future__ import annotations

import json

import pytest

from airflow_provider_seatunnel_ckpt.hooks import CheckpointStorageHook
from airflow_provider_seatunnel_ckpt.storage import CheckpointKind, PipelineState

from .conftest import AIRFLOW_HOME, DAGS_FOLDER, metadata_rows, task_states

DAG_FILE = DAGS_FOLDER / "test_operator_assets_dags.py"
NAMESPACE = f"{AIRFLOW_HOME}/test_op_assets_ckpt/"
OUT = f"{AIRFLOW_HOME}/test_op_assets_out"
DAG_SOURCE = f'''
"""DAGs of tests/airflow/test_operator_assets.py (written here by the test)."""
from datetime import datetime

from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG, Asset, AssetAlias

from airflow_provider_seatunnel_ckpt.operators import CheckpointedSparkSubmitOperator, CheckpointRecoveryOperator

CONFIG = {{"checkpoint": {{"storage": {{"plugin-config": {{"storage.type": "local", "namespace": "{NAMESPACE}"}}}}}}}}
JOB = (
    "env: {{job.name: j}}\\nsource: [{{plugin_name: Sequence, rows: 10}}]\\n"
    "sink: [{{plugin_name: File, path: 'file://{OUT}/{{{{ params.part }}}}/', format: parquet}}]\\n"
)

with DAG(dag_id="test_op_assets_mapped", schedule=None, start_date=datetime(2026, 1, 1), params={{"part": "p"}}):
    CheckpointedSparkSubmitOperator.partial(task_id="etl", job_file=JOB, config_file=CONFIG).expand(
        job_id=["mapped-0", "mapped-1"]
    )

with DAG(dag_id="test_op_assets_recovery", schedule=None, start_date=datetime(2026, 1, 1),
         params={{"part": "recovered"}}):
    etl = CheckpointedSparkSubmitOperator(
        task_id="etl", job_file=JOB, config_file=CONFIG, job_id="recovered-job",
        storage_conn_id="test_op_assets_wrong_type",  # fails at once: the recovery's turn
    )
    recover = CheckpointRecoveryOperator(
        task_id="recover", job_file=JOB, config_file=CONFIG, job_id="recovered-job",
        recovered_task_id="etl", trigger_rule="one_failed",
    )
    etl >> recover

with DAG(dag_id="test_op_assets_on_alias", schedule=[AssetAlias("seatunnel-ckpt/test_op_assets_recovery.etl")],
         start_date=datetime(2026, 1, 1), is_paused_upon_creation=False):
    EmptyOperator(task_id="downstream")

with DAG(dag_id="test_op_assets_on_asset", schedule=[Asset("file://{OUT}/recovered")],
         start_date=datetime(2026, 1, 1), is_paused_upon_creation=False):
    EmptyOperator(task_id="downstream")
'''


@pytest.fixture(scope="module")
def dags(airflow_db):
    from airflow.dag_processing.dagbag import DagBag

    DAG_FILE.write_text(DAG_SOURCE)
    bag = DagBag(dag_folder=str(DAG_FILE))
    assert not bag.import_errors
    return bag


def finished(job_id: str) -> None:
    hook = CheckpointStorageHook(
        config_file={"checkpoint": {"storage": {"plugin-config": {"storage.type": "local", "namespace": NAMESPACE}}}}
    )
    hook.storage.store_checkpoint(
        PipelineState(job_id=job_id, pipeline_id=1, checkpoint_id=3, states=b"", kind=CheckpointKind.FINAL)
    )
    hook.storage.write_document(job_id, "job.json", {"status": "finished", "attempt": 1, "final_checkpoint_id": 3})


def query(sql: str, *args):
    return metadata_rows(sql, *args)


def alias_events(dag_id: str) -> list[tuple[str, str, int, str]]:
    """(alias, asset uri, map index, event extra) of the DAG's asset events through an alias."""
    return sorted(
        query(
            "SELECT asset_alias.name, asset.uri, asset_event.source_map_index, asset_event.extra FROM asset_event "
            "JOIN asset ON asset.id = asset_event.asset_id "
            "JOIN asset_alias_asset_event ON asset_alias_asset_event.event_id = asset_event.id "
            "JOIN asset_alias ON asset_alias.id = asset_alias_asset_event.alias_id "
            "WHERE asset_event.source_dag_id = ?",
            dag_id,
        )
    )


def test_a_mapped_task_declares_and_feeds_the_same_alias_as_a_plain_one(dags):
    from airflow.serialization.serialized_objects import DagSerialization

    alias = "seatunnel-ckpt/test_op_assets_mapped.etl"
    dag = dags.get_dag("test_op_assets_mapped")
    (task,) = [t["__var"] for t in DagSerialization.to_dict(dag)["dag"]["tasks"] if t["__var"]["task_id"] == "etl"]
    # what the DAG processor stores, and what the asset_alias rows come from
    assert task["_is_mapped"] and task["partial_kwargs"]["outlets"] == [
        {"__var": {"name": alias, "group": "asset"}, "__type": "asset_alias"}
    ]

    finished("mapped-0")
    finished("mapped-1")
    run = dag.test()
    assert run.state == "success"
    assert query("SELECT count(*) FROM asset_alias WHERE name = ?", alias) == [(1,)]
    events = alias_events("test_op_assets_mapped")
    assert [(a, uri, index) for a, uri, index, _ in events] == [
        (alias, f"file://{OUT}/p", 0),
        (alias, f"file://{OUT}/p", 1),
    ]
    assert [json.loads(extra)["job_id"] for *_, extra in events] == ["mapped-0", "mapped-1"]


def test_a_recovery_reaches_the_dags_scheduled_on_the_job_it_recovered(dags, monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_TEST_OP_ASSETS_WRONG_TYPE", json.dumps({"conn_type": "postgres", "host": "db"}))
    dag = dags.get_dag("test_op_assets_recovery")
    assert [o.name for o in dag.get_task("recover").outlets] == ["seatunnel-ckpt/test_op_assets_recovery.etl"]

    finished("recovered-job")
    run = dag.test()
    assert task_states("test_op_assets_recovery") == {"etl": ("failed", 1), "recover": ("success", 1)}
    assert run.state == "success"  # the leaf, the recovery, succeeded
    assert [(a, uri) for a, uri, *_ in alias_events("test_op_assets_recovery")] == [
        ("seatunnel-ckpt/test_op_assets_recovery.etl", f"file://{OUT}/recovered")
    ]
    queued = {dag_id for (dag_id,) in query("SELECT target_dag_id FROM asset_dag_run_queue")}
    assert {"test_op_assets_on_alias", "test_op_assets_on_asset"} <= queued
