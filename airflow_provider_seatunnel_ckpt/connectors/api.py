"""Connector interfaces: sources, transforms and two-phase-commit sinks.

Records move as ``pyarrow.RecordBatch`` end to end; no connector works row by row in
Python. Everything a connector keeps across a checkpoint is JSON-safe or raw bytes:
nothing is pickled, so a checkpoint written by one release is readable by the next.

A **source** is split on the driver (``Source.splits``) and its splits are dealt to
subtasks deterministically (``assign_splits``); a ``SourceReader`` reads one split from
a JSON *position*. A stateful **transform** keeps one state per split, so state moves
with its split on rescale. A **sink**'s ``SinkWriter`` stages its output at each barrier
(``prepare_commit``); the driver's ``SinkCommitter`` commits it, idempotently, once the
checkpoint is durable, and ``cleanup`` removes what no completed checkpoint covers.

The state snapshot contract (never change a value object once it is in the state):
docs/architecture.md, "A subtask's state, as bytes"; writing a connector: docs/jobs.md.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, overload

import pyarrow as pa

from ..errors import ConfigError
from .options import OptionTable, Parsed

JsonValue = Any

# Change rows (SeaTunnel's RowKind, ``transforms/row_kind.py``): a batch whose rows may be
# updates or deletes carries each row's kind in one reserved column, which the engine
# removes before every connector that does not read it (``engine/routing.py``).
#: the reserved column holding each row's kind
ROW_KIND = "__seatunnel_row_kind__"
#: SeaTunnel's kinds; the position is its byte value, the column's value
KINDS = ("INSERT", "UPDATE_BEFORE", "UPDATE_AFTER", "DELETE")
INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = range(4)
KIND_FIELD = pa.field(ROW_KIND, pa.int8(), nullable=False)


def has_kinds(schema: pa.Schema | None) -> bool:
    return schema is not None and schema.get_field_index(ROW_KIND) >= 0


@overload
def without_kinds(schema: None) -> None: ...


@overload
def without_kinds(schema: pa.Schema) -> pa.Schema: ...


def without_kinds(schema: pa.Schema | None) -> pa.Schema | None:
    return schema.remove(schema.get_field_index(ROW_KIND)) if schema is not None and has_kinds(schema) else schema


def strip_kinds(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` without the kind column (the same batch when it has none)."""
    return batch.drop_columns([ROW_KIND]) if has_kinds(batch.schema) else batch


def kinds_of(batch: pa.RecordBatch) -> pa.Array:
    """Each row's kind code; a batch without the column is all inserts."""
    index = batch.schema.get_field_index(ROW_KIND)
    if index < 0:
        return pa.repeat(pa.scalar(INSERT, pa.int8()), batch.num_rows)
    return batch.column(index)


