"""(e) PostgreSQL table -> Apache Iceberg table, exactly once, one snapshot per checkpoint.

The job reads ``params.table`` with the ``Jdbc`` source (key ranges, 2 subtasks; the
credentials come from the ``postgres_default`` connection, as in example (d)) and writes
it into the Iceberg table ``params.namespace``.``params.iceberg_table`` with the
``Iceberg`` sink: a SQL catalog in a sqlite file and a warehouse directory under
``params.workdir`` (point ``iceberg.catalog.config`` at a PostgreSQL or REST catalog and an
``s3://`` warehouse for a cluster). Every completed checkpoint becomes one snapshot whose
summary names the job and the checkpoint (``seatunnel.job-id``, ``seatunnel.checkpoint-id``).

If the copy fails, ``CheckpointRecoveryOperator`` resumes it from the latest completed
checkpoint; the restored checkpoint's commit is replayed and skipped when the table
already holds it, so no row lands twice. ``CheckpointSensor`` waits for the final
checkpoint. Set ``params.fail_after_rows`` to make the first attempt fail on purpose.
"""

from __future__ import annotations

import os
import re
import tempfile
from datetime import datetime, timedelta

from airflow.sdk import DAG

from airflow_provider_seatunnel_ckpt.operators import CheckpointedSparkSubmitOperator, CheckpointRecoveryOperator
from airflow_provider_seatunnel_ckpt.sensors import CheckpointSensor

WORKDIR = os.path.join(tempfile.gettempdir(), "seatunnel-ckpt-examples")

CONFIG = """\
seatunnel:
  engine:
    checkpoint:
      interval: {{ params.checkpoint_interval_ms }}
      timeout: 60000
      tolerable-failure: 2
      storage:
        type: hdfs
        max-retained: 10
        plugin-config:
          storage.type: local
          namespace: {{ params.workdir }}/checkpoints/
"""

JOB = """\
env:
  job.name: postgres-to-iceberg
  parallelism: 2
  batch_size: 5000
{%- if params.fail_after_rows %}
  spark.task.maxFailures: 1
  spark.executorEnv.SEATUNNEL_CKPT_FAIL_ONCE_MARKER: "{{ params.workdir }}/markers/{{ dag.dag_id }}-{{ run_id | path_safe }}"
  spark.executorEnv.SEATUNNEL_CKPT_FAIL_ONCE_AFTER_ROWS: "{{ params.fail_after_rows }}"
{%- endif %}
source:
  - plugin_name: Jdbc
    url: "${PG_URL}"
    user: "${PG_USER}"
    password: "${PG_PASSWORD}"
    table: "{{ params.table }}"
    partition_num: 4
    fetch_size: {{ params.fetch_size }}
{%- if params.fail_after_rows %}
transform:
  - {plugin_name: Python, function: "airflow_provider_seatunnel_ckpt.examples.fail_once:fail_once"}
{%- endif %}
sink:
  - plugin_name: Iceberg
    catalog_name: lake
    namespace: "{{ params.namespace }}"
    table: "{{ params.iceberg_table }}"
    iceberg.catalog.config:
      type: sql
      uri: "sqlite:///{{ params.workdir }}/lake/catalog.db"
      warehouse: "file://{{ params.workdir }}/lake/warehouse"
    partition_by: ["bucket(8, id)"]
"""


def path_safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=-]", "-", text)


PARAMS = {
    "workdir": WORKDIR,
    "table": "public.orders",
    "namespace": "shop",
    "iceberg_table": "orders",
    "fetch_size": 20_000,
    "checkpoint_interval_ms": 1000,
    "fail_after_rows": 0,
}

with DAG(
    dag_id="example_lakehouse",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    params=PARAMS,
    user_defined_filters={"path_safe": path_safe},
    tags=["seatunnel-ckpt", "example", "postgres", "iceberg"],
) as example_lakehouse:
    copy = CheckpointedSparkSubmitOperator(
        task_id="copy",
        job_file=JOB,
        config_file=CONFIG,
        connections={"PG": "postgres_default"},
        retries=0,
    )
    recover = CheckpointRecoveryOperator(
        task_id="recover",
        job_file=JOB,
        config_file=CONFIG,
        connections={"PG": "postgres_default"},
        job_id="{{ ti.xcom_pull(task_ids='copy', key='job_id') }}",
        # announce on copy's asset alias, so DAGs scheduled on the job's output run after a recovery too
        recovered_task_id="copy",
        trigger_rule="one_failed",
        retries=1,
        retry_delay=timedelta(seconds=1),
    )
    final_checkpoint = CheckpointSensor(
        task_id="final_checkpoint",
        job_id="{{ ti.xcom_pull(task_ids='copy', key='job_id') }}",
        config_file=CONFIG,
        wait_for_final=True,
        deferrable=True,
        poke_interval=2,
        timeout=600,
        trigger_rule="none_failed",
    )
    copy >> recover >> final_checkpoint
