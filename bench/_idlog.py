"""The shared transform (``bench.workloads.transform``) plus an optional processing log.

Used by ``streaming_compare_bench.py`` (both sides: the engine's ``Python`` transform
and Structured Streaming's ``mapInArrow``) and ``recovery_bench.py``. With
``$BENCH_IDLOG_DIR`` set in the environment of the Spark processes, every batch the
transform sees is recorded, per Python worker process:

* ``{dir}/{pid}.ids``: the batch's ``id`` values, raw little-endian int64 (appended);
* ``{dir}/{pid}.log``: one line per batch: ``wall_ms partition attempt rows first_id``
  (``wall_ms`` = when the transform got the batch; partition/attempt from Spark's
  ``TaskContext``: the engine's subtask index and its Spark task attempt).

Without the variable this is exactly ``bench.workloads.transform`` (one ``os.environ``
lookup per process). The log costs one small append per batch on top (~64 Ki rows).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator

import numpy as np
import pyarrow as pa

from bench.workloads import transform as _shared_transform

FUNCTION = "bench._idlog:transform"
ENV = "BENCH_IDLOG_DIR"

_dir: str | None = None
_checked = False
_fds: dict[str, int] = {}


def _fd(name: str) -> int:
    fd = _fds.get(name)
    if fd is None:
        fd = os.open(os.path.join(_dir or "", name), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        _fds[name] = fd
    return fd


def _record(batch: pa.RecordBatch, wall_ms: int) -> None:
    from pyspark import TaskContext

    task = TaskContext.get()
    partition = task.partitionId() if task is not None else -1
    attempt = task.attemptNumber() if task is not None else -1
    ids = np.ascontiguousarray(batch.column("id").to_numpy(zero_copy_only=False), dtype="<i8")
    pid = os.getpid()
    os.write(_fd(f"{pid}.ids"), ids.tobytes())
    first = int(ids[0]) if len(ids) else -1
    os.write(_fd(f"{pid}.log"), f"{wall_ms} {partition} {attempt} {len(ids)} {first}\n".encode())


def transform(batch: pa.RecordBatch) -> pa.RecordBatch:
    global _dir, _checked
    if not _checked:
        _dir = os.environ.get(ENV) or None
        _checked = True
    wall_ms = int(time.time() * 1000)
    out = _shared_transform(batch)
    if _dir is not None:
        _record(batch, wall_ms)
    return out


def transform_batches(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """For ``DataFrame.mapInArrow``."""
    for batch in batches:
        yield transform(batch)


# ---- reading the log (bench side) --------------------------------------------------------
def processed_rows(directory: str) -> int:
    """Rows logged so far (cheap: file sizes only)."""
    total = 0
    try:
        for name in os.listdir(directory):
            if name.endswith(".ids"):
                try:
                    total += os.path.getsize(os.path.join(directory, name)) // 8
                except OSError:
                    pass
    except FileNotFoundError:
        return 0
    return total


def read_ids(directory: str) -> np.ndarray:
    parts = []
    for name in sorted(os.listdir(directory)) if os.path.isdir(directory) else []:
        if name.endswith(".ids"):
            data = open(os.path.join(directory, name), "rb").read()
            data = data[: len(data) // 8 * 8]  # a SIGKILL may cut the last append
            parts.append(np.frombuffer(data, dtype="<i8"))
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def read_batches(directory: str) -> list[dict[str, int]]:
    """Every logged batch: wall_ms, partition, attempt, rows, first_id, pid; by time."""
    out = []
    for name in os.listdir(directory) if os.path.isdir(directory) else []:
        if not name.endswith(".log"):
            continue
        pid = int(name.split(".")[0])
        for line in open(os.path.join(directory, name)).read().splitlines():
            parts = line.split()
            if len(parts) != 5:
                continue  # cut by a SIGKILL
            wall_ms, partition, attempt, rows, first = (int(p) for p in parts)
            out.append(
                {
                    "wall_ms": wall_ms,
                    "partition": partition,
                    "attempt": attempt,
                    "rows": rows,
                    "first_id": first,
                    "pid": pid,
                }
            )
    return sorted(out, key=lambda b: b["wall_ms"])
