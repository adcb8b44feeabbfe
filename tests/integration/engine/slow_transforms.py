"""A ``Python`` transform for tests that need a job to last: it sleeps per batch.

Executors import it as ``tests.integration.engine.slow_transforms:pause`` (the repo root
is on their PYTHONPATH in these suites).
"""

from __future__ import annotations

import time

import pyarrow as pa

SECONDS_PER_BATCH = 0.1


def pause(batch: pa.RecordBatch) -> pa.RecordBatch:
    time.sleep(SECONDS_PER_BATCH)
    return batch
