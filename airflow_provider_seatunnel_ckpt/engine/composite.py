"""Several sources, or several sinks, of one job as one to the rest of the engine.

The engine runs one split plan, one writer per subtask epoch and one committer. A job
with several sources reads the union of their splits (``connectors.SourceUnion``: each
split id says its source, ``1/range-000``); a job with several sinks writes each sink's own
writer and commits each sink's own output (:class:`SinkGroup`: one commit info per
checkpoint holds every sink's, by index). Each sink keeps its two-phase commit: the
group is prepared at the barrier and committed after the checkpoint is durable, so the
sinks of one checkpoint publish together or are all replayed.

A sink fed by a source of several tables (SeaTunnel's ``tables_configs``) is one sink per
table (:class:`TableSinks`, SeaTunnel's multi-table sink), each built with that table's
placeholders filled (``path = "/data/${table_name}"``), committed as a group.

Jobs with one source and one sink use the connector itself, unwrapped: their split ids
and commit infos are what they always were, and so are their checkpoints.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import pyarrow as pa

from ..connectors.api import Dataset, JsonValue, Sink, SinkCommitter, SinkWriter, close_all, table_of

#: where one sink's part sits in a commit info: its index at each level of ``{"sinks": [...]}``
Path = tuple[int, ...]


def leaves(sink: Sink, path: Path = ()) -> Iterator[tuple[Path, Sink]]:
    """Each plain sink of a job's sink (a group, a sink per table, or one sink), with the
    place of its part in the commit infos."""
    if isinstance(sink, _Sinks):
        for index, part in enumerate(sink.sinks):
            yield from leaves(part, (*path, index))
    else:
        yield path, sink


class _Sinks(Sink):
    """Several sinks committed as one: one commit info per checkpoint holds each sink's."""

    def __init__(self, sinks: Sequence[Sink]):
        super().__init__({})
        self.sinks = list(sinks)

    @property
    def run_attempt(self) -> int:
        return self.sinks[0].run_attempt

    @run_attempt.setter
    def run_attempt(self, value: int) -> None:
        for sink in self.sinks:
            sink.run_attempt = value

    @property
    def change_rows(self) -> str:  # type: ignore[override]  # read-only here: the group's is its sinks' mode
        modes = {sink.change_rows for sink in self.sinks}
        return modes.pop() if len(modes) == 1 else "refuse"

    def _writers(self, job_id: str, subtask: int, attempt: int) -> list[SinkWriter]:
        return [sink.create_writer(job_id, subtask, attempt) for sink in self.sinks]

    def create_committer(self, job_id: str) -> SinkCommitter:
        return GroupCommitter([sink.create_committer(job_id) for sink in self.sinks])

    def datasets(self) -> list[Dataset]:
        return [dataset for sink in self.sinks for dataset in sink.datasets()]

    @property
    def accepts_reads_the_target(self) -> bool:  # type: ignore[override]  # its sinks' answer
        return any(sink.accepts_reads_the_target for sink in self.sinks)

    def preflight(self) -> None:
        for sink in self.sinks:
            sink.preflight()

    def accepts_checkpointing(self, interval_ms: int, timeout_ms: int) -> None:
        for sink in self.sinks:
            sink.accepts_checkpointing(interval_ms, timeout_ms)

    def close(self) -> None:
        close_all(self.sinks)


class SinkGroup(_Sinks):
    """A job's several sinks: the router names the sink of each batch (``write_to``)."""

    plugin_name = "sinks"

    def create_writer(self, job_id: str, subtask: int, attempt: int) -> SinkWriter:
        return GroupWriter(self._writers(job_id, subtask, attempt))


class TableSinks(_Sinks):
    """One sink per table of its input; each batch goes to the sink of the table it
    carries. To the router it is one sink."""

    plugin_name = "tables"
    writes_tables = True

    def __init__(self, sinks: Sequence[Sink], table_names: Sequence[str]):
        super().__init__(sinks)
        self.table_names = list(table_names)

    def create_writer(self, job_id: str, subtask: int, attempt: int) -> SinkWriter:
        return TableWriter(self._writers(job_id, subtask, attempt), self.table_names)


class _Writers(SinkWriter):
    def __init__(self, writers: list[SinkWriter]):
        self.writers = writers

    def open(self, after_checkpoint_id: int) -> None:
        for writer in self.writers:
            writer.open(after_checkpoint_id)

    def prepare_commit(self, checkpoint_id: int) -> JsonValue:
        infos = [writer.prepare_commit(checkpoint_id) for writer in self.writers]
        return {"sinks": infos} if any(info is not None for info in infos) else None

    def close(self) -> None:
        close_all(self.writers)


class GroupWriter(_Writers):
    def write_to(self, sink: int, batch: pa.RecordBatch) -> None:
        self.writers[sink].write(batch)

    def write(self, batch: pa.RecordBatch) -> None:
        raise TypeError("a group of sinks is written one sink at a time (write_to)")


class TableWriter(_Writers):
    def __init__(self, writers: list[SinkWriter], table_names: Sequence[str]):
        super().__init__(writers)
        self._index = {name: index for index, name in enumerate(table_names)}

    def write(self, batch: pa.RecordBatch) -> None:
        table = table_of(batch.schema)
        index = self._index.get(table) if table is not None else None
        if index is None:  # the wiring checks prevent it: a bug, not a user error
            raise ValueError(f"a batch of table {table!r} reached a sink of tables {', '.join(self._index)}")
        self.writers[index].write(batch)


class GroupCommitter(SinkCommitter):
    def __init__(self, committers: list[SinkCommitter]):
        self.committers = committers

    def _parts(self, infos: Iterable[JsonValue]) -> list[list[JsonValue]]:
        parts: list[list[JsonValue]] = [[] for _ in self.committers]
        for info in infos:
            if not info:
                continue
            for index, part in enumerate(info["sinks"]):
                if part is not None:
                    parts[index].append(part)
        return parts

    def commit(self, commit_infos: Iterable[JsonValue]) -> None:
        for committer, part in zip(self.committers, self._parts(commit_infos)):
            if part:
                committer.commit(part)

    def cleanup(self, keep: Iterable[JsonValue]) -> None:
        for committer, part in zip(self.committers, self._parts(keep)):
            committer.cleanup(part)

    def check_rollback(self, after_checkpoint_id: int, newer_checkpoint_ids: Sequence[int]) -> None:
        for committer in self.committers:  # every sink is asked before any rolls back
            committer.check_rollback(after_checkpoint_id, newer_checkpoint_ids)

    def rollback(self, after_checkpoint_id: int) -> None:
        for committer in self.committers:
            committer.rollback(after_checkpoint_id)

    def start_fresh(self) -> None:
        for committer in self.committers:
            committer.start_fresh()

    def discard_orphans(self, subtask: int, up_to_checkpoint_id: int, keep: Iterable[JsonValue]) -> None:
        for committer, part in zip(self.committers, self._parts(keep)):
            committer.discard_orphans(subtask, up_to_checkpoint_id, part)

    def job_finished(self, restored_checkpoint_id: int | None) -> None:
        for committer in self.committers:
            committer.job_finished(restored_checkpoint_id)

    def discard_job(self) -> None:
        for committer in self.committers:
            committer.discard_job()

    def pending(self) -> list[Any]:
        """Every part's work not yet committed (``inspect``), of the parts that tell it."""
        return [item for committer in self.committers if hasattr(committer, "pending") for item in committer.pending()]
