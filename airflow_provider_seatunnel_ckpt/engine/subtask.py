"""One parallel subtask: source reader -> transforms -> sink writer, with barriers.

Runs inside a long-running Spark task, on three kinds of threads: the processing thread
(the Spark task's own: reads, transforms and writes Arrow batches, and between two
batches checks a flag for a barrier), the control channel's reader thread (records
coordinator messages, and takes a barrier itself while the processing thread is inside a
read or the transforms: the cut then goes before that batch, see
``_take_barriers_in_flight``) and one async thread that finishes each barrier in order
(stages the epoch's sink output, encodes and uploads the snapshot, then ACKs or
declines). Taking a barrier is only the synchronous snapshot and a fresh sink writer.
The sink writer only prepares; the driver commits once the checkpoint is durable.

The protocol and the threads: docs/architecture.md, "The protocol".
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from ..connectors.api import ReaderContext, Sink, Split
from ..errors import DataError
from ..jobfile.spec import JobSpec
from ..storage import StateHandle as StoredHandle
from ..storage.layout import Layout
from ..storage.model import INLINE_STATE_LIMIT
from .batch_sizer import DEFAULT_TARGET_MS, BatchSizer
from .messages import (
    AbortCheckpoint,
    Ack,
    AckStats,
    AddSplits,
    AssignSplits,
    CheckpointKind,
    Decline,
    EndOfInput,
    FinishJob,
    NotifyComplete,
    Register,
    RequestSplit,
    RestoreState,
    StateHandle,
    TaskFailed,
    TriggerBarrier,
    decode,
    encode,
)
from .split_book import SplitBook, share_of
from .state_codec import (
    EncodedState,
    SplitState,
    StateSnapshot,
    SubtaskState,
    decode_subtask_state,
    frame_snapshot,
    merge_split_states,
)

log = logging.getLogger(__name__)

RESTORE_TIMEOUT_S = 600.0
IDLE_WAIT_S = 0.2


#: what ``_process_batch`` did
_READ, _SPLIT_ENDED, _STOPPED = object(), object(), object()


@dataclass
class _OpenSplit:
    """A split being read: its reader, its state, which source it is of, its plan index."""

    reader: Any
    state: SplitState
    origin: int
    index: int
    split: Split


class SubtaskRestart(Exception):
    """The control channel was re-established: restart from the restored state."""


@dataclass(frozen=True)
class SubtaskContext:
    """Everything a subtask needs, shipped to the executor in the Spark task closure."""

    job_id: str
    pipeline_id: int
    job: Mapping[str, Any]  #: JobSpec.to_json()
    splits: tuple[Split, ...]
    driver_address: tuple[str, int]
    token: str
    storage: Any  #: a picklable CheckpointStorage
    state_is_process_local: bool = False  #: memory storage: state travels inline
    #: the driver's run attempt (its claim on the job): part of every name a subtask
    #: gives storage or a sink's resources, so a zombie driver's subtasks touch none of
    #: the claimant's
    run_attempt: int = 0
    #: the driver deals this job's splits on request (engine/split_enumerator.py); else
    #: each subtask reads its round-robin share
    dealt: bool = False


class SubtaskRuntime:
    def __init__(
        self, context: SubtaskContext, subtask: int, attempt: int, client_factory: Callable[..., Any] | None = None
    ):
        self.ctx = context
        self.spec = JobSpec.from_json(context.job)
        self.subtask = subtask
        self.attempt = attempt
        self.parallelism = self.spec.parallelism
        self._client_factory = client_factory
        self._lock = threading.Lock()
        self._barriers: deque[TriggerBarrier] = deque()
        self._barrier_pending = False  # read on the hot path without a lock (GIL-atomic)
        #: held while the channel's thread takes barriers in flight, and to open or close
        #: the window in which it may (``_in_flight``: the processing thread is inside a
        #: read or the transforms, and has touched no split state or sink of that batch)
        self._cut = threading.Lock()
        self._in_flight = False
        #: barriers may be taken in flight: no transform of the job keeps state (a
        #: stateful one changes its split's state while the batch is transformed)
        self._cuts_in_flight = False
        self._restore: RestoreState | None = None
        self._restore_event = threading.Event()
        self._wake = threading.Event()
        #: set while barriers wait to be taken: ends a reader's pause (ReaderContext.pause)
        self._barrier_interrupt = threading.Event()
        self._finish_id: int | None = None
        self._restart = False
        self._fatal: BaseException | None = None
        self._prepared: dict[int, Any] = {}  # epoch checkpoint id -> sink commit info
        #: checkpoint id -> the split positions its barrier snapshotted, until it completes
        self._positions_at: dict[int, dict[str, Any]] = {}
        #: the positions of the newest completed checkpoint, for the source's hook
        self._completed_positions: dict[str, Any] | None = None
        self._source: Any = None
        #: splits discovered while the job runs (AddSplits / RestoreState): only grows
        self._added_splits: tuple[tuple[str, Any], ...] = ()
        self._splits_added = False  # set by the reader thread, taken by the processing thread
        self._plan_seen = 0  #: the plan's length when this subtask last looked (processing thread)
        #: splits dealt on request (AssignSplits, reader thread), entered in the book by the
        #: processing thread; how many arrived since the restore, and how many of those
        #: before each barrier (a barrier's state names exactly those: split_enumerator.py)
        self._assigned: list[int] = []
        self._assigned_seen = 0
        self._assigned_booked = 0
        self._assigned_at_barrier: dict[int, int] = {}
        #: dealt splits in the book that the read loop has not taken yet
        self._booked: list[tuple[int, Split]] = []
        self._no_more = False  #: the driver has no split left to deal (a bounded source)
        self._requested = False  #: a RequestSplit is unanswered (processing thread)
        self._book: SplitBook | None = None
        #: bumped on every re-registration: barrier work of an older one is stale
        self._generation = 0
        self._rows_since_barrier = 0
        #: a split has been read from since this attempt restored (see _process_batch)
        self._has_read = False
        #: batches sized by time: the row limit of the next batch, from the pace of the last
        target_ms = self.spec.env.get("batch_time_ms", DEFAULT_TARGET_MS)
        self._sizer = BatchSizer(self.spec.batch_size, target_ms / 1000)
        self._clock: Callable[[], float] = time.perf_counter
        #: what the readers and transforms are given (its row_limit is the sizer's)
        self._context = ReaderContext(
            self.subtask, self.parallelism, self.spec.batch_size, interrupt=self._barrier_interrupt
        )
        self.rows_total = 0
        self.barriers_handled = 0
        self._client: Any = None

    # ---- channel callbacks (reader thread: record only) -----------------------------
    def _on_message(self, raw: Mapping[str, Any]) -> None:
        message = decode(raw)
        if isinstance(message, TriggerBarrier):
            with self._lock:
                self._barriers.append(message)
                self._assigned_at_barrier[message.checkpoint_id] = self._assigned_seen
            self._barrier_pending = True
            self._barrier_interrupt.set()  # a reader pausing for its pace returns now
            self._take_barriers_in_flight()
        elif isinstance(message, RestoreState):
            with self._lock:  # what was dealt before belongs to the state this restore replaces
                self._assigned, self._no_more = [], False
                self._assigned_seen = self._assigned_booked = 0
                self._assigned_at_barrier = dict.fromkeys(self._assigned_at_barrier, 0)
            self._restore = message
            self._restore_event.set()
        elif isinstance(message, AssignSplits):
            with self._lock:
                self._assigned.extend(message.indices)
                self._assigned_seen += len(message.indices)
                self._no_more = self._no_more or message.no_more
        elif isinstance(message, NotifyComplete):
            with self._lock:
                for checkpoint_id in [c for c in self._prepared if c <= message.checkpoint_id]:
                    del self._prepared[checkpoint_id]
                # every completed barrier's positions, newest last: a split finished
                # before an aborted one is named only there
                done = sorted(c for c in self._positions_at if c <= message.checkpoint_id)
                if done:
                    positions = dict(self._completed_positions or {})
                    for checkpoint_id in done:
                        positions.update(self._positions_at.pop(checkpoint_id))
                    self._completed_positions = positions
        elif isinstance(message, AddSplits):
            self._note_added_splits(message.added_splits)
        elif isinstance(message, FinishJob):
            self._finish_id = message.checkpoint_id
        elif isinstance(message, AbortCheckpoint):
            log.info("subtask %d: checkpoint %d aborted: %s", self.subtask, message.checkpoint_id, message.reason)
        self._wake.set()

    def _note_added_splits(self, added: tuple[tuple[str, Any], ...]) -> None:
        with self._lock:
            if len(added) > len(self._added_splits):  # the lists only grow: ignore a stale one
                self._added_splits = added
                self._splits_added = True

    def _on_reconnect(self) -> None:
        # Everything in flight belongs to the old registration: the coordinator aborts
        # its pending checkpoints and answers the new Register with a restore state.
        # (Barriers arriving after the new Register are kept, even before the restore;
        # they are taken only once the processing thread has restarted.) Barrier work
        # of the old registration still running on the async thread is stale: the
        # generation tells it not to record its staged output or ACK.
        self._restore_event.clear()
        with self._lock:
            self._restart = True
            self._generation += 1
            self._barriers.clear()
            self._assigned_at_barrier.clear()  # those barriers' counts: they are never taken
            self._prepared.clear()
            self._positions_at.clear()
            self._barrier_pending = False
        self._barrier_interrupt.set()  # a paused reader returns, and the restart begins
        self._send(Register(self.subtask, self.attempt))
        self._wake.set()

    def _on_channel_closed(self, error: BaseException | None) -> None:
        """The client gave up reconnecting (or was closed by ``run``: ``error`` None).

        A subtask without its channel can never take part in a checkpoint again: it
        would run on with one epoch growing for ever (a database transaction holding its
        locks, staged files piling up) while the driver waits for it. Failing makes Spark
        retry the task, and the next attempt registers and restores (region failover)."""
        if error is None:
            return
        self._fatal = ConnectionError(
            f"subtask {self.subtask}: the control channel to the driver is lost for good: {error}"
        )
        self._restore_event.set()  # a wait for the restore state ends too
        self._wake.set()

    def _send(self, message: Any) -> None:
        self._client.send(encode(message))

    # ---- main ---------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        from .transport import ControlClient

        factory = self._client_factory or ControlClient
        self._client = factory(
            self.ctx.driver_address,
            self.ctx.token,
            label=f"subtask-{self.subtask}/attempt-{self.attempt}",
            on_message=self._on_message,
            on_reconnect=self._on_reconnect,
            on_close=self._on_channel_closed,
            reconnect=True,
        )
        self._client.connect()
        self._async = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"subtask-{self.subtask}-async")
        try:
            self._send(Register(self.subtask, self.attempt))
            while True:
                try:
                    self._run_attempt()
                    break
                except SubtaskRestart:
                    log.warning(
                        "subtask %d: control channel re-established; restarting from the restored state", self.subtask
                    )
                    self._restart = False
            return {
                "subtask": self.subtask,
                "attempt": self.attempt,
                "rows": self.rows_total,
                "barriers": self.barriers_handled,
                "finished_at": self._finish_id,
            }
        except DataError as err:
            # The job fails on the driver with this one line; the task itself ends quietly
            # (no executor traceback for a broken rule of the job), unless the driver
            # could not be told, when Spark must see the failure.
            self._send(TaskFailed(self.subtask, self.attempt, str(err)[:2000], fatal=True))
            return {
                "subtask": self.subtask,
                "attempt": self.attempt,
                "rows": self.rows_total,
                "barriers": self.barriers_handled,
                "finished_at": None,
                "failed": str(err)[:2000],
            }
        except BaseException as err:
            try:
                self._send(TaskFailed(self.subtask, self.attempt, f"{type(err).__name__}: {err}"[:2000]))
            except Exception:  # the channel may be what failed
                pass
            raise
        finally:
            self._async.shutdown(wait=False, cancel_futures=True)
            self._release_connectors()
            self._client.close()

    def _run_attempt(self) -> None:
        if not self._restore_event.wait(RESTORE_TIMEOUT_S):
            raise TimeoutError(
                f"subtask {self.subtask}: no restore state from the coordinator in {RESTORE_TIMEOUT_S:.0f} s"
            )
        if self._fatal is not None:
            raise self._fatal
        restore = self._restore
        assert restore is not None  # set before _restore_event
        # A restart after a re-established channel: the epoch the previous run had
        # open is aborted (its rows are read again; a database sink's open transaction
        # would otherwise hold locks on the keys about to be written again).
        self._release_connectors()
        states = self._load_states(restore)
        self._note_added_splits(restore.added_splits)
        self._requested, self._booked = False, []  # dealt to the registration this restore replaces
        self._has_read = False
        with self._lock:  # a restart's interrupt is spent; barriers kept for this run keep it set
            if not self._barriers:
                self._barrier_interrupt.clear()
        from .composite import SinkGroup
        from .routing import Router, load_sinks, load_sources, load_transforms, one_sink, one_source

        sources = load_sources(self.spec.sources)
        self._source = source = one_source(sources)
        transforms = load_transforms(self.spec.transforms)
        sinks = load_sinks(self.spec, sources)
        self._router = Router(self.spec.graph, transforms, sinks, sources)
        self._cuts_in_flight = not any(transform.stateful for transform in transforms)
        self._sink: Sink | None = one_sink(sinks)
        self._grouped = isinstance(self._sink, SinkGroup)
        self._sink.run_attempt = self.ctx.run_attempt
        self._context = context = ReaderContext(
            self.subtask, self.parallelism, self.spec.batch_size, interrupt=self._barrier_interrupt
        )
        context.row_limit = self._sizer.limit
        for transform in transforms:
            transform.open(context)
        where = f"checkpoint {restore.checkpoint_id}"
        if self.ctx.dealt:
            share = self._restored_dealt(states, restore.shared, where)
            self._book = book = SplitBook.restored(share, states, self._plan_seen, where, dealt=True)
        else:
            share = self._my_splits()
            self._book = book = SplitBook.restored(share, states, self._plan_seen, where)
        self._writer = self._new_writer(restore.checkpoint_id or 0)

        if self._read_splits(source, book.unfinished(), context):
            self._send(EndOfInput(self.subtask, self.attempt))
        while not self._idle_step():
            pass
        self._async.submit(lambda: None).result()  # drain: every ACK is out before we return
        # the final checkpoint's positions (a split finished in its epoch is named only there)
        self._tell_source_completed()
        self._release_connectors()

    def _release_connectors(self) -> None:
        writer, sink, source = getattr(self, "_writer", None), getattr(self, "_sink", None), self._source
        self._writer = self._sink = self._source = None
        for closable in (writer, sink, source):
            if closable is not None:
                try:
                    closable.close()
                except Exception as err:  # releasing resources: report, never mask the real error
                    log.warning("subtask %d: closing %s failed: %s", self.subtask, type(closable).__name__, err)

    def _my_splits(self, after: int = 0) -> list[tuple[int, Split]]:
        """This subtask's round-robin share of the plan as known now, with each split's
        plan index: the job's plan and the splits discovered since (appended, so no split
        ever changes subtask or index). ``after``: only splits at that index or later."""
        plan = self._plan()
        return [(i, s) for i, s in share_of(plan, self.parallelism, self.subtask) if i >= after]

    def _plan(self) -> tuple[Split, ...]:
        """The job's plan and the splits discovered since (processing thread)."""
        with self._lock:
            added, self._splits_added = self._added_splits, False
        plan = self.ctx.splits + tuple(Split(split_id, spec) for split_id, spec in added)
        self._plan_seen = len(plan)
        return plan

    def _split_at(self, index: int) -> Split:
        """The split at plan ``index`` (the job's plan, then the splits discovered since),
        without building the plan: dealt splits are looked up one chunk at a time."""
        base = self.ctx.splits
        if index < len(base):
            return base[index]
        with self._lock:
            split_id, spec = self._added_splits[index - len(base)]
        return Split(split_id, spec)

    def _restored_dealt(self, states: Any, shared: bool, where: str) -> list[tuple[int, Split]]:
        """The splits a restored state holds, to read on (dealt splits): all of this
        subtask's own state; of every subtask's (another parallelism), those whose index
        falls to it, so that each split goes to one subtask. The rest are the driver's to
        deal (the pool in the checkpoint's manifest)."""
        plan = self._plan()
        index_of = {split.split_id: index for index, split in enumerate(plan)}
        entries = []
        for split_id in states.splits:
            index = index_of.get(split_id)
            if index is None:
                from ..storage import CorruptCheckpointError

                raise CorruptCheckpointError(f"{where}: split {split_id!r} is not in the job's split plan")
            if not shared or index % self.parallelism == self.subtask:
                entries.append((index, plan[index]))
        return sorted(entries, key=lambda entry: entry[0])

    def _book_assigned(self, upto: int | None = None) -> None:
        """Enter dealt splits in the book: all that arrived, or (a barrier being taken)
        the first ``upto`` since the restore, those that arrived before that barrier.

        Never those that arrived after a barrier not taken yet: the read loop books
        before ``_process_batch`` takes the barriers, and a split booked then would be
        in that barrier's state while the driver's pool at it still holds it (read
        twice after a restore from it)."""
        with self._lock:
            if upto is None and self._barriers:
                upto = min(self._assigned_at_barrier.get(b.checkpoint_id, 0) for b in self._barriers)
            count = len(self._assigned) if upto is None else max(0, upto - self._assigned_booked)
            indices, self._assigned = self._assigned[:count], self._assigned[count:]
            self._assigned_booked += len(indices)
        if not indices:
            return
        entries = [(index, self._split_at(index)) for index in indices]
        assert self._book is not None  # set by _run_attempt before the splits are read
        self._book.assign(entries)
        self._booked.extend(entries)
        self._requested = False

    def _take_assigned(self) -> list[tuple[int, Split]]:
        """Splits the driver dealt since the last look, for the read loop."""
        self._book_assigned()
        entries, self._booked = self._booked, []
        return entries

    def _idle_step(self) -> bool:
        """Nothing to read: answer barriers and wait a little. True once the job finishes."""
        if self._finish_id is not None:
            return True
        self._check()
        if self._barrier_pending:
            self._take_barriers()
            return False  # splits dealt after those barriers may wait: look again first
        self._tell_source_completed()
        self._wake.wait(IDLE_WAIT_S)
        self._wake.clear()
        return False

    def _take_added_splits(self) -> list[tuple[int, Split]]:
        """This subtask's share of newly discovered splits, read from their beginning. (A
        split the restored checkpoint has a position for is never new here: that
        checkpoint's plan, and so the RestoreState, already named it.)"""
        if self.ctx.dealt:  # the driver deals them (_split_at finds them by index)
            with self._lock:
                self._splits_added = False
            return []
        new = self._my_splits(after=self._plan_seen)
        assert self._book is not None  # set by _run_attempt before the splits are read
        self._book.add(new)
        if new:
            log.info(
                "subtask %d: reading %d discovered splits: %s",
                self.subtask,
                len(new),
                ", ".join(split.split_id for _, split in new),
            )
        return new

    def _read_splits(self, source: Any, splits: Sequence[tuple[int, Split]], context: Any) -> bool:
        """Read this subtask's splits to their ends; False when the job was stopped first.

        One split after the other, unless the source reads its splits together (an
        unbounded source's splits never end): then each open split gives a batch in turn.
        With live discovery the input never ends: with nothing to read, the subtask waits
        for discovered splits (and answers barriers) until the job is stopped."""
        pending = deque(splits)
        together = getattr(source, "reads_splits_together", False)
        live = bool(getattr(source, "discovery_interval_s", None))
        # which of the job's sources a split belongs to (a union's; composite.py)
        origin = source.origin if len(self.spec.sources) > 1 else (lambda split: 0)
        open_readers: list[_OpenSplit] = []
        book = self._book
        assert book is not None  # set by _run_attempt before the splits are read
        dealt = self.ctx.dealt
        try:
            while pending or open_readers or live or (dealt and (not self._no_more or self._assigned or self._booked)):
                if self._splits_added:
                    pending.extend(self._take_added_splits())
                if dealt and (self._assigned or self._booked):
                    pending.extend(self._take_assigned())
                while pending and (together or not open_readers):
                    index, split = pending.popleft()
                    state = book.state_of(split)
                    reader = source.create_reader(split, state.position, context)
                    open_readers.append(_OpenSplit(reader, state, origin(split), index, split))
                if dealt and not pending and not open_readers and not self._requested and not self._no_more:
                    # the next splits are asked for once these are read, not ahead: a
                    # subtask asking ahead takes splits another one is about to ask for
                    self._requested = True
                    self._send(RequestSplit(self.subtask, self.attempt))
                if not open_readers:
                    if self._idle_step():
                        return False
                    continue
                for entry in list(open_readers):
                    outcome = self._process_batch(entry.reader, entry.state, entry.origin)
                    if outcome is _STOPPED:
                        return False
                    if outcome is _SPLIT_ENDED:
                        open_readers.remove(entry)
                        book.finish(entry.index, entry.split, entry.reader.position())
                        entry.reader.close()
            return True
        finally:
            for entry in open_readers:
                entry.reader.close()

    def _process_batch(self, reader: Any, state: SplitState, origin: int) -> object:
        """Read one batch of a split (barriers first), take it along the job's wiring
        through its transforms and write it to each sink it reaches.

        Barriers first, except before the attempt's first read: a barrier that came while
        the subtask was starting (the driver triggers one as soon as every subtask runs)
        is taken after that read. Taken before, its checkpoint would hold no new row, and
        after a restore the first output would wait a whole interval for the next one.
        The wait is one read, which any later barrier would wait for too; a source with
        nothing to give returns an empty batch at once (a pause ends on the barrier)."""
        if self._barrier_pending and self._has_read:
            self._take_barriers()
        if self._completed_positions is not None:
            self._tell_source_completed()
        if self._restart or self._fatal is not None:
            self._check()
        if self._finish_id is not None:  # stop-with-savepoint: later rows are not covered
            return _STOPPED
        started = self._clock()
        batch, routed = self._read_and_route(reader, state, origin)
        if batch is None:
            return _SPLIT_ENDED
        if batch.num_rows == 0:  # nothing yet (an unbounded split, a paused reader)
            state.position = reader.position()
            return _READ
        self._write_batch(routed, state, reader.position())
        if self._sizer.enabled:
            self._context.row_limit = self._sizer.record(batch.num_rows, self._clock() - started)
        return _READ

    def _read_and_route(self, reader: Any, state: SplitState, origin: int) -> tuple[Any, list[tuple[int, Any]]]:
        """Read one batch and take it through the transforms: (the batch, (sink index,
        rows) for every sink it reaches). Nothing here touches a split's state or a sink, so
        the channel's thread may take a barrier meanwhile (``_take_barriers_in_flight``);
        not in the attempt's first read (a checkpoint then would hold no row of it)."""
        in_flight = self._open_window()
        try:
            batch = reader.read_batch()
            self._has_read = True
            if batch is None or batch.num_rows == 0:
                return batch, []
            operators = state.operators
            return batch, self._router.route(batch, origin, lambda index: operators.setdefault(str(index), {}))
        finally:
            if in_flight:
                self._close_window()

    def _open_window(self) -> bool:
        """The processing thread starts a read: open the window in which the channel's
        thread may take a barrier, unless barriers cannot be taken in flight (a stateful
        transform, the attempt's first read). True if it was opened."""
        if not (self._cuts_in_flight and self._has_read):
            return False
        with self._cut:
            self._in_flight = True
        return True

    def _close_window(self) -> None:
        """The batch is transformed: close the window before its first write. Waits for a
        take in progress, whose new writer is the one the batch goes to."""
        with self._cut:
            self._in_flight = False

    def _write_batch(self, routed: Sequence[tuple[int, Any]], state: SplitState, position: Any) -> None:
        """Write a transformed batch to the sinks it reaches, then record its split's new
        position. A barrier taken while it was read or transformed swapped the writer: the
        batch goes to the epoch after that cut, and the cut's state has the position
        before it."""
        for sink, out in routed:
            if self._grouped:
                self._writer.write_to(sink, out)
            else:
                self._writer.write(out)
            self._rows_since_barrier += out.num_rows
        state.position = position

    def _tell_source_completed(self) -> None:
        """Hand the source the split positions of the newest completed checkpoint (Kafka
        commits them to its consumer group for monitoring). Best effort: a failure is
        logged, never fails the subtask, since the positions that count are checkpointed."""
        with self._lock:
            positions, self._completed_positions = self._completed_positions, None
        if positions is None or self._source is None:
            return
        try:
            self._source.checkpoint_completed(positions)
        except Exception as err:
            log.warning("subtask %d: the source's checkpoint-complete hook failed: %s", self.subtask, err)

    def _check(self) -> None:
        if self._fatal is not None:
            raise self._fatal
        if self._restart and self._finish_id is None:
            raise SubtaskRestart()

    # ---- barriers -------------------------------------------------------------------------
    def _take_barriers_in_flight(self) -> None:
        """Take the waiting barriers now, on the channel's thread, if the processing thread
        is inside a read or the transforms (``_read_and_route``); else it takes them before
        its next batch.

        A barrier used to wait for the batch in flight: its read, its transforms and its
        writes, 24 ms alone and about 200 ms on an eighth of a core (eight jobs on two
        cores), nine tenths of it in the transforms. Taken in flight, the cut goes before
        that batch, which is consistent: none of its rows has reached a sink (they go to
        the next epoch's writer) and its split's position and state are those before its
        read (recorded once it is written), so a restore from this checkpoint reads the
        batch again. A barrier that comes while a batch is written still waits for that
        write. A failure here (the new writer's ``open``) fails the task at the
        processing thread's next check."""
        with self._cut:
            if not self._in_flight:
                return
            try:
                self._take_barriers()
            except BaseException as err:
                log.exception("subtask %d: taking a barrier failed", self.subtask)
                self._fatal = err

    def _take_barriers(self) -> None:
        with self._lock:
            if self._restart:
                # Re-registered: these barriers belong to the state the restart restores,
                # not to the state this thread still holds. _check() restarts first.
                return
            barriers = list(self._barriers)
            self._barriers.clear()
            self._barrier_pending = False
            self._barrier_interrupt.clear()  # under the lock: a barrier queued later sets it again
            generation = self._generation
        for barrier in barriers:
            started = time.perf_counter()
            assert self._book is not None  # set by _run_attempt before any barrier is taken
            if self.ctx.dealt:  # what was dealt before this barrier is in its state, nothing after
                with self._lock:
                    upto = self._assigned_at_barrier.pop(barrier.checkpoint_id, 0)
                self._book_assigned(upto)
            snapshot = self._book.snapshot(self.subtask)  # no encoding here: see module doc
            positions = self._book.positions()
            with self._lock:
                self._positions_at[barrier.checkpoint_id] = positions
            epoch_writer = self._writer
            self._writer = self._new_writer(barrier.checkpoint_id)
            rows, self._rows_since_barrier = self._rows_since_barrier, 0
            self.rows_total += rows
            sync_ms = int((time.perf_counter() - started) * 1000)
            self._async.submit(self._finish_barrier, barrier, snapshot, epoch_writer, rows, sync_ms, generation)
            self.barriers_handled += 1

    def _new_writer(self, after_checkpoint_id: int) -> Any:
        assert self._sink is not None  # set by _run_attempt, released after the last writer
        writer = self._sink.create_writer(self.ctx.job_id, self.subtask, self.attempt)
        writer.open(after_checkpoint_id)
        return writer

    def _stale(self, generation: int) -> bool:
        return generation != self._generation

    def _finish_barrier(
        self, barrier: TriggerBarrier, snapshot: StateSnapshot, writer: Any, rows: int, sync_ms: int, generation: int
    ) -> None:
        try:
            self._complete_barrier(barrier, snapshot, writer, rows, sync_ms, generation)
        except BaseException as err:  # a bug here must not vanish inside the executor
            if self._stale(generation):
                return
            log.exception("subtask %d: finishing checkpoint %d failed", self.subtask, barrier.checkpoint_id)
            self._fail_task(RuntimeError(f"finishing checkpoint {barrier.checkpoint_id} failed: {err}"))

    def _complete_barrier(
        self, barrier: TriggerBarrier, snapshot: StateSnapshot, writer: Any, rows: int, sync_ms: int, generation: int
    ) -> None:
        started = time.perf_counter()
        checkpoint_id = barrier.checkpoint_id
        if self._stale(generation) or self._fatal is not None:
            # The old registration's epoch (its rows are read again), or the task is
            # failing: an earlier epoch was not staged, so no later checkpoint may be
            # acknowledged (its positions cover that epoch's rows).
            writer.close()
            return
        try:
            info = writer.prepare_commit(checkpoint_id)
            writer.close()
        except BaseException as err:
            if self._stale(generation):
                return
            # The epoch's rows are neither staged nor re-readable from this attempt's
            # positions: only a restart from the last completed checkpoint is safe.
            self._fail_task(RuntimeError(f"sink pre-commit for checkpoint {checkpoint_id} failed: {err}"))
            return
        with self._lock:
            if self._stale(generation):
                # Re-registered while this pre-commit ran: the staged files are not
                # recorded (cleanup removes them) and no ACK goes out.
                return
            if info is not None:
                self._prepared[checkpoint_id] = info
            commit_infos = [[c, i] for c, i in sorted(self._prepared.items()) if c <= checkpoint_id]
        try:
            encoded = frame_snapshot(snapshot)
        except Exception as err:  # e.g. NaN or a non-JSON key: fails again at every barrier
            if self._stale(generation):
                return
            self._fail_task(RuntimeError(f"encoding the state for checkpoint {checkpoint_id} failed: {err}"))
            return
        try:
            handle = self._store_state(checkpoint_id, encoded, barrier.kind is CheckpointKind.SAVEPOINT)
        except Exception as err:  # the staged output stays prepared for the next checkpoint
            if not self._stale(generation):
                self._decline(checkpoint_id, f"state upload failed: {type(err).__name__}: {err}")
            return
        if self._stale(generation) or self._fatal is not None:
            return
        stats = AckStats(
            sync_ms=sync_ms,
            async_ms=int((time.perf_counter() - started) * 1000),
            state_bytes=encoded.size,
            rows_since_last=rows,
        )
        log.debug(
            "subtask %d checkpoint %d: sync %d ms, async %d ms, %d bytes",
            self.subtask,
            checkpoint_id,
            stats.sync_ms,
            stats.async_ms,
            stats.state_bytes,
        )
        self._send(Ack(checkpoint_id, self.subtask, self.attempt, (handle,), commit_infos or None, stats))

    def _fail_task(self, error: BaseException) -> None:
        """A failure in the checkpoint's synchronous part (Flink's snapshot and sink
        pre-commit): the task fails, and Spark retries it from the last completed
        checkpoint (region failover). As in Flink it is a task failure, not a declined
        checkpoint: it does not count toward tolerable-failure (the coordinator aborts
        the checkpoint as TASK_FAILURE when the failed task reports), so one transient
        sink error cannot fail the whole job before the retry. A sink that keeps failing
        exhausts spark.task.maxFailures and fails the job with its error."""
        self._fatal = error
        self._wake.set()

    def _decline(self, checkpoint_id: int, reason: str) -> None:
        log.warning("subtask %d declines checkpoint %d: %s", self.subtask, checkpoint_id, reason)
        try:
            self._send(Decline(checkpoint_id, self.subtask, self.attempt, reason[:2000]))
        except Exception:
            pass

    def _store_state(self, checkpoint_id: int, encoded: EncodedState, savepoint: bool) -> StateHandle:
        if encoded.size <= INLINE_STATE_LIMIT or self.ctx.state_is_process_local:
            return StateHandle.of_bytes(encoded.to_bytes())
        name = Layout.task_state_name(self.subtask, self.attempt, self.ctx.run_attempt)
        # The storage's raw-bytes service takes the pieces as they are encoded and
        # hashes while it writes: no second copy of a large state is ever built.
        stored = self.ctx.storage.write_state_pieces(
            self.ctx.job_id,
            self.ctx.pipeline_id,
            checkpoint_id,
            name,
            encoded.size,
            encoded.pieces(),
            savepoint=savepoint,
        )
        return StateHandle(size=stored.size, sha256=stored.sha256, path=name)

    # ---- restore --------------------------------------------------------------------------
    def _load_states(self, restore: RestoreState) -> SubtaskState:
        if restore.checkpoint_id is None:
            return SubtaskState({})
        parts = []
        for handle in restore.state_handles:
            where = f"checkpoint {restore.checkpoint_id} state {handle.path or '(inline)'}"
            if handle.inline is not None:
                data = handle.inline
            else:
                stored = StoredHandle(size=handle.size, sha256=handle.sha256, file=handle.path)
                data = self.ctx.storage.read_state(
                    self.ctx.job_id,
                    self.ctx.pipeline_id,
                    restore.checkpoint_id,
                    stored,
                    savepoint=restore.kind is CheckpointKind.SAVEPOINT,
                )
            parts.append(decode_subtask_state(data, where))
        return merge_split_states(parts)


def run_subtask_partition(context: SubtaskContext) -> Callable[[int, Any], Any]:
    """The function handed to ``mapPartitionsWithIndex``: one partition = one subtask."""

    def run(partition_index: int, _rows: Any) -> Any:
        import json

        from pyspark import TaskContext

        task = TaskContext.get()
        attempt = task.attemptNumber() if task is not None else 0
        _configure_executor_logging()
        summary = SubtaskRuntime(context, partition_index, attempt).run()
        yield json.dumps(summary)

    return run


def _configure_executor_logging() -> None:
    root = logging.getLogger("airflow_provider_seatunnel_ckpt")
    if not root.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
        root.setLevel(logging.INFO)
