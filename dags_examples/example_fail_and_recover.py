"""(c) Fail mid-way, then resume from the latest completed checkpoint: two DAGs.

Both run a job whose ``fail_once`` transform raises once, after some rows (and after
some checkpoints completed). The job sets ``spark.task.maxFailures: 1``, so Spark does not
retry the failed task and the failure ends the run attempt; the job is then resumed at the
Airflow level:

* ``example_fail_and_retry``: the task's own retry resumes it;
* ``example_fail_and_recover``: the task has no retries; ``CheckpointRecoveryOperator``
  (``trigger_rule="one_failed"``) resumes it, within ``tolerable-failure``.

Either way a deferrable ``CheckpointSensor`` then waits for the final checkpoint, and
the output holds every row exactly once. Without that setting (4 attempts by default, with
a local master too) the same failure is absorbed inside the run by the engine's region
failover instead.
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
      interval: 500
      timeout: 60000
      tolerable-failure: 2
      storage:
        type: hdfs
        max-retained: 10
        plugin-config:
          storage.type: local
          namespace: {{ params.workdir }}/checkpoints/
"""

# The marker file is per DAG run: the first attempt of each run fails once.
JOB = """\
env:
  job.name: fail-and-recover
  parallelism: 2
  # no task retries: the failure ends the run attempt, so Airflow resumes it
  spark.task.maxFailures: 1
  spark.executorEnv.SEATUNNEL_CKPT_FAIL_ONCE_MARKER: "{{ params.workdir }}/markers/{{ dag.dag_id }}-{{ run_id | path_safe }}"
  spark.executorEnv.SEATUNNEL_CKPT_FAIL_ONCE_AFTER_ROWS: "{{ params.fail_after_rows }}"
source:
  - {plugin_name: Sequence, rows: {{ params.rows }}, batch_size: 5000, rows_per_second: {{ params.rows_per_second }}}
transform:
  - {plugin_name: Python, function: "airflow_provider_seatunnel_ckpt.examples.fail_once:fail_once"}
sink:
  - {plugin_name: File, path: "file://{{ params.workdir }}/output/{{ dag.dag_id }}/{{ run_id | path_safe }}/", format: parquet}
"""


def path_safe(text: str) -> str:
    """A run id as a file name: manual__2026-01-01T00:00:00+00:00 -> manual__2026-01-01T00-00-00-00-00."""
    return re.sub(r"[^A-Za-z0-9_.=-]", "-", text)


# 5 s of reading per subtask before the failure at the rate, 8 s in all: time for
# several checkpoints (every 500 ms) to complete first, on a busy machine too
PARAMS = {"workdir": WORKDIR, "rows": 480_000, "rows_per_second": 60_000, "fail_after_rows": 150_000}


def _fail_then_resume(dag_id: str, recover: bool) -> DAG:
    with DAG(
        dag_id=dag_id,
        schedule=None,
        start_date=datetime(2026, 1, 1),
        catchup=False,
        params=PARAMS,
        user_defined_filters={"path_safe": path_safe},
        tags=["seatunnel-ckpt", "example"],
    ) as dag:
        etl = CheckpointedSparkSubmitOperator(
            task_id="etl",
            job_file=JOB,
            config_file=CONFIG,
            retries=0 if recover else 1,
            retry_delay=timedelta(seconds=1),
        )
        final_checkpoint = CheckpointSensor(
            task_id="final_checkpoint",
            job_id="{{ ti.xcom_pull(task_ids='etl', key='job_id') }}",
            config_file=CONFIG,
            wait_for_final=True,
            deferrable=True,
            poke_interval=2,
            timeout=600,
            trigger_rule="none_failed",
        )
        if recover:
            recovery = CheckpointRecoveryOperator(
                task_id="recover",
                job_file=JOB,
                config_file=CONFIG,
                job_id="{{ ti.xcom_pull(task_ids='etl', key='job_id') }}",
                # announce on etl's asset alias, so DAGs scheduled on the job's output run after a recovery too
                recovered_task_id="etl",
                trigger_rule="one_failed",
                retries=1,
                retry_delay=timedelta(seconds=1),
            )
            etl >> recovery >> final_checkpoint
        else:
            etl >> final_checkpoint
    return dag


example_fail_and_retry = _fail_then_resume("example_fail_and_retry", recover=False)
example_fail_and_recover = _fail_then_resume("example_fail_and_recover", recover=True)
