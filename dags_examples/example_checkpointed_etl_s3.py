"""(b) The daily checkpointed ETL with its checkpoints on S3, credentials from an
``aws`` connection.

Connection ``aws_checkpoints`` (standard Amazon type; endpoint_url for MinIO/Ceph/...)::

    AIRFLOW_CONN_AWS_CHECKPOINTS='{"conn_type": "aws", "login": "<access key id>",
        "password": "<secret access key>",
        "extra": {"region_name": "us-east-1", "endpoint_url": "http://127.0.0.1:9000"}}'

The config file names the bucket and namespace only; the connection supplies the
endpoint and the keys, which reach the Spark driver in a private temp file and never
appear on the command line, in logs, XCom or rendered templates.
"""

from __future__ import annotations

import os
import tempfile
from datetime import datetime, timedelta

from airflow.sdk import DAG

from airflow_provider_seatunnel_ckpt.operators import CheckpointedSparkSubmitOperator
from airflow_provider_seatunnel_ckpt.sensors import CheckpointSensor

WORKDIR = os.path.join(tempfile.gettempdir(), "seatunnel-ckpt-examples")

CONFIG = """\
seatunnel:
  engine:
    checkpoint:
      interval: 1000
      timeout: 60000
      storage:
        type: hdfs
        max-retained: 3
        plugin-config:
          storage.type: s3
          s3.bucket: s3a://{{ params.bucket }}
          namespace: /seatunnel/checkpoint/
"""

JOB = """\
env: {job.name: daily-etl-s3, parallelism: 2}
source:
  - {plugin_name: Sequence, rows: {{ params.rows }}, batch_size: 20000}
transform:
  - {plugin_name: Python, function: "airflow_provider_seatunnel_ckpt.examples.transforms:add_bucket"}
sink:
  - {plugin_name: File, path: "file://{{ params.workdir }}/output/{{ dag.dag_id }}/{{ ds }}/", format: parquet}
"""

with DAG(
    dag_id="example_checkpointed_etl_s3",
    schedule="@daily",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    params={"workdir": WORKDIR, "rows": 200_000, "bucket": "seatunnel-checkpoints"},
    tags=["seatunnel-ckpt", "example"],
):
    etl = CheckpointedSparkSubmitOperator(
        task_id="etl",
        job_file=JOB,
        config_file=CONFIG,
        storage_conn_id="aws_checkpoints",
        retries=2,
        retry_delay=timedelta(seconds=10),
    )
    final_checkpoint = CheckpointSensor(
        task_id="final_checkpoint",
        job_id="{{ ti.xcom_pull(task_ids='etl', key='job_id') }}",
        config_file=CONFIG,
        storage_conn_id="aws_checkpoints",
        wait_for_final=True,
        poke_interval=5,
        timeout=600,
    )
    etl >> final_checkpoint
