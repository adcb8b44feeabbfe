"""``Console`` sink: prints each checkpoint's rows on the driver's stdout (debugging).

Spark sends whatever an executor's Python worker prints to the executor JVM's stderr,
mixed with Spark's logging, so the writer on the executor only counts rows and keeps
the first ``limit`` of each epoch; these travel as the epoch's commit info, and the
driver-side committer prints them once the checkpoint is complete (progress stays on
stderr). Change rows print with their kind, in SeaTunnel's console words.

Output format, options and replays: docs/jobs.md, "`Console`".
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from typing import Any, TextIO

import pyarrow as pa

from .api import JsonValue, Sink, SinkCommitter, SinkWriter, kind_names, strip_kinds, table_of
from .options import Option, OptionTable


class ConsoleSink(Sink):
    plugin_name = "Console"
    #: takes the batches of several tables (tables_configs); a sample row names its table
    writes_tables = True
    #: prints each row's kind, as SeaTunnel's ConsoleSinkWriter does (``SeaTunnelRow#kind=``)
    change_rows = "keep"
    OPTIONS = OptionTable(Option("limit", "int", "rows printed per subtask and epoch", 5, minimum=0))

    def __init__(self, options: Mapping[str, Any]):
        super().__init__(options)
        self.limit: int = self.parse_options()["limit"]

    def create_writer(self, job_id: str, subtask: int, attempt: int) -> ConsoleSinkWriter:
        return ConsoleSinkWriter(subtask, self.limit)

    def create_committer(self, job_id: str) -> ConsoleSinkCommitter:
        return ConsoleSinkCommitter()


class ConsoleSinkWriter(SinkWriter):
    """Counts one epoch's rows and keeps its first ``limit`` rows, as text (JSON-safe)."""

    def __init__(self, subtask: int, limit: int):
        self.subtask = subtask
        self.limit = limit
        self.rows = 0
        self.batches = 0
        self.sample: list[str] = []

    def write(self, batch: pa.RecordBatch) -> None:
        self.rows += batch.num_rows
        self.batches += 1
        wanted = self.limit - len(self.sample)
        if wanted > 0 and batch.num_rows:
            table = table_of(batch.schema)
            part = batch.slice(0, wanted)
            kinds = kind_names(part)
            rows = strip_kinds(part).to_pylist()
            texts = [f"kind={kind} {row}" for kind, row in zip(kinds, rows)] if kinds else [str(row) for row in rows]
            self.sample += [f"{table}: {text}" if table else text for text in texts]

    def prepare_commit(self, checkpoint_id: int) -> JsonValue:
        if not self.rows:
            return None  # an idle epoch prints nothing
        return {
            "subtask": self.subtask,
            "checkpoint": checkpoint_id,
            "rows": self.rows,
            "batches": self.batches,
            "sample": list(self.sample),
        }


class ConsoleSinkCommitter(SinkCommitter):
    """Prints committed epochs on the driver's stdout, each once per run."""

    def __init__(self, out: TextIO | None = None):
        self._out = out
        self._printed: set[tuple[int, int]] = set()
        #: rows printed per subtask in this run
        self.totals: dict[int, int] = {}

    def commit(self, commit_infos: Iterable[JsonValue]) -> None:
        epochs = [i for i in commit_infos if isinstance(i, dict) and {"subtask", "checkpoint", "rows"} <= i.keys()]
        out = self._out or sys.stdout  # looked up late so redirection (and capsys) work
        for info in sorted(epochs, key=lambda i: (int(i["checkpoint"]), int(i["subtask"]))):
            subtask, checkpoint = int(info["subtask"]), int(info["checkpoint"])
            if (subtask, checkpoint) in self._printed:
                continue  # a later checkpoint repeats infos its subtask had not yet seen committed
            self._printed.add((subtask, checkpoint))
            rows = int(info["rows"])
            total = self.totals[subtask] = self.totals.get(subtask, 0) + rows
            batches = int(info.get("batches") or 0)
            lines = [
                f"[Console subtask {subtask}] checkpoint {checkpoint}: {rows:,} row{'' if rows == 1 else 's'} in {batches:,} "
                f"batch{'' if batches == 1 else 'es'} (total {total:,})"
            ]
            lines += [f"  {row}" for row in info.get("sample") or ()]
            print("\n".join(lines), file=out, flush=True)

    def cleanup(self, keep: Iterable[JsonValue]) -> None:
        pass

    def rollback(self, after_checkpoint_id: int) -> None:
        pass  # printed output cannot be taken back; the console sink is for development
