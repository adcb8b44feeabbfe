"""DAGs of bench/scale_jobs.py (issue #34, "jobs at once"): ``scale_jobs_<N>`` has N
independent tasks, each a ``CheckpointedSparkSubmitOperator`` that submits one
checkpointed job (``Sequence`` -> optional ``Sql`` transform -> ``File`` parquet sink, a
checkpoint every second). A
triggered run starts all N tasks at once on the deployment's LocalExecutor.

Every job of every DAG checkpoints to the SAME storage namespace (``<workdir>/checkpoints/``)
under its own default job id (``dag.task.run_id``), and writes to its own output
directory (``<workdir>/output/<tag>/<task>/``; ``tag`` names the trigger in the run's conf).

The N of the DAGs come from ``SCALE_JOBS_COUNTS`` (the bench sets it in the deployment's
environment), e.g. ``1,2,4,8``.
"""

from __future__ import annotations

import os
from datetime import datetime

from airflow.sdk import DAG

from airflow_provider_seatunnel_ckpt.operators import CheckpointedSparkSubmitOperator

COUNTS = sorted({int(n) for n in os.environ.get("SCALE_JOBS_COUNTS", "1,2,4,8").split(",") if n.strip()})

# one storage for every job: the contention the bench is about
CONFIG = """\
seatunnel:
  engine:
    checkpoint:
      interval: 1000
      timeout: 60000
      tolerable-failure: 3
      history-size: 100000
      storage:
        type: hdfs
        max-retained: 3
        plugin-config:
          storage.type: local
          namespace: {{ params.workdir }}/checkpoints/
"""

# ``query`` (optional): a Sql transform between source and sink, the per-row work of the job
JOB = """\
env: {job.name: "scale-jobs-{{ task.task_id }}", parallelism: {{ params.parallelism }}{% if params.batch_time_ms != "" %}, batch_time_ms: {{ params.batch_time_ms }}{% endif %}}
source:
  - {plugin_name: Sequence, rows: {{ params.rows }}, batch_size: {{ params.batch_size }}}
{% if params.query %}transform:
  - {plugin_name: Sql, query: "{{ params.query }}"}
{% endif %}sink:
  - {plugin_name: File, path: "file://{{ params.workdir }}/output/{{ params.tag }}/{{ task.task_id }}/", format: parquet}
"""

for n in COUNTS:
    with DAG(
        dag_id=f"scale_jobs_{n}",
        schedule=None,
        start_date=datetime(2026, 1, 1),
        catchup=False,
        max_active_tasks=n,  # every task of a run at once
        params={
            "workdir": "/tmp/scale_jobs",
            "rows": 1_000_000,
            "batch_size": 65536,
            "parallelism": 2,
            "query": "",
            "tag": "run",
            "batch_time_ms": "",  # "": the engine's default; 0: fixed batches
        },
        tags=["seatunnel-ckpt", "bench"],
    ):
        for i in range(n):
            CheckpointedSparkSubmitOperator(task_id=f"job_{i}", job_file=JOB, config_file=CONFIG, retries=0)
