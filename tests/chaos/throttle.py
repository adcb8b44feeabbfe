"""A Python transform that slows a subtask to about 30,000 rows/s, so a chaos test can
kill things while a fast source (a database copy) is still running."""

from __future__ import annotations

import time

import pyarrow as pa

ROWS_PER_SECOND = 30_000


def rows_30k(batch: pa.RecordBatch) -> pa.RecordBatch:
    time.sleep(batch.num_rows / ROWS_PER_SECOND)
    return batch
