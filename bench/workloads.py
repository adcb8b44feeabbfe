"""The workload every throughput comparison in bench/ shares: same rows, same transform.

* ``sequence_batches`` yields exactly the batches the engine's ``Sequence`` source emits
  (an ``id`` int64 column and, with ``payload_bytes``, a ``payload`` fixed-size binary
  column made of the same reused pseudo-random bytes), for baselines without the engine.
* ``transform`` is the vectorised transform (pyarrow.compute only, no Python per row):
  the engine runs it through the ``Python`` transform plugin as ``TRANSFORM_FUNCTION``;
  Spark Structured Streaming runs it through ``mapInArrow`` (``transform_batches``);
  the pyarrow baseline calls it directly. Rows in = rows out, so rows/s compare 1:1.
* ``throughput_job`` builds the engine's job document (Sequence -> transform -> File
  parquet sink) as a dict for ``load_job``.
* ``make_importable_on_executors`` puts the repository root on ``PYTHONPATH`` so Spark's
  Python workers can import ``bench.workloads`` (call it before the SparkSession starts).

Nothing here starts Spark or touches the engine; importing it is cheap.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

REPO_ROOT = Path(__file__).resolve().parent.parent

#: the ``function`` option of the engine's ``Python`` transform
TRANSFORM_FUNCTION = "bench.workloads:transform"
#: bytes of the ``payload`` column per row (the issue's workload)
PAYLOAD_BYTES = 100
#: rows per Arrow batch (the engine's default batch size)
BATCH_SIZE = 65_536
BUCKETS = 16


def transform(batch: pa.RecordBatch) -> pa.RecordBatch:
    """Append ``bucket = id & 15`` (int64) and ``score = ((id * 31 + 7) % 1000) / 1000``
    (float64). Vectorised; stateless; keeps every row and the input columns."""
    ids = batch.column("id")
    bucket = pc.bit_wise_and(ids, pa.scalar(BUCKETS - 1, pa.int64()))
    # % on int64: id * 31 + 7 stays far below 2**63 for any id a benchmark uses
    mixed = pc.add(pc.multiply(ids, pa.scalar(31, pa.int64())), pa.scalar(7, pa.int64()))
    residue = pc.subtract(
        mixed, pc.multiply(pc.divide(mixed, pa.scalar(1000, pa.int64())), pa.scalar(1000, pa.int64()))
    )
    score = pc.divide(pc.cast(residue, pa.float64()), pa.scalar(1000.0, pa.float64()))
    return batch.append_column("bucket", bucket).append_column("score", score)


#: a projection with computed columns and a filter that drops one row in ten, as SQL for
#: the ``Sql`` transform; ``projection_filter`` is the same written with pyarrow.compute
PROJECTION_FILTER_SQL = (
    "select id, payload, id & 15 as bucket, cast((id * 31 + 7) % 1000 as double) / 1000 as score "
    "from source where id % 10 <> 3"
)
PROJECTION_FILTER_FUNCTION = "bench.workloads:projection_filter"


def projection_filter(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``PROJECTION_FILTER_SQL`` in pyarrow.compute: ``transform`` on the rows whose
    ``id % 10 != 3``."""
    ids = batch.column("id")
    tens = pc.subtract(ids, pc.multiply(pc.divide(ids, pa.scalar(10, pa.int64())), pa.scalar(10, pa.int64())))
    return transform(batch.filter(pc.not_equal(tens, pa.scalar(3, pa.int64()))))


def projection_filter_ids(rows: int) -> np.ndarray:
    """The ids ``projection_filter`` keeps of ``0..rows-1``."""
    ids = np.arange(rows, dtype=np.int64)
    return ids[ids % 10 != 3]


