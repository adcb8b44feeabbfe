"""DAGs the Airflow tests run with dag.test(): copied into the test DAGS_FOLDER."""

from __future__ import annotations

from datetime import datetime, timedelta

from airflow.sdk import DAG

from airflow_provider_seatunnel_ckpt.operators import CheckpointRecoveryOperator
from airflow_provider_seatunnel_ckpt.sensors import CheckpointSensor

CONFIG = """\
checkpoint:
  tolerable-failure: 0
  storage:
    type: hdfs
    plugin-config:
      storage.type: local
      namespace: {{ params.namespace }}
"""

JOB = """\
env: {job.name: never-runs, parallelism: 1}
source: [{plugin_name: Sequence, rows: 10}]
sink: [{plugin_name: Console}]
"""

with DAG(
    dag_id="test_sensor_deferrable",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    params={"namespace": "/tmp/unset/", "job_id": "unset"},
):
    CheckpointSensor(
        task_id="wait_final",
        job_id="{{ params.job_id }}",
        config_file=CONFIG,
        wait_for_final=True,
        deferrable=True,
        poke_interval=1,
        timeout=120,
    )

with DAG(
    dag_id="test_recovery_gives_up",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    params={"namespace": "/tmp/unset/", "job_id": "unset"},
):
    CheckpointRecoveryOperator(
        task_id="recover",
        job_file=JOB,
        config_file=CONFIG,
        job_id="{{ params.job_id }}",
        tolerable_failure=2,
        retries=3,
        retry_delay=timedelta(seconds=1),
    )

with DAG(
    dag_id="test_sensor_reschedule",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    params={"namespace": "/tmp/unset/", "job_id": "unset"},
):
    CheckpointSensor(
        task_id="wait_newer",
        job_id="{{ params.job_id }}",
        config_file=CONFIG,
        newer_than="{{ 1 }}",
        mode="reschedule",
        poke_interval=1,
        timeout=120,
    )
