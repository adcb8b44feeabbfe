"""What the suites on the networked cluster (tests/cluster/) share about a job's run: the
executors' Spark conf and the log line of a completed checkpoint."""

from __future__ import annotations

import re

COMPLETED = re.compile(r"checkpoint (\d+) \(checkpoint\) completed")
#: executors of 4 cores, one per worker while both are up; the job waits for both
SPARK_CONF = (
    "spark.cores.max=8",
    "spark.executor.cores=4",
    "spark.executor.memory=1g",
    "spark.scheduler.minRegisteredResourcesRatio=1.0",
    "spark.scheduler.maxRegisteredResourcesWaitingTime=60s",
    "spark.task.maxFailures=40",
)
