"""A DAG that watches another DAG's checkpointed job: one deferrable ``CheckpointSensor``
waiting for the job's final checkpoint, started while the job still runs (what a
downstream team's DAG does). The deployment suite triggers it beside example (c), so the
sensor sits in the real triggerer through the job's failure and recovery.

Not an example for ``airflow dags test``: that runs a deferred trigger inline and would
wait here forever for a job it never starts."""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import DAG

from airflow_provider_seatunnel_ckpt.sensors import CheckpointSensor

CONFIG = """\
seatunnel:
  engine:
    checkpoint:
      storage:
        type: hdfs
        plugin-config:
          storage.type: local
          namespace: {{ params.workdir }}/checkpoints/
"""

with DAG(
    dag_id="watch_job_checkpoints",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    params={"job_id": "", "workdir": ""},
    tags=["seatunnel-ckpt", "test"],
):
    CheckpointSensor(
        task_id="wait_for_final",
        job_id="{{ params.job_id }}",
        config_file=CONFIG,
        wait_for_final=True,
        deferrable=True,
        poke_interval=1,
        timeout=600,
    )
