"""A ``Python`` transform that fails once, mid-way: for the fail-and-recover example and tests.

``{plugin_name: Python, function: "airflow_provider_seatunnel_ckpt.examples.fail_once:fail_once"}``

Configured by environment variables of the Spark executors (set them from the job
file's ``env``: ``spark.executorEnv.SEATUNNEL_CKPT_FAIL_ONCE_MARKER: /path``):

* ``SEATUNNEL_CKPT_FAIL_ONCE_MARKER``: a file path. Unset: the transform passes every
  batch through.
* ``SEATUNNEL_CKPT_FAIL_ONCE_AFTER_ROWS``: rows a process must have seen first
  (default 50000).

Once a process has seen that many rows and the marker does not exist, it creates the
marker (atomically: exactly one subtask wins) and raises. Every later batch, in this
run or the next, passes: so the first run fails after some checkpoints completed and
the resumed run succeeds.
"""

from __future__ import annotations

import os
import threading
import time

import pyarrow as pa

MARKER_ENV = "SEATUNNEL_CKPT_FAIL_ONCE_MARKER"
AFTER_ROWS_ENV = "SEATUNNEL_CKPT_FAIL_ONCE_AFTER_ROWS"
DEFAULT_AFTER_ROWS = 50_000

_lock = threading.Lock()
_rows_seen = 0


class FailOnceError(RuntimeError):
    """The failure this transform injects on purpose."""


def fail_once(batch: pa.RecordBatch) -> pa.RecordBatch:
    global _rows_seen
    marker = os.environ.get(MARKER_ENV)
    if not marker:
        return batch
    with _lock:
        _rows_seen += batch.num_rows
        seen = _rows_seen
    if seen < int(os.environ.get(AFTER_ROWS_ENV) or DEFAULT_AFTER_ROWS) or os.path.exists(marker):
        return batch
    os.makedirs(os.path.dirname(marker) or ".", exist_ok=True)
    try:
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return batch  # another subtask failed first
    with os.fdopen(fd, "w") as f:
        f.write(f"failed on purpose at {time.time():.3f} in pid {os.getpid()} after {seen} rows\n")
    raise FailOnceError(f"fail_once: failing on purpose after {seen} rows (created {marker}; the next run passes)")
