"""Spark's start beside the live checks, the claim and the restore.

Spark's start (the JVM spark-submit launches, then the SparkContext: about 2.7 s of a
restore's 5.8 s, docs/benchmarks.md) needs nothing those steps decide, and they need no
Spark, so ``SparkStart`` runs ``build_spark`` in a thread from the run's first step; the
Spark job itself is launched only once the job is claimed and restored. Until then the
JVM's output is held (``HeldOutput``): a run refused by a check or by its claim still
prints its one line and nothing of Spark, and once the run goes ahead the held lines are
written as they would have been. A refused run stops the context once it is up.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import threading
import warnings
from typing import IO, TYPE_CHECKING, Any

from ..errors import ConfigError
from .driver_jit import with_quick_jit
from .jvm_archive import with_driver_archive
from .preload import preload_settings
from .spark_settings import DEFAULT_TASK_MAX_FAILURES, check_running_spark_settings, check_spark_settings

if TYPE_CHECKING:
    from .run_state import RunRequest

log = logging.getLogger(__name__)

#: what a held JVM may print before the run goes ahead (Spark's start prints a few lines)
HELD_BYTES = 1 << 20
#: how long a failed start's output may take to end, once the JVM is gone
DRAIN_S = 5.0

_thread_state = threading.local()


def starts_its_own_jvm() -> bool:
    """True where this process starts Spark's JVM (``seatunnel-ckpt run``), False under
    spark-submit (the operator), whose JVM is up before this driver: there Spark's start is
    left where it was, after the claim."""
    return "PYSPARK_GATEWAY_PORT" not in os.environ and "SPARK_ENV_LOADED" not in os.environ


def held_output() -> HeldOutput | None:
    """The HeldOutput of the SparkStart running in this thread (None elsewhere)."""
    return getattr(_thread_state, "held", None)


def _local_with_retries(master: str, max_failures: int = DEFAULT_TASK_MAX_FAILURES) -> str:
    # local[N] never retries a failed task (and ignores spark.task.maxFailures);
    # region failover needs retries, so the count goes into the master URL.
    match = re.fullmatch(r"local\[(\d+|\*)\]", master.strip())
    if match:
        return f"local[{match.group(1)},{max_failures}]"
    if master.strip() == "local":
        return f"local[1,{max_failures}]"
    return master


def build_spark(request: RunRequest) -> Any:
    """The job's SparkContext. Not a SparkSession: the engine runs one RDD job of Python
    tasks and no SQL, and the JVM's session (Spark SQL's catalog and session state) took
    2.0 of the 9.4 s from a driver's start to its first committed row after a restore."""
    from pyspark import SparkConf, SparkContext

    spark_conf = SparkConf().setAppName(f"seatunnel-ckpt:{request.job.name}")
    chosen = {**request.job.spark_conf, **request.spark_conf}
    conf = {
        "spark.task.maxFailures": str(DEFAULT_TASK_MAX_FAILURES),
        "spark.pyspark.python": sys.executable,
        "spark.ui.showConsoleProgress": "false",
        **chosen,
    }
    master = request.master or os.environ.get("SEATUNNEL_CKPT_MASTER")
    launcher: dict[str, str] = {}
    if master:
        try:
            max_failures = int(conf["spark.task.maxFailures"])
        except ValueError:
            raise ConfigError(
                "spark.task.maxFailures", f"expected an integer, got {conf['spark.task.maxFailures']!r}"
            ) from None
        spark_conf.setMaster(_local_with_retries(master, max_failures))
    elif os.environ.get("PYSPARK_GATEWAY_PORT"):
        launcher = _launcher_conf()
        master = launcher.get("spark.master")
    # PySpark starts executor Python workers with $PYSPARK_PYTHON (default: "python3"
    # from PATH); spark.pyspark.python only reaches it through spark-submit. Without
    # this, a driver run from a virtualenv that is not first on PATH starts workers
    # that cannot import this package.
    if not os.environ.get("PYSPARK_PYTHON"):
        os.environ["PYSPARK_PYTHON"] = conf["spark.pyspark.python"]
    # Settings that break the engine's model (engine/spark_settings.py): the job's are
    # refused, spark-submit's overridden with a warning; the engine's values also beat a
    # spark-defaults.conf that only the JVM reads.
    required = check_spark_settings(chosen, launcher)
    conf.update(required)
    # spark-submit's settings beat our defaults but not the job's or the command line's
    effective = {**conf, **{k: v for k, v in launcher.items() if k not in chosen}, **required}
    if launcher and master:  # spark-submit --master local[N] would retry no task either
        retrying = _local_with_retries(master, int(effective["spark.task.maxFailures"]))
        if retrying != master:
            spark_conf.setMaster(retrying)
    preload = preload_settings(request.job, master, effective, os.environ["PYSPARK_PYTHON"])
    conf.update(preload)
    if not launcher:  # this process starts the driver JVM: it maps the class archive, if built
        with_driver_archive(conf)
        with_quick_jit(conf)
    for key, value in conf.items():
        if key in launcher and key not in chosen and key not in required and key not in preload:
            continue  # spark-submit's own value stands: a default of ours must not replace it
        spark_conf.set(key, value)
    # PySpark's own warning, printed at SparkContext's start, about pandas versions: the
    # engine uses no pandas API of PySpark, and the line would precede a refused run's error
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)
    held = held_output()
    if held is not None and not launcher and SparkContext._gateway is None:
        # this process starts the JVM, for a SparkStart: its output waits for the claim
        held.launch_gateway(spark_conf)
    context = SparkContext.getOrCreate(spark_conf)
    # getOrCreate may have found a running context, whose settings spark_conf cannot change
    check_running_spark_settings(dict(context.getConf().getAll()))
    # Task retries are expected (region failover) and reported by the engine itself.
    context.setLogLevel(os.environ.get("SEATUNNEL_CKPT_SPARK_LOG_LEVEL", "ERROR"))
    return context


