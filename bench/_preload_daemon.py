"""Prototype of a proposed engine change (recovery_bench.py --preload-prototype): a PySpark
daemon that imports what every subtask needs *before* it forks workers.

Spark starts ``python -m <spark.python.daemon.module>`` once per executor and forks one
worker per task from it. With the stock ``pyspark.daemon`` every forked worker (so every
retried subtask after a failure) imports the engine (and with it pydantic and yaml, via
engine/job.py -> config.py), and pyarrow imports pandas lazily on the first
``pa.array(ndarray)`` / compute call of the process: ~1-2 s of imports on the critical path
of region failover on this machine. Forked from a daemon that already holds them, a
worker inherits those modules.

Used as ``--conf spark.python.daemon.module=bench._preload_daemon``; the engine would
ship the same thing as a module of its own and set the key in ``build_spark``.
"""

import numpy  # noqa: F401
import pandas  # noqa: F401  (pyarrow imports it lazily on its first type check)
import pyarrow  # noqa: F401
import pyarrow.compute  # noqa: F401
import pyarrow.parquet  # noqa: F401

import airflow_provider_seatunnel_ckpt.engine.connectors  # noqa: F401
import airflow_provider_seatunnel_ckpt.engine.subtask  # noqa: F401
import airflow_provider_seatunnel_ckpt.engine.transport  # noqa: F401
import bench._idlog  # noqa: F401
import bench.workloads  # noqa: F401
from pyspark import daemon

if __name__ == "__main__":
    daemon.manager()
