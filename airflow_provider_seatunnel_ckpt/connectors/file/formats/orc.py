"""``orc`` files, read one stripe at a time (written by the File sink's encoder)."""

from __future__ import annotations

import pyarrow as pa

from ....storage.urls import RangeFile


class _OrcStripes:
    """An ORC file, one batch per stripe (only ``columns``, when given)."""

    def __init__(self, file: RangeFile, columns: list[str] | None):
        import pyarrow.orc as orc

        self._orc = orc.ORCFile(file)
        self._columns = columns
        self._next = 0

    def read_next_batch(self) -> pa.RecordBatch:
        if self._next >= self._orc.nstripes:
            raise StopIteration
        batch = self._orc.read_stripe(self._next, columns=self._columns)
        self._next += 1
        return batch

    def close(self) -> None:
        pass