def _launcher_conf() -> dict[str, str]:
    """The settings spark-submit started this driver with (its --conf, spark-defaults),
    from the JVM it launched."""
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()
    return dict(SparkConf().getAll())


class HeldOutput:
    """The standard error of the JVM this process starts: kept until ``release`` (then
    written to ours, and everything after it as it comes), or dropped by ``drop``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: list[bytes] = []
        self._size = 0
        self._state = "holding"
        self._pump_thread: threading.Thread | None = None

    def launch_gateway(self, conf: Any) -> None:
        """Start Spark's JVM gateway (what SparkContext would start) with its standard
        error piped through this object."""
        from pyspark import SparkContext
        from pyspark.java_gateway import launch_gateway

        # a pipe of our own, read from before the launch: a JVM that exits at once (a bad
        # master) says why on it while launch_gateway is still waiting for its port
        read_fd, write_fd = os.pipe()
        stream = os.fdopen(read_fd, "rb")
        self._pump_thread = threading.Thread(target=self._pump, args=(stream,), name="spark-stderr", daemon=True)
        self._pump_thread.start()
        try:
            gateway = launch_gateway(conf, popen_kwargs={"stderr": write_fd})  # type: ignore[no-untyped-call]
        finally:
            os.close(write_fd)  # the JVM holds its own copy: the pipe ends when the JVM does
        SparkContext._ensure_initialized(gateway=gateway)

    def _pump(self, stream: IO[bytes]) -> None:
        for line in iter(stream.readline, b""):
            with self._lock:
                if self._state == "open":
                    _write(line)
                elif self._state == "holding" and self._size < HELD_BYTES:
                    self._held.append(line)
                    self._size += len(line)

    def release(self) -> None:
        with self._lock:
            if self._state != "holding":
                return
            self._state = "open"
            held, self._held = self._held, []
            for line in held:
                _write(line)

    def drain(self, timeout_s: float = DRAIN_S) -> None:
        """Wait until the JVM's output has ended (it exited) and was written: a JVM that
        failed to start says why before the run's own error line."""
        if self._pump_thread is not None:
            self._pump_thread.join(timeout_s)

    def drop(self) -> None:
        with self._lock:
            self._state, self._held = "dropped", []


def _write(line: bytes) -> None:
    stream = sys.stderr
    raw = getattr(stream, "buffer", None)
    try:
        if raw is not None:
            raw.write(line)
        else:  # a replaced stderr (a test's capture) takes text
            stream.write(line.decode(errors="replace"))
        stream.flush()
    except (OSError, ValueError):  # stderr closed: nothing to tell
        pass


class SparkStart:
    """``build_spark`` in a thread, begun before the live checks, the
    claim and the restore (module docstring). ``context`` waits for it and lets its output
    through; ``abandon`` drops its output and stops it."""

    def __init__(self, request: RunRequest):
        self.output = HeldOutput()
        self._context: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._build, args=(request,), name="spark-start", daemon=True)
        self._thread.start()

    def _build(self, request: RunRequest) -> None:
        _thread_state.held = self.output
        try:
            self._context = build_spark(request)
        except BaseException as err:  # raised where the context is asked for
            self._error = err

    def context(self) -> Any:
        """The started SparkContext, once it is up; what its start raised, raised here."""
        self.output.release()
        self._thread.join()
        if self._error is not None:
            self.output.drain()  # Spark's own reason first (a JVM that failed has exited)
            raise self._error
        return self._context

    def abandon(self) -> None:
        """The run ends without a Spark job: drop the JVM's output and stop the context
        once its start is over (a start cannot be cut short). Never raises: the run's own
        error is what to report."""
        self.output.drop()
        self._thread.join()
        if self._context is not None:
            try:
                self._context.stop()
            except Exception as err:
                log.debug("stopping the unused SparkContext failed: %s", err)
