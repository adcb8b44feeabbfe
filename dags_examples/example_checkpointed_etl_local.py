"""(a) A daily checkpointed ETL: local checkpoint storage, local Spark, fully offline.

Needs a Spark connection for local mode, e.g.
``AIRFLOW_CONN_SPARK_DEFAULT='{"conn_type": "spark", "host": "local[*]"}'``, and
``spark-submit`` on PATH. Checkpoints and output go under the ``workdir`` param.

A retry of ``etl`` resumes from the latest completed checkpoint; the sensor then
confirms the job's final checkpoint (its return value is the checkpoint's statistics).
"""

from __future__ import annotations

import os
import tempfile
from datetime import datetime, timedelta

from airflow.sdk import DAG

from airflow_provider_seatunnel_ckpt.operators import CheckpointedSparkSubmitOperator
from airflow_provider_seatunnel_ckpt.sensors import CheckpointSensor

WORKDIR = os.path.join(tempfile.gettempdir(), "seatunnel-ckpt-examples")

# seatunnel.yaml, as text; a path to a file works the same way.
CONFIG = """\
seatunnel:
  engine:
    checkpoint:
      interval: 1000
      timeout: 60000
      tolerable-failure: 1
      storage:
        type: hdfs
        max-retained: 3
        plugin-config:
          storage.type: local
          namespace: {{ params.workdir }}/checkpoints/
"""

# The job, SeaTunnel style; one output directory per logical date.
JOB = """\
env: {job.name: daily-etl, parallelism: 2}
source:
  - {plugin_name: Sequence, rows: {{ params.rows }}, batch_size: 20000}
transform:
  - {plugin_name: Python, function: "airflow_provider_seatunnel_ckpt.examples.transforms:add_bucket"}
sink:
  - {plugin_name: File, path: "file://{{ params.workdir }}/output/{{ dag.dag_id }}/{{ ds }}/", format: parquet}
"""

with DAG(
    dag_id="example_checkpointed_etl_local",
    schedule="@daily",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    params={"workdir": WORKDIR, "rows": 200_000},
    tags=["seatunnel-ckpt", "example"],
):
    etl = CheckpointedSparkSubmitOperator(
        task_id="etl",
        job_file=JOB,
        config_file=CONFIG,
        retries=2,
        retry_delay=timedelta(seconds=10),
    )
    final_checkpoint = CheckpointSensor(
        task_id="final_checkpoint",
        job_id="{{ ti.xcom_pull(task_ids='etl', key='job_id') }}",
        config_file=CONFIG,
        wait_for_final=True,
        poke_interval=5,
        timeout=600,
        mode="reschedule",
    )
    etl >> final_checkpoint
