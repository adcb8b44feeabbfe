"""PySpark's Python daemon, with what every subtask needs imported before it forks.

Spark starts one daemon per executor (``spark.python.daemon.module``) and forks a Python
worker from it for each task. With the stock ``pyspark.daemon`` every forked worker,
including the retry of a killed subtask, imports the engine, pyarrow and the job's
connectors itself, and pyarrow imports pandas on its first type check: about a second of
imports on the critical path of region failover. Forked from this daemon, a worker
inherits them already imported, so a retried subtask starts with its restore.

What is imported: the modules below, plus the job's connector modules, which the driver
lists in ``SEATUNNEL_CKPT_PRELOAD`` (``spark.executorEnv``). Preloading is best effort: a
module that fails to import is skipped (the task will import it, and report the error,
as it would have anyway); the daemon always starts. The only threads these imports start
are numpy's OpenBLAS pool and pyarrow's jemalloc background thread, and both register
fork handlers, so forking workers from here stays safe; the engine's own threads start in
the worker, after the fork.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys

PRELOAD_ENV = "SEATUNNEL_CKPT_PRELOAD"

#: imported by every subtask whatever its connectors
BASE_MODULES = (
    "numpy",
    "pyarrow",
    "pyarrow.compute",
    "pyarrow.parquet",
    "pandas",  # pyarrow imports it lazily on its first type check
    "airflow_provider_seatunnel_ckpt.engine.subtask",
    "airflow_provider_seatunnel_ckpt.engine.transport",
    # PySpark's own daemon, which imports the pyspark package (about 110 modules), here
    # rather than in main() so that the freeze below covers it too; no thread starts at
    # its import (its signal handlers are set in manager(), after this)
    "pyspark.daemon",
)


def preload(extra: str = "") -> list[str]:
    """Import the base modules and the comma-separated ``extra``; returns what failed.

    Anything an import writes to stdout goes to stderr instead: PySpark's daemon tells
    the JVM its port on stdout, and stray bytes there would fail every task."""
    failed = []
    sys.stdout.flush()
    saved_stdout = os.dup(1)
    os.dup2(2, 1)
    try:
        for name in (*BASE_MODULES, *(m.strip() for m in extra.split(",") if m.strip())):
            try:
                importlib.import_module(name)
            except (Exception, SystemExit):  # best effort, the task imports it again
                failed.append(name)
    finally:
        sys.stdout.flush()
        os.dup2(saved_stdout, 1)
        os.close(saved_stdout)
    return failed


def prepare() -> list[str]:
    """Preload, then freeze what the imports allocated: every forked worker runs a full
    ``gc.collect()`` after each task (PySpark's daemon does), and without the freeze it
    walks the ~90,000 objects of pyarrow, pandas, PySpark and the engine each time, ~50 ms a task
    (2 % of a benchmark run's CPU). It also spares those pages the collector's own writes
    in every worker (reference counting still writes some of them)."""
    failed = preload(os.environ.get(PRELOAD_ENV, ""))
    gc.freeze()
    return failed


def main() -> None:
    prepare()
    from pyspark import daemon

    daemon.manager()


if __name__ == "__main__":
    main()
