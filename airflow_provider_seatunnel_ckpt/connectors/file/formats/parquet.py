"""``parquet`` files, read one row group at a time (written by the File sink's encoder)."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from ....storage.urls import RangeFile
from ...api import JsonValue, SourceReader


class ParquetReader(SourceReader):
    """Row groups before the position are skipped by their footer row counts."""

    def __init__(self, file: RangeFile, offset: int, batch_size: int, where: str, columns: list[str] | None = None):
        import pyarrow.parquet as pq

        self.file = file
        self._columns = columns  # None: all; else only these are fetched and decoded
        self._parquet = pq.ParquetFile(file, pre_buffer=True)
        meta = self._parquet.metadata
        if offset > meta.num_rows:
            raise ValueError(f"File source {where}: position {offset} is past the end ({meta.num_rows} rows)")
        first, skipped = 0, 0
        while first < meta.num_row_groups and skipped + meta.row_group(first).num_rows <= offset:
            skipped += meta.row_group(first).num_rows
            first += 1
        self._to_drop = offset - skipped
        self._position = offset
        self._batches = self._row_groups(first, meta.num_row_groups, batch_size)

    def _row_groups(self, first: int, end: int, batch_size: int) -> Iterator[pa.RecordBatch]:
        # One row group per iter_batches call: with pre_buffer, pyarrow fetches a row
        # group's column chunks in one coalesced request, but it pre-buffers *every*
        # row group it is given at once, which would hold the rest of the file in memory.
        for group in range(first, end):
            yield from self._parquet.iter_batches(batch_size=batch_size, row_groups=[group], columns=self._columns)

    def read_batch(self) -> pa.RecordBatch | None:
        for batch in self._batches:
            if self._to_drop:
                if batch.num_rows <= self._to_drop:
                    self._to_drop -= batch.num_rows
                    continue
                batch = batch.slice(self._to_drop)
                self._to_drop = 0
            if batch.num_rows:
                self._position += batch.num_rows
                return batch
        return None

    def position(self) -> JsonValue:
        return self._position

    def close(self) -> None:
        self._parquet.close()
        self.file.close()
