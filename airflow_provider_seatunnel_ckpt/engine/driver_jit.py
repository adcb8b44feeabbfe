"""The driver JVM compiles with C1 only (``-XX:TieredStopAtLevel=1``): it starts sooner.

The driver's JVM here schedules one RDD job of long-running Python tasks and answers a
few py4j calls; no row passes through it (subtasks read, transform and write in Python).
Its C2 compiler, busy through the first seconds of a start, only competed for the CPU
with the start itself and with the Python workers' imports. Measured on 2 cores
(bench/peers_bench.py's job, 6 starts each): the split plan written at 2.0 s instead of
2.6 s, both subtasks connected at 3.3 s instead of 4.1 s; a 20-million-row run of the
same job took 11.5 s instead of 11.8 s, so the steady state loses nothing either.

Added after the job's own ``spark.driver.extraJavaOptions`` where the driver JVM starts
on this machine (as the class archive, engine/jvm_archive.py), unless those options or
``$SPARK_SUBMIT_OPTS`` already choose how the JVM compiles: ``-XX:TieredStopAtLevel=4``
there gives C2 back. docs/deployment.md, "Faster driver starts".
"""

from __future__ import annotations

import os

KEY = "spark.driver.extraJavaOptions"
OPTION = "-XX:TieredStopAtLevel=1"
#: options by which a job already chose its JIT: then nothing is added
_JIT_FLAGS = ("TieredStopAtLevel", "TieredCompilation", "-Xint", "-Xcomp")


def with_quick_jit(conf: dict[str, str]) -> None:
    """Add ``OPTION`` to ``conf``'s driver Java options, after the job's own."""
    chosen = f"{conf.get(KEY, '')} {os.environ.get('SPARK_SUBMIT_OPTS', '')}"
    if any(flag in chosen for flag in _JIT_FLAGS):
        return
    conf[KEY] = f"{conf[KEY]} {OPTION}" if conf.get(KEY) else OPTION
