"""Example ``Python`` transform functions: one Arrow batch in, one out, vectorised.

Use them from a job file as ``{plugin_name: Python, function: "airflow_provider_seatunnel_ckpt.examples.transforms:add_bucket"}``.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

BUCKETS = 16


def add_bucket(batch: pa.RecordBatch) -> pa.RecordBatch:
    """Append ``bucket = id % 16``: a low-cardinality key for CountByKey."""
    bucket = pc.bit_wise_and(batch.column("id"), pa.scalar(BUCKETS - 1, pa.int64()))
    return batch.append_column("bucket", bucket)
