"""``Console`` sink: prints each batch's row count and first rows to stdout (debugging).

Option ``limit``: rows printed per batch (default 5; 0 prints counts only). Printing
happens in ``write``, so rows replayed after a failover are printed again: the console
is not exactly-once, and there is nothing to commit.
"""

from __future__ import annotations

import sys
from typing import Any, Iterable, Mapping, TextIO

import pyarrow as pa

from .api import JsonValue, Sink, SinkCommitter, SinkWriter
from .options import Options


class ConsoleSink(Sink):
    plugin_name = "Console"

    def __init__(self, options: Mapping[str, Any]):
        super().__init__(options)
        self.limit: int = Options(self.plugin_name, options, known={"limit"}).int("limit", 5, minimum=0)
        #: rows printed per subtask so far; the runtime starts a new writer at every
        #: checkpoint, so the running total lives here rather than in the writer
        self.printed: dict[int, int] = {}

    def create_writer(self, job_id: str, subtask: int, attempt: int) -> ConsoleSinkWriter:
        return ConsoleSinkWriter(subtask, self.limit, totals=self.printed)

    def create_committer(self, job_id: str) -> SinkCommitter:
        return ConsoleSinkCommitter()


class ConsoleSinkWriter(SinkWriter):
    def __init__(self, subtask: int, limit: int, out: TextIO | None = None, totals: dict[int, int] | None = None):
        self.subtask = subtask
        self.limit = limit
        self._out = out
        self._totals = totals if totals is not None else {}
        self.rows = 0

    def write(self, batch: pa.RecordBatch) -> None:
        out = self._out or sys.stdout  # looked up late so redirection (and capsys) work
        self.rows += batch.num_rows
        total = self._totals[self.subtask] = self._totals.get(self.subtask, 0) + batch.num_rows
        lines = [f"[Console subtask {self.subtask}] {batch.num_rows} rows (total {total})"]
        lines += [f"  {row}" for row in batch.slice(0, self.limit).to_pylist()] if self.limit else []
        print("\n".join(lines), file=out, flush=True)

    def prepare_commit(self, checkpoint_id: int) -> JsonValue:
        return None


class ConsoleSinkCommitter(SinkCommitter):
    def commit(self, commit_infos: Iterable[JsonValue]) -> None:
        pass

    def cleanup(self, keep: Iterable[JsonValue]) -> None:
        pass

    def rollback(self, after_checkpoint_id: int) -> None:
        pass  # printed output cannot be taken back; the console sink is for development
