"""What the File sink suites share (tests/unit/connectors/test_file_sink*.py): a batch of
ids, the sink's files (all, or those a reader sees) and the ids a reader gets back."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from airflow_provider_seatunnel_ckpt.connectors.api import ReaderContext, iter_batches
from airflow_provider_seatunnel_ckpt.connectors.file.sink import FileSink
from airflow_provider_seatunnel_ckpt.connectors.file.source import FileSource


def batch(start: int, n: int) -> pa.RecordBatch:
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.record_batch({"id": ids, "name": [f"n{i}" for i in ids]})


def all_files(sink: FileSink) -> list[str]:
    return sorted(f.path[len(sink.root) + 1 :] for f in sink.fs.walk_files(sink.root))


def visible_files(sink: FileSink) -> list[str]:
    return [p for p in all_files(sink) if not any(part.startswith(("_", ".")) for part in p.split("/"))]


def read_back(sink: FileSink) -> list[int]:
    """What a downstream reader sees: every visible file, through the File source."""
    source = FileSource({"path": f"{sink.options['path']}", "format": sink.format})
    ids = []
    for split in source.splits(1):
        for b in iter_batches(source.create_reader(split, None, ReaderContext(0, 1))):
            ids.extend(b.column("id").to_pylist())
    return sorted(ids)