def transform_batches(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``transform`` over an iterator: the function for Spark's ``DataFrame.mapInArrow``."""
    for batch in batches:
        yield transform(batch)


def output_schema(payload_bytes: int = PAYLOAD_BYTES) -> pa.Schema:
    """Schema after ``transform`` (for mapInArrow: ``output_schema().to_string()`` is not
    Spark DDL; use ``SPARK_OUTPUT_DDL`` there)."""
    fields = [pa.field("id", pa.int64(), nullable=False)]
    if payload_bytes:
        fields.append(pa.field("payload", pa.binary(payload_bytes), nullable=False))
    fields += [pa.field("bucket", pa.int64()), pa.field("score", pa.float64())]
    return pa.schema(fields)


#: Spark DDL of the transformed rows (payload as BINARY: Spark has no fixed-size binary)
SPARK_OUTPUT_DDL = "id bigint, payload binary, bucket bigint, score double"


def _payload(rows: int, payload_bytes: int) -> pa.Buffer:
    # the Sequence source's bytes: default_rng(0), reused for every batch
    data = np.random.default_rng(0).integers(0, 256, size=rows * payload_bytes, dtype=np.uint8)
    return pa.py_buffer(data)


def sequence_batches(
    rows: int, payload_bytes: int = PAYLOAD_BYTES, batch_size: int = BATCH_SIZE, start: int = 0
) -> Iterator[pa.RecordBatch]:
    """The batches the ``Sequence`` source emits for ids ``start .. start+rows-1``."""
    fields = [pa.field("id", pa.int64(), nullable=False)]
    if payload_bytes:
        fields.append(pa.field("payload", pa.binary(payload_bytes), nullable=False))
    schema = pa.schema(fields)
    buffer = _payload(min(rows, batch_size), payload_bytes) if payload_bytes else None
    end = start + rows
    next_id = start
    while next_id < end:
        n = min(batch_size, end - next_id)
        columns = [pa.array(np.arange(next_id, next_id + n, dtype=np.int64))]
        if buffer is not None:
            columns.append(
                pa.FixedSizeBinaryArray.from_buffers(
                    pa.binary(payload_bytes), n, [None, buffer.slice(0, n * payload_bytes)]
                )
            )
        yield pa.RecordBatch.from_arrays(columns, schema=schema)
        next_id += n


def throughput_job(
    rows: int,
    output_path: str,
    *,
    parallelism: int = 2,
    interval_ms: int | None = None,
    timeout_ms: int | None = None,
    payload_bytes: int = PAYLOAD_BYTES,
    name: str = "bench-throughput",
    rows_per_second: float = 0,
    batch_size: int | None = None,
) -> dict[str, Any]:
    """Job document: Sequence(rows, payload) -> Python(transform) -> File parquet sink.

    ``output_path`` is a local directory (made into a ``file://`` URL). ``interval_ms`` and
    ``timeout_ms`` go into ``env`` (they override the seatunnel.yaml values)."""
    env: dict[str, Any] = {"job.name": name, "parallelism": parallelism}
    if interval_ms is not None:
        env["checkpoint.interval"] = int(interval_ms)
    if timeout_ms is not None:
        env["checkpoint.timeout"] = int(timeout_ms)
    if batch_size is not None:
        env["batch_size"] = int(batch_size)
    source: dict[str, Any] = {"plugin_name": "Sequence", "rows": int(rows), "payload_bytes": int(payload_bytes)}
    if rows_per_second:
        source["rows_per_second"] = rows_per_second
    path = output_path if "://" in output_path else "file://" + os.path.abspath(output_path).rstrip("/") + "/"
    return {
        "env": env,
        "source": [source],
        "transform": [{"plugin_name": "Python", "function": TRANSFORM_FUNCTION}],
        "sink": [{"plugin_name": "File", "path": path, "format": "parquet"}],
    }


def parquet_ids_once(output: str | Path, rows: int) -> int:
    """Check that the parquet files under ``output`` hold every id of ``0..rows-1`` exactly
    once (raise otherwise); return how many files there are."""
    import pyarrow.dataset as ds

    dataset = ds.dataset(str(output), format="parquet")
    ids = dataset.to_table(columns=["id"]).column("id").to_numpy()
    seen = np.zeros(rows, dtype=bool)
    if len(ids) == rows and ids.min() >= 0 and ids.max() < rows:
        seen[ids] = True
    if not seen.all():  # rows ids in [0, rows) and none missing: none duplicated either
        raise RuntimeError(f"output of {output} is not every id exactly once ({len(ids)} rows for {rows})")
    return len(dataset.files)


def make_importable_on_executors() -> None:
    """Prepend the repository root to ``PYTHONPATH`` (inherited by Spark's Python workers
    in local mode); call before the SparkSession / the ``seatunnel-ckpt`` subprocess."""
    root = str(REPO_ROOT)
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root not in parts:
        os.environ["PYTHONPATH"] = os.pathsep.join([root, *parts])