def with_kinds(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` with the kind column: the same batch when it has one, else all inserts."""
    return batch if has_kinds(batch.schema) else batch.append_column(KIND_FIELD, kinds_of(batch))


def kind_code(value: Any, key: str, any_case: bool) -> int:
    """The byte value of a kind's name. SeaTunnel's option lists read enums in any case;
    FakeSource's ``rows`` take the exact name (Java's ``RowKind.valueOf``)."""
    text = value if isinstance(value, str) else str(value)
    name = text.strip().upper() if any_case else text
    if name not in KINDS:
        raise ConfigError(key, f"{text!r} is not a row kind (one of {', '.join(KINDS)})")
    return KINDS.index(name)


def kind_names(batch: pa.RecordBatch) -> list[str] | None:
    """Each row's kind name (``UPDATE_BEFORE``), or None when the batch carries no kinds."""
    index = batch.schema.get_field_index(ROW_KIND)
    return None if index < 0 else [KINDS[code] for code in batch.column(index).to_pylist()]


@dataclass(frozen=True)
class Split:
    """A unit of source work. ``split_id`` is stable across runs and parallelisms."""

    split_id: str
    #: connector-defined, JSON-safe description (file path, id range...)
    spec: Mapping[str, JsonValue] = field(default_factory=dict)


@dataclass(frozen=True)
class Dataset:
    """A dataset a connector reads or writes, named as OpenLineage names it (``namespace``
    ``postgres://host:port`` and ``name`` ``database.schema.table``, ``s3://bucket`` and a
    key, ``file`` and a path: connectors/datasets.py). Never holds a credential."""

    namespace: str
    name: str

    def __str__(self) -> str:
        """One location for messages: ``file:///out``, ``postgres://pg:5432/db.public.t``."""
        if self.namespace == "file":
            return f"file://{self.name}"
        return self.namespace + (self.name if self.name.startswith("/") else f"/{self.name}")


class Configured:
    """A connector or transform: its options as the job file wrote them, and the table
    that declares them (``OPTIONS``, read by ``parse_options`` and docs/options.md)."""

    plugin_name = "abstract"
    OPTIONS: ClassVar[OptionTable] = OptionTable()

    def __init__(self, options: Mapping[str, Any]):
        self.options = dict(options)

    def parse_options(self) -> Parsed:
        """The typed values of ``OPTIONS``; a ``ConfigError`` for the first one wrong."""
        return self.OPTIONS.parse(self.plugin_name, self.options)


class Connector(Configured):
    """What sources and sinks have in common: their options, and the datasets they touch."""

    def datasets(self) -> list[Dataset]:
        """The datasets it reads (a source) or writes (a sink), as OpenLineage names them;
        [] for none that lasts (``Sequence``, ``Console``) or none known before it runs (a
        topic pattern). Only the options decide, nothing is contacted: Airflow's lineage
        and assets use it, and the engine records a sink's in every checkpoint (its
        identity, engine/sink_identity.py), so it must not change while the options stay."""
        return []


def assign_splits(splits: Sequence[Split], parallelism: int, subtask: int) -> list[Split]:
    """Round-robin by position in the (deterministic) split list."""
    return [s for i, s in enumerate(splits) if i % parallelism == subtask]


@dataclass
class ReaderContext:
    """What a reader needs to know about where it runs."""

    subtask: int
    parallelism: int
    #: rows per batch the source should aim for (the job's ``env.batch_size``)
    batch_size: int = 65_536
    #: batches sized by time (engine/batch_sizer.py): the most rows the engine wants in
    #: the next batch, changed by the subtask between two ``read_batch`` calls while its
    #: CPU is shared; None: no limit. Readers follow it through ``rows_for_next_batch``.
    row_limit: int | None = None
    #: set by the engine while a barrier waits for this reader's thread: a pause ends then
    #: (``pause``); None (outside the engine): a pause is a plain sleep
    interrupt: threading.Event | None = field(default=None, compare=False, repr=False)

    def pause(self, seconds: float) -> bool:
        """Wait ``seconds`` for a source's own pace (FakeSource's ``split.read-interval``,
        Sequence's ``rows_per_second``). True once the whole wait has passed; False when
        it was cut short because a barrier waits for this thread: the reader then returns
        an empty batch and is asked again after the barrier, so a checkpoint never waits
        for a source's idle time."""
        if seconds <= 0:
            return True
        if self.interrupt is None:
            time.sleep(seconds)
            return True
        return not self.interrupt.wait(seconds)

    def rows_for_next_batch(self, configured: int | None = None) -> int:
        """The rows a reader puts in its next batch: the source's own batch size
        (``configured``), else the job's, within the engine's current ``row_limit``. A
        reader that asks at every ``read_batch`` (not once when it is created) lets a
        barrier wait at most about one target time for the batch in flight."""
        rows = configured or self.batch_size
        limit = self.row_limit
        return max(1, rows if limit is None else min(rows, limit))


class SourceReader:
    """Reads one split. ``read_batch`` returns None at the end of the split, and may
    return an empty batch when nothing arrived yet (an unbounded split)."""

    def read_batch(self) -> pa.RecordBatch | None:
        raise NotImplementedError

    def position(self) -> JsonValue:
        """Where to resume so that the next row read is the first not yet emitted."""
        raise NotImplementedError

    def close(self) -> None:
        pass


class Source(Connector):
    """Configured from a job file's ``source`` entry (``options`` without plugin_name)."""

    plugin_name = "abstract"
    #: False: a subtask reads its splits one after the other. True: it keeps a reader
    #: open on each and takes a batch from each in turn, for splits that do not end
    #: (a Kafka partition); ``read_batch`` must then return (an empty batch) when no
    #: record arrives within a short wait, so the others and barriers get their turn.
    reads_splits_together = False
    #: seconds between two ``discover_splits`` calls while the job runs (live
    #: discovery: new splits go to the running subtasks, which then never report the
    #: end of their input, since more may come); None = only when a run restores
    discovery_interval_s: float | None = None
    #: the change kinds (SeaTunnel's ``UPDATE_BEFORE``, ``UPDATE_AFTER``, ``DELETE``) its
    #: rows may have; their batches then carry each row's kind in the reserved column of
    #: ``transforms/row_kind.py``. () = inserts only, and no such column
    change_rows: tuple[str, ...] = ()

    def splits(self, parallelism: int) -> list[Split]:
        """Runs on the driver; must return the same list for the same options."""
        raise NotImplementedError

    def create_reader(self, split: Split, position: JsonValue | None, context: ReaderContext) -> SourceReader:
        """Runs on an executor; ``position`` None = from the beginning of the split."""
        raise NotImplementedError

    def discover_splits(self, known: Sequence[Split]) -> list[Split]:
        """Runs on the driver when a run restores a stored split plan, and every
        ``discovery_interval_s`` while the job runs: splits that exist now but are not in
        ``known`` (a Kafka partition added since), read from their beginning. Default:
        none, the plan is fixed."""
        return []

    def preflight(self) -> None:
        """Check the live system once, on the driver, before Spark starts (connect, look
        the table up...). Raise ``ConfigError`` for bad input, ``ConnectorError`` when the
        system cannot be reached. ``__init__`` only checks the options themselves: it
        also runs on every executor."""

    def checkpoint_completed(self, positions: Mapping[str, JsonValue]) -> None:
        """Runs on a subtask, on its processing thread, after a checkpoint completed:
        ``positions`` are the checkpointed positions of this subtask's splits being read,
        and the last position of each split that finished since the previous call (by
        split id; a finished split is named once). For information only (Kafka commits
        them to its consumer group so monitoring sees the lag): restores use the
        checkpoint, never this."""

    def close(self) -> None:
        """Release what the source holds on a subtask (a client made for
        ``checkpoint_completed``); called when the subtask attempt ends."""

    def produced_schema(self) -> pa.Schema | None:
        """The schema of the batches readers will emit, when the driver knows it after
        ``preflight`` (None: only reading tells). Transforms bind their expressions
        against it before Spark starts (``Transform.output_schema``). It never reaches a
        system itself: ``run --check`` asks for it without ``preflight``."""
        return None


class Transform(Configured):
    """Batch in, batch out. Stateless unless ``stateful`` is True."""

    plugin_name = "abstract"
    stateful = False
    #: False: change rows (``Source.change_rows``) must not reach it, and a job where they
    #: would is refused with one line naming it; the engine removes the kind column before
    #: it. True: it reads the column itself (``transforms/row_kind.py``) and
    #: ``change_rows_out`` says which kinds its output may still carry
    takes_change_rows = False

    def open(self, context: ReaderContext) -> None:
        pass

    def change_rows_out(self, kinds: Sequence[str]) -> tuple[str, ...]:
        """The change kinds its output may carry when its input may carry ``kinds``."""
        return tuple(kinds)

    def output_schema(self, input_schema: pa.Schema | None) -> pa.Schema | None:
        """Check the options against ``input_schema`` (on the driver, before Spark
        starts) and return the schema of the batches ``process`` returns for it. None in,
        or an output only processing tells (a Python function), gives None. Raise
        ``ConfigError`` naming the option (``option_key``)."""
        return None

    def process(self, batch: pa.RecordBatch, split_state: dict[str, Any] | None) -> pa.RecordBatch | None:
        """Return the transformed batch (None drops it). ``split_state`` is this split's
        mutable state for stateful transforms (JSON-safe values or ``bytes``), None
        otherwise. Containers may be updated in place; a value object must never be
        changed once it is in the state (the snapshot contract: docs/architecture.md,
        "A subtask's state, as bytes")."""
        raise NotImplementedError


class SinkWriter:
    """Per subtask attempt. Only ``write`` runs on the processing thread's hot path."""

    def open(self, after_checkpoint_id: int) -> None:
        """Called once before the first ``write``: the epoch follows checkpoint
        ``after_checkpoint_id`` (0 when it follows none). Sinks that name an epoch's
        resources after it (the Kafka sink's transactional ids) can find them again on
        restore; most sinks need nothing here."""

    def write(self, batch: pa.RecordBatch) -> None:
        raise NotImplementedError

    def prepare_commit(self, checkpoint_id: int) -> JsonValue:
        """Stage everything written since the last call; return what the committer
        needs to publish it (or None when nothing was written). Called on the barrier;
        may block on I/O (the runtime calls it off the processing thread when it can)."""
        raise NotImplementedError

    def close(self) -> None:
        pass


class SinkCommitter:
    """Runs on the driver. Every method must be idempotent."""

    def commit(self, commit_infos: Iterable[JsonValue]) -> None:
        raise NotImplementedError

    def cleanup(self, keep: Iterable[JsonValue]) -> None:
        """Remove staged output not referenced by ``keep`` (the commit infos of the
        restored or completed checkpoint). Called on restore and when the job ends."""
        raise NotImplementedError

    def check_rollback(self, after_checkpoint_id: int, newer_checkpoint_ids: Sequence[int]) -> None:
        """Raise (``ConfigError`` on key ``--restore``) if ``rollback(after_checkpoint_id)``
        would refuse; change nothing.

        Called on restore before anything is deleted: the completed checkpoints
        ``newer_checkpoint_ids`` (newer than the restored one) are about to be discarded,
        and a sink that cannot un-publish their output must stop the run while they
        still exist. The default accepts (sinks that can roll back)."""

    def rollback(self, after_checkpoint_id: int) -> None:
        """Remove *committed* output of epochs newer than ``after_checkpoint_id``.

        Called on restore: when the job resumes from an older cut than its newest
        committed output (the newest checkpoint was damaged, or ``--restore ID``),
        those rows will be produced again. Sinks that cannot un-publish should raise.
        """
        raise NotImplementedError

    def start_fresh(self) -> None:
        """Called once on the driver when a run starts the job from its beginning (it
        restores no checkpoint or savepoint), after the claim and the restore of the sink
        output (``rollback(0)``, ``cleanup``), before any writer opens; never when a run
        restores one. SeaTunnel's save modes (``schema_save_mode = RECREATE_SCHEMA``...) run
        here, as SeaTunnel runs them when a job is submitted and not when it resumes. A
        driver that dies before the job's first checkpoint completes has committed nothing,
        and the next run starts fresh again: this must be idempotent. A ``ConfigError``
        raised here fails the run with its message."""

    def discard_orphans(self, subtask: int, up_to_checkpoint_id: int, keep: Iterable[JsonValue]) -> None:
        """Subtask ``subtask`` restarted from the last completed checkpoint (region
        failover, or a re-established control channel): what it prepared for
        checkpoints up to ``up_to_checkpoint_id`` that ``keep`` (the commit infos of the
        newest durable checkpoint) does not name will never be committed. Sinks whose
        prepared work holds resources the restarted subtask needs (a database
        transaction's row locks) release it here; the default leaves it to ``cleanup``
        at the end of the run."""

    def job_finished(self, restored_checkpoint_id: int | None) -> None:
        """Called once on the driver when the job has finished (its final checkpoint is
        committed; not after a stop-with-savepoint). ``restored_checkpoint_id`` is the
        checkpoint this run restored from (None: it ran the job from its beginning). A
        ``DataError`` raised here fails the run with its message (the ``Assert`` sink's
        row counts); the committed output stays."""

    def discard_job(self) -> None:
        """The job's checkpoints are being deleted (``--discard-existing``, the end of a
        job with delete-on-finish, ``seatunnel-ckpt delete``): drop the sink's own
        bookkeeping for it. Committed output stays."""


class Sink(Connector):
    plugin_name = "abstract"
    #: The number of the run attempt (the driver's claim on the job, engine/fencing.py)
    #: this sink instance works for; the engine sets it before creating writers, and on
    #: the driver once the job is claimed (before the committer is used). A sink that names per-epoch resources in a shared system (transaction
    #: ids, prepared-transaction gids, staged file names) puts it in those names, so the
    #: subtasks of a driver that was taken over but still runs (a zombie) never touch
    #: the resources of the run that claimed the job after it.
    run_attempt: int = 0
    #: this sink's name among the job's sinks of its class, set by the engine: None for the
    #: first (or only) one, else its place (``sink[1]``, ``sink[0] table db.t2``). A sink
    #: that names per-epoch resources in a shared system by the job puts it in those names
    #: too, so two sinks of one job never share one, and a job with one such sink keeps the
    #: names earlier releases gave (their checkpoints restore as before).
    instance: str | None = None
    #: what it does with change rows (``Source.change_rows``): "refuse" (a job that sends
    #: it some is refused with one line naming it), "ignore" (the engine removes the kind
    #: column before it: a change row is written as a plain row) or "keep" (its batches
    #: keep the column of ``transforms/row_kind.py``)
    change_rows: str = "refuse"
    #: True: the sinks of a source's several tables may all write one target (the same
    #: options for each table): their epochs stay apart there (a database table written in
    #: transactions named per sink instance). False: each table must name its own target
    #: (``${table_name}`` in a path), or files of one would overwrite the other's
    tables_may_share_target = False

    def create_writer(self, job_id: str, subtask: int, attempt: int) -> SinkWriter:
        raise NotImplementedError

    def create_committer(self, job_id: str) -> SinkCommitter:
        raise NotImplementedError

    def preflight(self) -> None:
        """As ``Source.preflight``: live checks on the driver before Spark starts."""

    #: ``accepts`` reads the sink's target (a table from its catalog or its path): a run
    #: asks it, ``run --check``, which contacts no system, leaves it to the run
    accepts_reads_the_target = False

    def accepts(self, schema: pa.Schema) -> None:
        """Raise ``ConfigError`` if rows of ``schema`` (the job's output, when the driver
        knows it) cannot be written: an existing table's columns. Runs on the driver after
        ``preflight``, before Spark starts, so the error is one line and nothing is written."""

    def accepts_checkpointing(self, interval_ms: int, timeout_ms: int) -> None:
        """Raise ``ConfigError`` if this sink cannot keep an epoch's output pending for as
        long as the job's checkpoints may take to commit it: ``interval_ms`` between them
        (``checkpoint.interval``), each allowed ``timeout_ms`` (``checkpoint.timeout``).
        On the driver, before Spark starts: the error comes before any row is written."""

    def accepts_change_rows(self) -> None:
        """Raise ``ConfigError`` if this sink (``change_rows = "keep"``) cannot write the
        change rows a source upstream declares, whatever their schema (known or not): on
        the driver, by ``run --check`` and before Spark starts."""

    def close(self) -> None:
        """Release what the sink holds for its writers (pooled connections); called when
        a subtask attempt ends."""


#: the schema metadata key that names a batch's table: set by a source of several tables
#: (SeaTunnel's ``tables_configs``), read by the sinks that write several tables
TABLE_KEY = b"seatunnel.table"


def table_of(schema: pa.Schema) -> str | None:
    """The table a batch of ``schema`` belongs to (None: the job's tables are not named)."""
    name = (schema.metadata or {}).get(TABLE_KEY)
    return name.decode() if name is not None else None


def iter_batches(reader: SourceReader) -> Iterator[pa.RecordBatch]:
    while (batch := reader.read_batch()) is not None:
        yield batch


def close_all(closables: Iterable[Any]) -> None:
    """Close each (readers, writers, connectors of a group); a failure does not stop the
    others from closing, and the first one is raised at the end."""
    errors = []
    for closable in closables:
        try:
            closable.close()
        except Exception as err:
            errors.append(err)
    if errors:
        raise errors[0]
