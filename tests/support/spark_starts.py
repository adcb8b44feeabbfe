"""Which tests start Spark, seen from the Spark driver JVMs each test launches.

``scripts/test`` chooses its suites by marker: the tests that start no Spark run in one
pytest, the ``spark`` ones in another on pytest-xdist workers. A test gets the marker from
a fixture that starts Spark (``NEEDS`` in tests/conftest.py) or from its module
(``pytestmark = pytest.mark.spark``). This module keeps the marker honest: while a test
runs, SPARK_SUBMIT_OPTS asks every Spark driver JVM (spark-submit, and PySpark's gateway,
which goes through it) to open an empty log file named after the test (``-Xlog:os=off:
file=...``: an output nothing is logged to), and a test without the marker whose files
exist fails at teardown with one line saying what to mark. Children inherit the variable,
so drivers started by a ``seatunnel-ckpt run`` subprocess or an Airflow task count too.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

MARKER = "spark"


class SparkStarts:
    """The trace of one pytest process: a directory, a file prefix per test."""

    def __init__(self) -> None:
        self._dir: Path | None = None
        self._count = 0
        self._saved: str | None = None

    def begin(self) -> None:
        """From here on, a Spark driver JVM started by this process or its children leaves a file."""
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix="spark-starts-"))
        self._count += 1
        self._saved = os.environ.get("SPARK_SUBMIT_OPTS")
        trace = f"-Xlog:os=off:file={self._dir}/{self._count}-%p.log"
        os.environ["SPARK_SUBMIT_OPTS"] = f"{self._saved} {trace}" if self._saved else trace

    def end(self) -> bool:
        """Whether a Spark driver started since ``begin``; the variable is as it was before."""
        if self._saved is None:
            os.environ.pop("SPARK_SUBMIT_OPTS", None)
        else:
            os.environ["SPARK_SUBMIT_OPTS"] = self._saved
        assert self._dir is not None
        traces = list(self._dir.glob(f"{self._count}-*.log"))
        for trace in traces:
            trace.unlink(missing_ok=True)
        return bool(traces)
