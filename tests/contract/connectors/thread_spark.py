"""A stand-in for Spark that runs each subtask on a thread of the driver process.

Why a stand-in: the connector contract suite runs every connector through many short
runs with kills in between; a local Spark costs about 8 s of JVM and Python-worker start
per run, this costs nothing. Everything the suite is about runs for real: the runner's
claim, restore and plan, the coordinator, the driver loop and its fencing, the control
channel over TCP, each subtask's barriers, state and two-phase commit, checkpoint storage
and the connectors against their real systems. What is not exercised here is how Spark
places, retries and cancels tasks; the integration and chaos suites run the same engine
under a real Spark for that.

Only the calls the runner makes (``engine/launch.py``) exist. A failed subtask is retried
up to ``spark.task.maxFailures`` times with the next attempt number, as Spark retries a
task; ``TaskContext.get()`` answers per thread so the engine reads that number.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any

MAX_FAILURES = 4


class TaskKilled(BaseException):
    """Raised inside a subtask's thread when the job is cancelled, as Spark kills the
    Python worker of a cancelled task (``interruptOnCancel``)."""


class _TaskContext:
    def __init__(self, partition: int, attempt: int):
        self._partition, self._attempt = partition, attempt

    def attemptNumber(self) -> int:  # PySpark's name
        return self._attempt

    def partitionId(self) -> int:  # PySpark's name
        return self._partition


_current = threading.local()


def install_task_context() -> None:
    """Make ``pyspark.TaskContext.get()`` return the calling thread's task (None off a task)."""
    from pyspark import TaskContext

    TaskContext.get = staticmethod(lambda: getattr(_current, "task", None))  # type: ignore[method-assign]


class _Conf:
    def __init__(self, values: dict[str, str]):
        self._values = values

    def get(self, key: str, default: str | None = None) -> str | None:
        return self._values.get(key, default)

    def getAll(self) -> list[tuple[str, str]]:  # PySpark's name
        return list(self._values.items())


class _Partitions:
    def __init__(
        self, context: ThreadContext, items: list[Any], function: Callable[[int, Any], Iterable[Any]] | None = None
    ):
        self._context, self._items, self._function = context, items, function

    def mapPartitionsWithIndex(self, function: Callable[[int, Any], Iterable[Any]]) -> _Partitions:
        return _Partitions(self._context, self._items, function)

    def collect(self) -> list[Any]:
        assert self._function is not None
        results: list[list[Any]] = [[] for _ in self._items]
        errors: list[BaseException] = []

        def task(index: int) -> None:
            for attempt in range(MAX_FAILURES):
                _current.task = _TaskContext(index, attempt)
                try:
                    results[index] = list(self._function(index, iter([self._items[index]])))
                    return
                except BaseException as err:  # as Spark: retried, the last failure fails the job
                    if not isinstance(err, TaskKilled):  # what an executor's log would say
                        print(
                            f"subtask {index} attempt {attempt} failed: {type(err).__name__}: {err}",
                            file=sys.stderr,
                            flush=True,
                        )
                    if attempt == MAX_FAILURES - 1 or self._context.cancelled.is_set():
                        errors.append(err)
                        return
                finally:
                    _current.task = None

        threads = [
            threading.Thread(target=task, args=(i,), name=f"subtask-{i}", daemon=True) for i in range(len(self._items))
        ]
        self._context.threads.extend(threads)
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]
        return [row for rows in results for row in rows]


class ThreadContext:
    master = "local[threads]"
    applicationId = "local-threads"  # PySpark's name
    defaultParallelism = 16  # PySpark's name

    def __init__(self) -> None:
        self.cancelled = threading.Event()
        self.threads: list[threading.Thread] = []

    def getConf(self) -> _Conf:  # PySpark's name
        return _Conf({"spark.task.maxFailures": str(MAX_FAILURES)})

    def setJobGroup(self, *args: Any, **kwargs: Any) -> None:  # PySpark's name
        pass

    def cancelJobGroup(self, group: str) -> None:  # PySpark's name
        # No retry after this, and each running subtask gets an exception the next time
        # its thread runs Python code (a thread cannot be stopped otherwise).
        self.cancelled.set()
        for thread in self.threads:
            if thread.is_alive() and thread.ident is not None:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(TaskKilled))

    def parallelize(self, items: Iterable[Any], slices: int) -> _Partitions:
        return _Partitions(self, list(items))


class ThreadSpark:
    def __init__(self) -> None:
        self.sparkContext = ThreadContext()

    def stop(self) -> None:
        pass
