"""The reader both table sources use: a split's batches in a fixed order, its position the
number of rows already emitted; a resumed reader opens the split again and drops them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from ..api import JsonValue, SourceReader, Split


class RowCountReader(SourceReader):
    """Subclasses give ``open_batches``: the split's batches (at most ``batch_size`` rows
    each), the same on every call."""

    def __init__(self, source: Any, split: Split, skip: int, batch_size: int):
        self.source = source
        self.split = split
        self.batch_size = batch_size
        self.emitted = skip
        self._skip = skip
        self._batches: Iterator[pa.RecordBatch] | None = None

    def open_batches(self) -> Iterator[pa.RecordBatch]:
        raise NotImplementedError

    def read_batch(self) -> pa.RecordBatch | None:
        if self._batches is None:
            self._batches = self.open_batches()
        for batch in self._batches:
            if self._skip:
                if batch.num_rows <= self._skip:
                    self._skip -= batch.num_rows
                    continue
                batch, self._skip = batch.slice(self._skip), 0
            if batch.num_rows:
                self.emitted += batch.num_rows
                return batch
        return None

    def position(self) -> JsonValue:
        return self.emitted
