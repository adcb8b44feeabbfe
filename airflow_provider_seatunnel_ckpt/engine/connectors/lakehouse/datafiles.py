"""Parquet data files for table sinks: partitioned in memory, written where the table lives.

A table format (Iceberg, Delta) reads only the data files its metadata names, so a sink
can write its files straight into the table's data directory: they stay invisible until
the driver's committer adds them in one table commit, and a file no commit ever names
is an orphan that ``cleanup`` deletes. Names carry the job's tag, so a sink never
touches other writers' files.

:class:`DataFileWriter` keeps one in-memory parquet file per partition; a file is written
(``FileSystem.write_atomic``) when it reaches ``max_file_bytes`` or at ``flush`` (the
barrier), and every written file is reported as a :class:`DataFile`.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Mapping, Sequence
from urllib.parse import quote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ....storage.filesystem import FileSystem

#: parquet codecs the sinks accept (pyarrow's names)
PARQUET_CODECS = ("snappy", "zstd", "gzip", "lz4", "brotli", "none")
DEFAULT_MAX_FILE_BYTES = 128 * 1024 * 1024

#: ``batch -> [(partition values, rows of that partition)]``; values are strings or None
Partitioner = Callable[[pa.RecordBatch], list[tuple[tuple[Any, ...], pa.RecordBatch]]]


def job_tag(job_id: str) -> str:
    """Short, stable tag of a job id in data file names."""
    return hashlib.sha256(job_id.encode("utf-8")).hexdigest()[:8]


def file_prefix(job_id: str) -> str:
    return f"st-{job_tag(job_id)}-"


@dataclass(frozen=True)
class DataFile:
    """A written data file: absolute path in the table's file system, rows, bytes, the
    partition it holds (``{name: JSON value}``) and what the table format's commit needs
    about it (``stats``: column statistics, JSON-safe)."""

    path: str
    rows: int
    size: int
    partition: Mapping[str, Any] = field(default_factory=dict)
    stats: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self) | {"partition": dict(self.partition), "stats": dict(self.stats)}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "DataFile":
        if not isinstance(doc, Mapping) or not isinstance(doc.get("path"), str):
            raise ValueError(f"malformed data file entry {doc!r}")
        return cls(doc["path"], int(doc["rows"]), int(doc["size"]), dict(doc.get("partition") or {}),
                   dict(doc.get("stats") or {}))


def split_by(keys: Sequence[pa.Array], batch: pa.RecordBatch) -> list[tuple[tuple[Any, ...], pa.RecordBatch]]:
    """Rows of ``batch`` grouped by the values of ``keys`` (one array per partition field,
    as long as the batch): ``[(values, rows), ...]``. Vectorised: one group-by, one take
    per partition."""
    if not keys:
        return [((), batch)]
    if all(len(pc.unique(k)) == 1 for k in keys):  # the common case: one partition per batch
        return [(tuple(k[0].as_py() for k in keys), batch)]
    columns = {f"k{i}": k for i, k in enumerate(keys)}
    grouped = pa.table({**columns, "row": pa.array(range(batch.num_rows), pa.int64())}).group_by(
        list(columns), use_threads=False).aggregate([("row", "list")])
    out = []
    for i in range(grouped.num_rows):
        values = tuple(grouped.column(f"k{j}")[i].as_py() for j in range(len(keys)))
        out.append((values, batch.take(grouped.column("row_list")[i].values)))
    return out


def partition_dir(names: Sequence[str], values: Sequence[Any]) -> str:
    """Hive-style ``a=1/b=x`` (``__HIVE_DEFAULT_PARTITION__`` for null), URL-quoted."""
    parts = []
    for name, value in zip(names, values):
        text = "__HIVE_DEFAULT_PARTITION__" if value is None else quote(str(value), safe="")
        parts.append(f"{quote(name, safe='')}={text}")
    return "/".join(parts)


class DataFileWriter:
    """One subtask attempt's open files, one per partition.

    ``partitioner`` splits a batch into partitions; ``prepare`` turns a partition's rows
    into the batch written to its file (a Delta file leaves out the partition columns,
    whose values live in the log); ``schema`` is the written files' schema; ``describe``
    turns a finished file's parquet footer into the statistics its commit needs (taken
    here, from memory, so the driver never reads the files back)."""

    def __init__(
        self,
        fs: FileSystem,
        data_dir: str,
        job_id: str,
        subtask: int,
        attempt: int,
        *,
        schema: pa.Schema,
        partition_names: Sequence[str] = (),
        partitioner: Partitioner | None = None,
        prepare: Callable[[pa.RecordBatch], pa.RecordBatch] | None = None,
        describe: Callable[[pq.FileMetaData], Mapping[str, Any]] | None = None,
        compression: str = "snappy",
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    ):
        self.fs = fs
        self.data_dir = data_dir.rstrip("/")
        self.schema = schema
        self.partition_names = list(partition_names)
        self.partitioner = partitioner
        self.prepare = prepare
        self.describe = describe
        self.compression = compression
        self.max_file_bytes = max_file_bytes
        self._prefix = f"{file_prefix(job_id)}{subtask:05d}-{attempt}-{secrets.token_hex(4)}-"
        self._count = 0
        self._open: dict[tuple[Any, ...], _OpenFile] = {}
        self._written: list[DataFile] = []

    def write(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        parts = self.partitioner(batch) if self.partitioner is not None else [((), batch)]
        for values, rows in parts:
            file = self._open.get(values)
            if file is None:
                file = self._open[values] = _OpenFile(self.schema, self.compression)
            file.write(self.prepare(rows) if self.prepare is not None else rows)
            if self.max_file_bytes and file.size >= self.max_file_bytes:
                self._finish(values)

    def flush(self) -> list[DataFile]:
        """Write every open file; return all files written since the previous flush."""
        for values in list(self._open):
            self._finish(values)
        written, self._written = self._written, []
        return written

    def abort(self) -> list[str]:
        """Drop open files; return the paths written but never handed out by ``flush``."""
        self._open.clear()
        paths = [f.path for f in self._written]
        self._written = []
        return paths

    def _finish(self, values: tuple[Any, ...]) -> None:
        file = self._open.pop(values)
        data, rows = file.finish()
        directory = self.data_dir
        if self.partition_names:
            directory = f"{directory}/{partition_dir(self.partition_names, values)}"
        path = f"{directory}/{self._prefix}{self._count:05d}.parquet"
        self._count += 1
        stats = self.describe(pq.read_metadata(pa.BufferReader(data))) if self.describe is not None else {}
        self.fs.write_atomic(path, memoryview(data))
        partition = dict(zip(self.partition_names, values))
        self._written.append(DataFile(path, rows, len(data), partition, stats))


class _OpenFile:
    def __init__(self, schema: pa.Schema, compression: str):
        self._sink = pa.BufferOutputStream()
        self._writer = pq.ParquetWriter(self._sink, schema, compression=compression)
        self.rows = 0

    @property
    def size(self) -> int:
        return self._sink.tell()

    def write(self, batch: pa.RecordBatch) -> None:
        self._writer.write_batch(batch)
        self.rows += batch.num_rows

    def finish(self) -> tuple[pa.Buffer, int]:
        self._writer.close()
        return self._sink.getvalue(), self.rows
