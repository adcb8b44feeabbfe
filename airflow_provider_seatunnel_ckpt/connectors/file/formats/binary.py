"""SeaTunnel's ``binary`` file format (``file_format_type = binary``): files copied as
they are, through rows of SeaTunnel's fixed schema (its ``BinaryReadStrategy``):
``data`` (up to 1024 bytes of the file), ``relativePath`` (below the source's ``path``)
and ``partIndex`` (the chunk's place in the file, from 0). A source's split is a file and
its position the chunks emitted; a sink writes each file to ``path/relativePath`` from its
chunks, in order, through the File sink's two-phase commit. A file's chunks must reach
the sink within one checkpoint, as in SeaTunnel: docs/seatunnel.md ("The binary format")."""

from __future__ import annotations

import posixpath
import secrets
from typing import Any

import pyarrow as pa

from ....storage.filesystem import NewFile
from ....storage.urls import RangeFile
from ...api import JsonValue, SinkWriter, SourceReader
from ..storage import is_hidden

CHUNK = 1024
SCHEMA = pa.schema([("data", pa.binary()), ("relativePath", pa.string()), ("partIndex", pa.int64())])


def relative_path(root: str, path: str) -> str:
    """``path`` below ``root`` (the file's name when ``root`` is the file)."""
    root = root.rstrip("/")
    if path == root:
        return posixpath.basename(path)
    return path[len(root) :].lstrip("/") if path.startswith(root + "/") else posixpath.basename(path)


class BinaryReader(SourceReader):
    """One file as chunks of ``CHUNK`` bytes, ``batch_size`` chunks per batch."""

    def __init__(self, file: RangeFile, relative: str, offset: int, batch_size: int, where: str):
        self._chunks = -(-file.size // CHUNK)
        if offset > self._chunks:
            raise ValueError(f"{where}: position {offset} is past the end ({self._chunks} chunks)")
        self._file = file
        self._relative = relative
        self._next = offset
        self._batch = max(1, batch_size)

    def read_batch(self) -> pa.RecordBatch | None:
        if self._next >= self._chunks:
            return None
        count = min(self._batch, self._chunks - self._next)
        self._file.seek(self._next * CHUNK)
        data = self._file.read(count * CHUNK)
        if len(data) != min(count * CHUNK, self._file.size - self._next * CHUNK):
            raise ValueError(f"{self._relative}: the file is shorter than when the job planned it")
        offsets = pa.array([min(i * CHUNK, len(data)) for i in range(count + 1)], pa.int32())
        chunks = pa.BinaryArray.from_buffers(pa.binary(), count, [None, offsets.buffers()[1], pa.py_buffer(data)])
        batch = pa.RecordBatch.from_arrays(
            [
                chunks,
                pa.array([self._relative] * count, pa.string()),
                pa.array(range(self._next, self._next + count), pa.int64()),
            ],
            schema=SCHEMA,
        )
        self._next += count
        return batch

    def position(self) -> JsonValue:
        return self._next

    def close(self) -> None:
        self._file.close()


def check_schema(schema: pa.Schema) -> str | None:
    """Why rows of ``schema`` cannot be binary chunks (None: they can)."""
    if [(f.name, f.type) for f in schema] != [(f.name, f.type) for f in SCHEMA]:
        return (
            f"the binary format writes rows of SeaTunnel's binary schema (data bytes, relativePath string, "
            f"partIndex bigint), as a binary source reads them; these rows have "
            f"{', '.join(f'{f.name} {f.type}' for f in schema)}"
        )
    return None


class BinaryWriter(SinkWriter):
    """The files of one subtask epoch: each staged as it comes, in order of its chunks."""

    def __init__(self, sink: Any, job_id: str, subtask: int, attempt: int):
        self._sink = sink
        self._fs = sink.fs
        self._root = sink.root.rstrip("/")
        self._staging = sink.staging_dir(job_id)
        self._prefix = f"{subtask}-{attempt}-r{sink.run_attempt}-{secrets.token_hex(4)}"
        self._count = 0
        #: relative path -> (staged file, last part index written)
        self._open: dict[str, tuple[NewFile, int]] = {}
        self._order: list[str] = []
        self._rows = 0

    def write(self, batch: pa.RecordBatch) -> None:
        problem = check_schema(batch.schema)
        if problem is not None:
            raise ValueError(f"{self._sink.plugin_name} sink: {problem}")
        chunks = batch.column(0)
        for index, (relative, part) in enumerate(zip(batch.column(1).to_pylist(), batch.column(2).to_pylist())):
            entry = self._open.get(relative)
            last = entry[1] if entry is not None else -1
            if part is None or relative is None or part - 1 != last:
                raise ValueError(
                    f"{self._sink.plugin_name} sink: file {relative!r}: last part is {last}, but got "
                    f"{part} (a binary file's chunks must come in order from 0, within one checkpoint, "
                    "as in SeaTunnel)"
                )
            if entry is None:
                self._check_name(relative)
                out = self._fs.open_new(f"{self._staging}/{self._prefix}-{self._count:06d}.bin")
                self._count += 1
                self._order.append(relative)
            else:
                out = entry[0]
            value = chunks[index]
            if value.is_valid:
                out.write(value.as_buffer())
            self._open[relative] = (out, part)
        self._rows += batch.num_rows

    def _check_name(self, relative: str) -> None:
        parts = relative.split("/")
        if not relative or any(p in ("", ".", "..") or is_hidden(p) for p in parts):
            raise ValueError(
                f"{self._sink.plugin_name} sink: relativePath {relative!r} does not name a visible file "
                f"below {self._fs.describe(self._root)}"
            )

    def prepare_commit(self, checkpoint_id: int) -> JsonValue:
        if not self._open:
            return None
        staged, final = [], []
        for relative in self._order:
            out, _ = self._open[relative]
            out.sync()
            staged.append(out.path)
            final.append(f"{self._root}/{relative}")
        info = {"staged": staged, "final": final, "rows": self._rows}
        self._open, self._order, self._rows = {}, [], 0
        return info

    def close(self) -> None:
        for out, _ in self._open.values():
            out.discard()
        self._open, self._order = {}, []
