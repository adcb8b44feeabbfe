"""What the suites on the networked cluster (tests/cluster/) share about a job's run: the
executors' Spark conf and the log line of a completed checkpoint."""

from __future__ import annotations

import re

COMPLETED = re.compile(r"checkpoint (\d+) \(checkpoint\) completed")
#: executors of 2 cores, one per worker while both are up, and the job waits for both: a
#: parallelism-4 job then has to spread over the two workers. (With one 4-core executor
#: per worker, Spark may place every subtask on one of them: a fresh-clone CI at a load of
#: 15 found all four on worker-b.) When a worker is lost, the master starts a second
#: executor on the other one (4 cores, 3g), where the lost subtasks are retried.
SPARK_CONF = (
    "spark.cores.max=4",
    "spark.executor.cores=2",
    "spark.executor.memory=1g",
    "spark.scheduler.minRegisteredResourcesRatio=1.0",
    "spark.scheduler.maxRegisteredResourcesWaitingTime=150s",
    "spark.task.maxFailures=40",
)
