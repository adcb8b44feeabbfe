"""Parquet data files for table sinks: partitioned in memory, written where the table lives.

A table format (Iceberg, Delta) reads only the data files its metadata names, so a sink
can write its files straight into the table's data directory: they stay invisible until
the driver's committer adds them in one table commit, and a file no commit ever names
is an orphan that ``cleanup`` deletes. Names carry the job's tag, so a sink never
touches other writers' files.

:class:`DataFileWriter` keeps one open parquet file per partition, streamed to storage
(``FileSystem.open_new``: on local disk as it is encoded, elsewhere at the end); a file is
finished when it reaches ``max_file_bytes`` or at ``flush`` (the barrier), which makes
every finished file durable and reports it as a :class:`DataFile`. Making it durable
waits for the barrier because ``flush`` runs on the subtask's checkpoint thread, so the
thread writing rows never waits for the disk.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import quote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ...storage.filesystem import FileSystem, NewFile

log = logging.getLogger(__name__)

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
    def from_json(cls, doc: Mapping[str, Any]) -> DataFile:
        if not isinstance(doc, Mapping) or not isinstance(doc.get("path"), str):
            raise ValueError(f"malformed data file entry {doc!r}")
        return cls(
            doc["path"],
            int(doc["rows"]),
            int(doc["size"]),
            dict(doc.get("partition") or {}),
            dict(doc.get("stats") or {}),
        )


def split_by(keys: Sequence[pa.Array], batch: pa.RecordBatch) -> list[tuple[tuple[Any, ...], pa.RecordBatch]]:
    """Rows of ``batch`` grouped by the values of ``keys`` (one array per partition field,
    as long as the batch): ``[(values, rows), ...]``. Vectorised: one group-by, one take
    per partition."""
    if not keys:
        return [((), batch)]
    if all(len(pc.unique(k)) == 1 for k in keys):  # the common case: one partition per batch
        return [(tuple(k[0].as_py() for k in keys), batch)]
    columns = {f"k{i}": k for i, k in enumerate(keys)}
    grouped = (
        pa.table({**columns, "row": pa.array(range(batch.num_rows), pa.int64())})
        .group_by(list(columns), use_threads=False)
        .aggregate([("row", "list")])
    )
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
        #: finished, not yet durable nor reported: (file, its storage handle)
        self._finished: list[tuple[DataFile, NewFile]] = []

    def write(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        parts = self.partitioner(batch) if self.partitioner is not None else [((), batch)]
        for values, rows in parts:
            file = self._open.get(values)
            if file is None:
                file = self._open[values] = self._new_file(values)
            file.write(self.prepare(rows) if self.prepare is not None else rows)
            if self.max_file_bytes and file.size >= self.max_file_bytes:
                self._finish(values)

    def flush(self) -> list[DataFile]:
        """Finish every open file, make every finished one durable, and return them all
        (every file finished since the previous flush)."""
        for values in list(self._open):
            self._finish(values)
        for _, out in self._finished:
            out.sync()
        finished, self._finished = self._finished, []
        return [data_file for data_file, _ in finished]

    def abort(self) -> None:
        """Remove every file not reported by ``flush``; a file that cannot be removed is
        logged (``cleanup`` deletes it later: its name carries the job's tag)."""
        handles = [file.out for file in self._open.values()] + [out for _, out in self._finished]
        self._open.clear()
        self._finished = []
        for out in handles:
            try:
                out.discard()
            except Exception as err:
                log.warning("could not delete the unused data file %s: %s", self.fs.describe(out.path), err)

    def _new_file(self, values: tuple[Any, ...]) -> _OpenFile:
        directory = self.data_dir
        if self.partition_names:
            directory = f"{directory}/{partition_dir(self.partition_names, values)}"
        path = f"{directory}/{self._prefix}{self._count:05d}.parquet"
        self._count += 1
        return _OpenFile(self.fs.open_new(path), self.schema, self.compression)

    def _finish(self, values: tuple[Any, ...]) -> None:
        file = self._open.pop(values)
        metadata = file.finish()
        stats = self.describe(metadata) if self.describe is not None else {}
        partition = dict(zip(self.partition_names, values))
        self._finished.append((DataFile(file.out.path, file.rows, file.out.tell(), partition, stats), file.out))


class _OpenFile:
    def __init__(self, out: NewFile, schema: pa.Schema, compression: str):
        self.out = out
        self._writer = pq.ParquetWriter(out, schema, compression=compression)
        self.rows = 0

    @property
    def size(self) -> int:
        return self.out.tell()

    def write(self, batch: pa.RecordBatch) -> None:
        self._writer.write_batch(batch)
        self.rows += batch.num_rows

    def finish(self) -> pq.FileMetaData:
        """Write the footer and end writing; the footer's metadata, taken from memory
        (the file is never read back)."""
        self._writer.close()
        self.out.close()
        return self._writer.writer.metadata
