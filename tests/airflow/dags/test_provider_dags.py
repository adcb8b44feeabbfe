"""DAGs the Airflow tests run with dag.test(): copied into the test DAGS_FOLDER."""

from __future__ import annotations

from datetime import datetime, timedelta

from airflow.sdk import DAG

from airflow_provider_seatunnel_ckpt.operators import CheckpointedSparkSubmitOperator, CheckpointRecoveryOperator
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

# YARN cluster mode (tests/airflow/test_operator_yarn.py): the job and its checkpoint
# configuration come as params, the connection spark_yarn from the test's environment.
# One application attempt, so a killed driver fails spark-submit and the task's retry
# resumes the job.
with DAG(
    dag_id="test_yarn_cluster_retry",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    params={"job": JOB, "config": CONFIG, "python": "python3", "job_id": "unset"},
):
    CheckpointedSparkSubmitOperator(
        task_id="etl",
        conn_id="spark_yarn",
        job_id="{{ params.job_id }}",
        job_file="{{ params.job }}",
        config_file="{{ params.config }}",
        conf={
            "spark.driver.memory": "512m",  # the driver's container and two executors fit the NodeManager
            "spark.pyspark.python": "{{ params.python }}",
            "spark.yarn.maxAppAttempts": "1",
        },
        retries=1,
        retry_delay=timedelta(seconds=1),
    )
