"""The driver adapter: feeds the sans-I/O coordinator events, performs its actions.

One loop thread owns the coordinator (so it needs no locks). Events arrive on a queue
from the control channel, from the storage worker, from the Spark job thread and from
the clock. Storage work (writing ``_metadata``, deleting aborted state, committing sink
output) runs on a single worker thread, in order, so a slow object store never stalls
barrier handling and commits happen in checkpoint order.

Ordering that makes output exactly-once: ``_metadata`` is created (after the id is
reserved in the fence log, see fencing.py), *then* the coordinator is told (``on_persisted``), *then* subtasks are notified
and the sink output is committed. A crash anywhere in between is repaired by the next
run, which replays the commits of the checkpoint it restores.
"""

from __future__ import annotations

import dataclasses
import logging
import queue
import re
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from ..errors import CheckpointError, ProtocolError
from ..history import HistoryRecorder, completed_entry, failed_entry
from ..history.text import size_text
from ..storage import CheckpointIdTaken
from .actions import (
    Broadcast,
    DeleteCheckpointState,
    FailJob,
    JobFinished,
    PersistCheckpoint,
    ScheduleWakeup,
    SendToSubtask,
)
from .completed_store import CompletedCheckpointStore, commit_infos_of, wall_ms
from .coordinator import CheckpointCoordinator, Lifecycle
from .fencing import Fenced, FenceLog
from .messages import (
    AddSplits,
    FinishJob,
    Register,
    RequestSplit,
    RestoreState,
    SplitPlan,
    TaskFailed,
    TriggerBarrier,
    decode,
    encode,
)
from .split_discovery import SplitDiscovery, split_names
from .split_enumerator import UNASSIGNED_KEY, SplitEnumerator
from .split_plan import REF_KEY as PLAN_REF_KEY
from .split_plan import SOURCE_KEY as PLAN_SOURCE_KEY
from .split_plan import prune_unreferenced_plans, store_plan

log = logging.getLogger(__name__)

STOP_REQUEST = "requests/stop-with-savepoint.json"
#: a savepoint without stopping (the checkpoint view's "Trigger savepoint")
SAVEPOINT_REQUEST = "requests/savepoint.json"
REQUEST_POLL_S = 1.0


def monotonic_ms() -> int:
    return int(time.monotonic() * 1000)


@dataclass
class CheckpointRecord:
    checkpoint_id: int
    kind: str
    #: trigger -> durable: from the barrier's broadcast until ``_metadata`` was written
    #: (and retention applied). ``statistics["duration_ms"]`` stops earlier, when the
    #: manifest was built: ``_metadata`` cannot contain the time of its own write.
    duration_ms: int
    state_bytes: int
    rows: int
    location: str
    #: the ``_metadata`` statistics of the checkpoint (see completed_store.checkpoint_statistics)
    statistics: dict[str, Any] = field(default_factory=dict)
    #: measured time of the ``_metadata`` write (state-file check, write, retention);
    #: None when not measured (then the line shows ``statistics["persist_ms"]``)
    persist_ms: int | None = None


@dataclass
class Outcome:
    #: the run ended cleanly: the final checkpoint (or the stop-with-savepoint) is committed
    finished: bool = False
    error: str | None = None
    final_checkpoint_id: int | None = None
    completed: list[CheckpointRecord] = field(default_factory=list)
    #: the savepoint of a stop-with-savepoint once it is durable (``final_checkpoint_id``
    #: stays None: input is left)
    stopped_savepoint_id: int | None = None

    @property
    def stopped_with_savepoint(self) -> bool:
        """The run ended by a stop-with-savepoint and the savepoint's output is committed."""
        return self.finished and self.stopped_savepoint_id is not None


class DriverLoop:
    def __init__(
        self,
        coordinator: CheckpointCoordinator,
        store: CompletedCheckpointStore,
        committer: Any,
        fence: FenceLog,
        *,
        properties: Mapping[str, Any] | None = None,
        progress: Callable[[str], None] | None = None,
        clock: Callable[[], int] = monotonic_ms,
        durable_infos: list[Any] | None = None,
        history: HistoryRecorder | None = None,
        split_plan: Sequence[Any] = (),
        sinks: Sequence[Any] = (),
        enumerator: SplitEnumerator | None = None,
    ):
        self.coordinator = coordinator
        self.store = store
        self.committer = committer
        self.fence = fence
        self.properties = dict(properties or {})
        #: the job's sink identities, recorded in every manifest (engine/sink_identity.py)
        self.sinks = tuple(sinks)
        #: the job's split plan, [[split_id, spec], ...]: stored once per attempt and
        #: referenced from each manifest (engine/split_plan.py)
        self._plan = list(split_plan)
        #: deals the splits on request (None: subtasks read their round-robin shares)
        self.enumerator = enumerator
        self.progress = progress or (lambda line: print(line, file=sys.stderr, flush=True))
        self.clock = clock
        self.server: Any = None
        self.events: queue.Queue[tuple[Any, ...]] = queue.Queue()
        self.outcome = Outcome()
        self._connections: dict[tuple[int, int], Any] = {}
        self._peers: dict[Any, tuple[int, int]] = {}
        self._io = ThreadPoolExecutor(max_workers=1, thread_name_prefix="checkpoint-io")
        # Fence reservations run here, off the io thread: a checkpoint's reservation is
        # made at its trigger, while the subtasks snapshot and upload, when no other
        # checkpoint is unresolved (see _execute); else beside the state-file check.
        # Either way it precedes the _metadata write, and leaves it one round trip.
        self._fence_io = ThreadPoolExecutor(max_workers=1, thread_name_prefix="checkpoint-fence")
        #: checkpoint id -> its reservation made at the trigger (loop thread only)
        self._reserved_ahead: dict[int, Future[int]] = {}
        #: the running check whether another driver claimed the job (_watch_claim)
        self._claim_watch: Future[None] | None = None
        #: checkpoints handed to the io thread whose outcome the loop has not seen yet
        self._persisting = 0
        #: (subtask, attempt) whose state files the driver found in storage once: their
        #: later files are trusted without a listing (io thread only), see _persist
        self._verified_attempts: set[tuple[int, int]] = set()
        self._wakeup_at: int | None = None
        self._trigger_wall: dict[int, int] = {}
        self.history = history
        #: checkpoint id -> (trigger wall ms, kind) until it completes or is aborted (for the history)
        self._triggered: dict[int, tuple[int, str]] = {}
        self._done = threading.Event()
        self._next_request_poll = 0.0
        #: the stop-with-savepoint being taken, and why the last request was refused
        self._stop_savepoint_id: int | None = None
        self._stop_refused: str | None = None
        self._started = time.monotonic()
        self._rows_committed = 0
        #: set on the storage worker when publishing a checkpoint's output failed
        self._commit_failed: str | None = None
        #: a retained checkpoint may still refer to an earlier attempt's split plan: retention
        #: looks again until none does (storage worker only)
        self._earlier_plans_referenced = True
        #: sink commit infos of the newest durable checkpoint (storage worker only)
        self._durable_infos: list[Any] = list(durable_infos or [])
        self._registered: set[int] = set()
        self._highest_triggered = coordinator_highest_id(coordinator)
        #: live split discovery (the runner sets it when the source discovers while running)
        self.discovery: SplitDiscovery | None = None
        #: the splits it found, in order: appended to the plan, sent to every subtask
        self._added_splits: SplitPlan = ()
        #: the newest checkpoint completed in this run (read by the heartbeat thread)
        self.last_completed_id: int | None = None
        #: when the loop last stepped (monotonic s): a loop that stops stepping is unhealthy
        self._last_step = time.monotonic()
        #: the checkpoints in flight and the failure count, as the heartbeat thread reads
        #: them: a new dict each step, never the coordinator's own (it is not thread-safe)
        self.live: dict[str, Any] = {}

    # ---- inputs (any thread) --------------------------------------------------------------
    def on_message(self, connection_id: Any, raw: Mapping[str, Any]) -> None:
        self.events.put(("message", connection_id, raw))

    def on_disconnect(self, connection_id: Any) -> None:
        self.events.put(("disconnect", connection_id))

    def spark_job_ended(self, error: BaseException | None) -> None:
        self.events.put(("spark_ended", error))

    def splits_discovered(self, found: list[Any]) -> None:
        self.events.put(("splits", found))

    # ---- loop -------------------------------------------------------------------------------
    def run(self) -> Outcome:
        try:
            if self.discovery is not None:
                self.discovery.start()
            self._execute(self.coordinator.on_tick())
            while not self._done.is_set():
                self._step()
        finally:
            if self.discovery is not None:
                self.discovery.stop()
            self._io.shutdown(wait=True)
            self._fence_io.shutdown(wait=True)
        return self.outcome

    def stalled_s(self) -> float:
        """Seconds since the loop last stepped (0 once it is done): it steps at least every
        ``REQUEST_POLL_S`` while it works, so a large value is a stuck driver (heartbeat.py)."""
        return 0.0 if self._done.is_set() else max(0.0, time.monotonic() - self._last_step)

    def _step(self) -> None:
        self._last_step = time.monotonic()
        timeout = REQUEST_POLL_S
        if self._wakeup_at is not None:
            timeout = min(timeout, max(0.0, (self._wakeup_at - self.clock()) / 1000))
        try:
            event = self.events.get(timeout=timeout)
        except queue.Empty:
            event = None
        if event is not None:
            self._handle(event)
        if self._done.is_set():
            return
        if self._wakeup_at is None or self.clock() >= self._wakeup_at:
            self._execute(self.coordinator.on_tick())
        if time.monotonic() >= self._next_request_poll:
            self._next_request_poll = time.monotonic() + REQUEST_POLL_S
            self._poll_requests()
            self._watch_claim()
            # once a second, not at every control message: the heartbeat that carries it
            # writes every few seconds
            self.live = self._live()

    def _live(self) -> dict[str, Any]:
        """What the person on call sees of this moment (the checkpoint view): each
        checkpoint in flight with its ACK count, and the failures counted against
        tolerable-failure."""
        coordinator = self.coordinator
        return {
            "in_flight": [
                {
                    "id": cid,
                    "kind": kind.value,
                    "state": state.value,
                    "trigger_ms": self._triggered.get(cid, (None,))[0],
                    "acknowledged": acked,
                    "subtasks": total,
                }
                for cid, kind, state, acked, total in coordinator.progress()
            ],
            "consecutive_failures": coordinator.consecutive_failures,
            "tolerable_failures": coordinator.tolerable_failures,
        }

    def _handle(self, event: tuple[Any, ...]) -> None:
        kind = event[0]
        if kind == "message":
            _, connection_id, raw = event
            try:
                message = decode(raw)
                sender: tuple[Any, Any] = (getattr(message, "subtask", None), getattr(message, "attempt", None))
                if not isinstance(message, Register) and self._connections.get(sender, connection_id) != connection_id:
                    # Sent over a connection the subtask has since replaced (it reconnected
                    # and registered again, same attempt): it belongs to the registration
                    # that restarted, e.g. an EndOfInput that would trigger the final
                    # checkpoint while the restarted subtask reads its splits again.
                    log.debug("ignoring %s from a replaced connection", type(message).__name__)
                    return
                if isinstance(message, RequestSplit):
                    if self.enumerator is not None:
                        self._deal(self.enumerator.request(message.subtask, message.attempt))
                    return
                if isinstance(message, Register):
                    if self.enumerator is not None:  # nothing is dealt to it until its restore
                        self.enumerator.registered(message.subtask)
                    self._connections[(message.subtask, message.attempt)] = connection_id
                    self._peers[connection_id] = (message.subtask, message.attempt)
                    if message.subtask in self._registered:
                        # A restart from the last completed checkpoint: what it prepared
                        # before is stale. Queued behind the pending persist/commit work,
                        # so "durable" below is up to date when it runs.
                        self._io.submit(self._discard_orphans, message.subtask, self._highest_triggered)
                    self._registered.add(message.subtask)
                self._execute(self.coordinator.on_message(message))
            except ProtocolError as err:
                log.warning("ignoring a control message that breaks the protocol: %s", err)
        elif kind == "disconnect":
            peer = self._peers.pop(event[1], None)
            if peer is not None and self._connections.get(peer) == event[1]:
                del self._connections[peer]
                if self.coordinator.lifecycle is Lifecycle.ACTIVE:
                    self._execute(self.coordinator.on_message(TaskFailed(peer[0], peer[1], "control connection lost")))
        elif kind == "persisted":
            self._persisting -= 1
            _, checkpoint_id, manifest, location, durable_wall, persist_ms = event
            self._completed(checkpoint_id, manifest, location, durable_wall, persist_ms)
        elif kind == "persist_failed":
            self._persisting -= 1
            _, checkpoint_id, error = event
            if isinstance(error, Fenced):
                self._fail(str(error))
                return
            log.warning("checkpoint %d could not be written: %s", checkpoint_id, error)
            self._execute(self.coordinator.on_persist_failed(checkpoint_id, str(error)))
        elif kind == "committed":
            _, checkpoint_id, finished = event
            if finished:
                self._finish(checkpoint_id)
        elif kind == "splits":
            self._add_splits(event[1])
        elif kind in ("io_failed", "taken_over"):
            self._fail(event[1])
        elif kind == "spark_ended":
            error = event[1]
            if not self._done.is_set():
                detail = f"{type(error).__name__}: {error}" if error else "the Spark job ended before the job finished"
                self._fail(f"Spark job failed: {first_line(detail)}")

    # ---- actions ----------------------------------------------------------------------------
    def _execute(self, actions: list[Any]) -> None:
        for action in actions:
            if isinstance(action, SendToSubtask):
                self._send(action.subtask, action.attempt, action.message)
                if isinstance(action.message, RestoreState) and self.enumerator is not None:
                    # after the restore on the same channel: what it deals next is read from it
                    restored_from = action.message.checkpoint_id
                    self._deal(self.enumerator.restored(action.subtask, action.attempt, restored_from))
            elif isinstance(action, Broadcast):
                if isinstance(action.message, TriggerBarrier):
                    self._reserve_ahead(action.message)
                    self._trigger_wall[action.message.checkpoint_id] = wall_ms()
                    self._triggered[action.message.checkpoint_id] = (
                        self._trigger_wall[action.message.checkpoint_id],
                        action.message.kind.value,
                    )
                    self._highest_triggered = max(self._highest_triggered, action.message.checkpoint_id)
                    if self.enumerator is not None:  # the pool this barrier covers, before it goes out
                        self.enumerator.barrier(action.message.checkpoint_id, action.targets)
                    log.debug("triggering %s %d", action.message.kind.value, action.message.checkpoint_id)
                for subtask, attempt in action.targets:
                    self._send(subtask, attempt, action.message)
            elif isinstance(action, PersistCheckpoint):
                checkpoint = action.checkpoint
                trigger_wall = self._trigger_wall.pop(checkpoint.checkpoint_id, wall_ms())
                self._persisting += 1
                ahead = self._reserved_ahead.pop(checkpoint.checkpoint_id, None)
                unassigned = None
                if self.enumerator is not None:
                    unassigned = self.enumerator.unassigned_at(checkpoint.checkpoint_id)
                self._io.submit(self._persist, checkpoint, trigger_wall, ahead, unassigned)
            elif isinstance(action, DeleteCheckpointState):
                self._trigger_wall.pop(action.checkpoint_id, None)
                self._record_abort(action)
                self._reserved_ahead.pop(action.checkpoint_id, None)
                if self.enumerator is not None:
                    self.enumerator.aborted(action.checkpoint_id)
                if action.checkpoint_id == self._stop_savepoint_id:
                    self._stop_savepoint_id = None
                    if self.coordinator.lifecycle is Lifecycle.ACTIVE:
                        self.progress(
                            f"stop-with-savepoint: savepoint {action.checkpoint_id} failed "
                            f"({action.reason.name.lower()}); the job keeps running, request the stop again"
                        )
                self._io.submit(self._delete_aborted, action.checkpoint_id, action.savepoint)
            elif isinstance(action, FailJob):
                self._fail(action.message)
            elif isinstance(action, JobFinished):
                # Finish only after the final checkpoint's output is committed: the
                # commit was queued before this action on the same ordered worker.
                if action.stopped_with_savepoint:
                    self.outcome.stopped_savepoint_id = action.checkpoint_id
                self._io.submit(self.events.put, ("committed", action.checkpoint_id, True))
            elif isinstance(action, ScheduleWakeup):
                self._wakeup_at = action.at_ms

    def _reserve_ahead(self, trigger: TriggerBarrier) -> None:
        """Reserve the checkpoint's id in the fence log now, so that its ``_metadata``
        write need not wait for a reservation once the last ACK is in.

        Only while no other checkpoint is triggered or being persisted: then this
        reservation stays the driver's newest until its own ``_metadata`` write, as
        fencing requires. A reservation made ahead whose checkpoint is aborted is
        harmless: a claimant fences that id, which nobody completes."""
        if self._trigger_wall or self._persisting:
            return
        savepoint = trigger.kind.value == "savepoint"
        self._reserved_ahead[trigger.checkpoint_id] = self._fence_io.submit(
            self.fence.reserve, trigger.checkpoint_id, savepoint
        )

    def _add_splits(self, found: list[Any]) -> None:
        """Append discovered splits to the plan, then tell every subtask.

        In this order: a checkpoint's manifest (written later, referring to the plan
        stored by ``_store_plan``) then names every split a subtask could have read before
        that checkpoint's barrier. A split in the plan that no subtask state mentions is
        read from its beginning on restore, which is right: nothing of it was checkpointed."""
        added = tuple((split.split_id, dict(split.spec)) for split in found)
        self._added_splits += added
        # replaced, not mutated: the storage worker stores it before the next manifest (_persist)
        self._plan = [*self._plan, *([split_id, dict(spec)] for split_id, spec in added)]
        self.progress(f"{len(added)} new splits discovered: {split_names(split_id for split_id, _ in added)}")
        message = AddSplits(self._added_splits)
        for subtask, attempt in list(self._connections):
            self._send(subtask, attempt, message)
        if self.enumerator is not None:  # dealt after every subtask has them in its plan
            self._deal(self.enumerator.add(range(len(self._plan) - len(added), len(self._plan))))

    def _deal(self, sends: list[Any]) -> None:
        for subtask, attempt, message in sends:
            self._send(subtask, attempt, message)

    def _store_plan(self) -> None:
        """Store the plan with the splits added since it was last stored (storage worker,
        before a manifest refers to it): a manifest's plan names every split a subtask
        could have read before its barrier. A failure fails this checkpoint."""
        plan = self._plan
        ref = self.properties.get(PLAN_REF_KEY)
        if plan and (ref is None or ref.get("count") != len(plan)):
            # A driver taken over creates nothing: the claimant may have pruned this
            # attempt's document, and a rewrite would bring it back for good.
            self.fence.require_claim()
            ref = store_plan(
                self.store.storage, self.store.job_id, self.fence.attempt, plan, (ref or {}).get(PLAN_SOURCE_KEY)
            )
            self.properties = {**self.properties, PLAN_REF_KEY: ref}

    def _send(self, subtask: int, attempt: int, message: Any) -> None:
        connection_id = self._connections.get((subtask, attempt))
        if connection_id is None or self.server is None:
            return
        if isinstance(message, RestoreState) and self._added_splits:
            message = dataclasses.replace(message, added_splits=self._added_splits)
        try:
            self.server.send(connection_id, encode(message))
        except Exception as err:  # the disconnect event will follow
            log.info("could not reach subtask %d attempt %d: %s", subtask, attempt, err)

    # ---- storage worker ---------------------------------------------------------------------
    def _persist(
        self, checkpoint: Any, trigger_wall: int, ahead: Future[int] | None = None, unassigned: Any = None
    ) -> None:
        try:
            if self._commit_failed is not None:
                # A restore from this newer checkpoint would not replay the failed
                # commit (subtasks forgot those infos), and its cleanup would delete
                # the staged output: the restore must come from the failed one.
                raise CheckpointError(f"not completed: {self._commit_failed}")
            self._store_plan()
            properties = self.properties
            if self.enumerator is not None:
                if unassigned is None:  # never: every barrier took its pool
                    raise CheckpointError("the splits not dealt yet at its barrier are unknown")
                properties = {**properties, UNASSIGNED_KEY: unassigned}
            manifest = self.store.to_manifest(checkpoint, trigger_wall, properties, self.sinks)
            # Reserve the id in the fence log, then create its _metadata: each fails once
            # another driver claimed the job (engine/fencing.py).
            started = time.perf_counter()
            reservation = self._fence_io.submit(
                self._reserve_for_write, checkpoint.checkpoint_id, manifest.kind.value == "savepoint", ahead
            )
            # A subtask attempt whose files were found once writes through the same
            # client to the same storage: listing its later files again would only put
            # a round trip between the last ACK and the _metadata write. The first
            # checkpoint of every attempt is still checked (a subtask on a host whose
            # storage the driver cannot see is caught there).
            trusted = [
                handle.path
                for snapshot in checkpoint.subtasks
                if (snapshot.subtask, snapshot.attempt) in self._verified_attempts
                for handle in snapshot.state_handles
                if handle.path is not None
            ]
            try:
                location = self.store.persist(manifest, before_write=reservation.result, trusted=trusted)
            except CheckpointIdTaken:  # the claimant fenced this id before we could complete it
                raise self.fence.fenced_error() from None
            except Exception:
                # The _metadata write may have landed with its answer lost. Then the
                # checkpoint is complete in storage whatever this process thinks: were it
                # aborted, a restarted subtask would release its prepared output while the
                # _metadata stayed (a delete that fails, a driver killed first), and every
                # restore would then find that output gone.
                landed = self._landed_at(manifest)
                if landed is None:
                    raise
                location = landed
                log.info("checkpoint %d: its _metadata write raised but landed: complete", checkpoint.checkpoint_id)
            finally:
                wait([reservation])  # never leave a fence write running behind a failed check
            persist_ms = int((time.perf_counter() - started) * 1000)
            self._verified_attempts.update((snapshot.subtask, snapshot.attempt) for snapshot in checkpoint.subtasks)
            durable_wall = wall_ms()  # the checkpoint is durable from here (retention comes after the commit)
            self._durable_infos = commit_infos_of(manifest.commit_infos)
        except Exception as err:  # reported to the coordinator, which counts it
            self.events.put(("persist_failed", checkpoint.checkpoint_id, err))
            return
        self.events.put(("persisted", checkpoint.checkpoint_id, manifest, location, durable_wall, persist_ms))

    def _reserve_for_write(self, checkpoint_id: int, savepoint: bool, ahead: Future[int] | None) -> None:
        """On the fence thread, so after any reservation made ahead: keep that one if it
        is still this driver's newest record, else reserve again."""
        if ahead is not None and ahead.exception() is None and self.fence.is_newest(ahead.result()):
            return
        self.fence.reserve(checkpoint_id, savepoint)

    def _commit(self, checkpoint_id: int, manifest: Any) -> None:
        infos = commit_infos_of(manifest.commit_infos)
        try:
            self.fence.check(f"committing checkpoint {checkpoint_id}")
            if infos:
                self.committer.commit(infos)
        except Exception as err:
            # Subtasks already forgot these infos; only a restore (which replays the
            # latest checkpoint's commits) can finish them, so stop here, and let no
            # later checkpoint complete (set before this worker runs the next task).
            message = f"committing the output of checkpoint {checkpoint_id} failed: {err}"
            self._commit_failed = message
            self.events.put(("io_failed", message))

    def _apply_retention(self) -> None:
        try:
            self.fence.check("applying retention")  # a fenced driver deletes nothing
            removed = self.store.apply_retention()
            if removed and self._earlier_plans_referenced:
                # the claimant kept the plans the restored checkpoints refer to; once
                # retention has removed those checkpoints, the plans go too
                self._earlier_plans_referenced = prune_unreferenced_plans(
                    self.store.storage, self.store.job_id, self.store.pipeline_id, self.fence.attempt
                )
        except Exception as err:  # the next completed checkpoint's retention removes them
            log.warning("could not remove checkpoints beyond the retained ones: %s", err)

    def _discard_orphans(self, subtask: int, up_to_checkpoint_id: int) -> None:
        try:
            self.fence.check(f"releasing what subtask {subtask} prepared")  # a fenced driver releases nothing
            self.committer.discard_orphans(subtask, up_to_checkpoint_id, self._durable_infos)
        except Exception as err:  # cleanup() at the end of the run catches what is left
            log.warning("could not release what subtask %d prepared before it restarted: %s", subtask, err)

    def _landed_at(self, manifest: Any) -> str | None:
        try:
            return self.store.storage.landed_at(manifest)
        except Exception as err:  # storage cannot tell: the failure stands (aborted, its _metadata deleted)
            log.info("checkpoint %d: could not read its _metadata back: %s", manifest.checkpoint_id, err)
            return None

    def _delete_aborted(self, checkpoint_id: int, savepoint: bool = False) -> None:
        """Only this run's uploads, and only while no other driver claimed the job: the
        claimant counts on from the highest id reserved, so a taken-over driver that still
        runs aborts ids the claimant may be completing in the same directory."""
        try:
            self.fence.check(f"deleting aborted checkpoint {checkpoint_id}")
            self.store.storage.delete_aborted_state(
                self.store.job_id, self.store.pipeline_id, checkpoint_id, self.fence.attempt, savepoint
            )
        except Exception as err:  # leftovers are removed by retention later; a fenced driver deletes nothing
            log.info("could not delete aborted checkpoint %d: %s", checkpoint_id, err)

    # ---- outcomes ---------------------------------------------------------------------------
    def _completed(self, checkpoint_id: int, manifest: Any, location: str, durable_wall: int, persist_ms: int) -> None:
        actions = self.coordinator.on_persisted(checkpoint_id)
        if self.enumerator is not None:
            self.enumerator.completed(checkpoint_id)
        self._io.submit(self._commit, checkpoint_id, manifest)
        if manifest.kind.value != "savepoint":
            self._io.submit(self._apply_retention)
        stats = manifest.statistics if isinstance(manifest.statistics, dict) else {}
        # trigger -> durable: _metadata's own duration_ms ends before its write
        duration = max(int(stats.get("duration_ms", 0)), durable_wall - manifest.trigger_ms)
        record = CheckpointRecord(
            checkpoint_id,
            manifest.kind.value,
            duration,
            manifest.state_size,
            int(stats.get("rows", 0)),
            location,
            dict(stats),
            persist_ms=persist_ms,
        )
        self.outcome.completed.append(record)
        self._triggered.pop(checkpoint_id, None)
        if self.history is not None:
            self.history.record(
                completed_entry(self.fence.attempt, checkpoint_id, record.kind, stats, duration, persist_ms)
            )
        self.last_completed_id = checkpoint_id
        self._rows_committed += record.rows
        elapsed = max(1e-3, time.monotonic() - self._started)
        self.progress(completion_line(record, self._rows_committed, self._rows_committed / elapsed))
        self._execute(actions)

    def _record_abort(self, action: DeleteCheckpointState) -> None:
        triggered_ms, kind = self._triggered.pop(
            action.checkpoint_id, (wall_ms(), "savepoint" if action.savepoint else "checkpoint")
        )
        if self.history is not None:
            reason = action.reason.message + (f": {action.detail}" if action.detail else "")
            self.history.record(
                failed_entry(
                    self.fence.attempt,
                    action.checkpoint_id,
                    kind,
                    triggered_ms,
                    wall_ms(),
                    first_line(reason),
                    action.reason.counts_as_failure,
                )
            )

    def _finish(self, checkpoint_id: int) -> None:
        self.outcome.finished = True
        if self.outcome.stopped_savepoint_id != checkpoint_id:
            self.outcome.final_checkpoint_id = checkpoint_id
        for subtask, attempt in list(self._connections):
            self._send(subtask, attempt, FinishJob(checkpoint_id))
        self._done.set()

    def _fail(self, message: str) -> None:
        if self._done.is_set():
            return
        self.outcome.error = message
        self._execute(self.coordinator.shutdown())
        self._done.set()

    def _watch_claim(self) -> None:
        """Ask, on the fence thread, whether another driver claimed the job, and stop if so.

        A reservation would find out too, but it waits for a trigger while no checkpoint
        is being persisted, and a persist can wait behind a slow commit on the io thread:
        meanwhile this driver's barriers and subtask restarts go on, and each new epoch
        opens output (Kafka transactions) under ids the claimant fenced before they
        existed. One storage read a second (``FenceLog.watch``), never two at once."""
        if self._claim_watch is not None and not self._claim_watch.done():
            return

        def watch() -> None:
            if self.fence.watch():
                self.events.put(("taken_over", str(self.fence.fenced_error())))

        self._claim_watch = self._fence_io.submit(watch)

    def _poll_requests(self) -> None:
        self._poll_savepoint_request()
        self._poll_stop_request()

    def _poll_savepoint_request(self) -> None:
        """Take a savepoint (and keep running) when asked by a request document; like a
        stop, a request that comes while a subtask is not running waits for the next poll."""
        try:
            request = self.store.storage.read_document(self.store.job_id, SAVEPOINT_REQUEST)
        except Exception as err:
            log.debug("could not poll requests: %s", err)
            return
        if request is None or self.coordinator.lifecycle is not Lifecycle.ACTIVE or self._stop_savepoint_id is not None:
            return
        try:
            savepoint_id, actions = self.coordinator.trigger_savepoint()
        except CheckpointError as err:
            log.info("savepoint request waits: %s", err)
            return
        try:
            self.store.storage.delete_document(self.store.job_id, SAVEPOINT_REQUEST)
        except Exception as err:  # asked again: one more savepoint, which costs only storage
            log.info("could not delete the savepoint request: %s", err)
        self.progress(f"savepoint requested: taking savepoint {savepoint_id}")
        self._execute(actions)

    def _poll_stop_request(self) -> None:
        """Act on a stop-with-savepoint request document.

        The document is deleted only once the coordinator took the request: one that
        arrives while a subtask is still starting or restarting waits for the next poll
        instead of being lost. A savepoint that then fails is reported and not retried
        (as in Flink): the job keeps running until the stop is requested again.
        """
        try:
            request = self.store.storage.read_document(self.store.job_id, STOP_REQUEST)
        except Exception as err:
            log.debug("could not poll requests: %s", err)
            return
        if request is None or self.coordinator.lifecycle is not Lifecycle.ACTIVE:
            return
        try:
            savepoint_id, actions = self.coordinator.stop_with_savepoint()
        except CheckpointError as err:
            if str(err) != self._stop_refused:  # say it once, not every second
                self._stop_refused = str(err)
                log.warning("stop-with-savepoint request waits: %s", err)
            return
        self._stop_refused = None
        try:
            self.store.storage.delete_document(self.store.job_id, STOP_REQUEST)
        except Exception as err:  # harmless: asking again while a stop is in flight is a no-op
            log.info("could not delete the stop-with-savepoint request: %s", err)
        if not actions and savepoint_id == self._stop_savepoint_id:
            return  # already being taken
        self._stop_savepoint_id = savepoint_id
        self.progress(f"stop-with-savepoint requested: taking savepoint {savepoint_id}")
        self._execute(actions)


def coordinator_highest_id(coordinator: Any) -> int:
    """The highest checkpoint id the coordinator may have used before this loop started."""
    return max(0, coordinator.next_checkpoint_id - 1)


def completion_line(record: CheckpointRecord, rows_total: int, rate: float) -> str:
    """The progress line of one completed checkpoint, with the statistics of every subtask:
    ``checkpoint 7 (checkpoint) completed in 412 ms, 1.2 KiB state, 20,000 rows; 140,000 rows
    total, 35,000 rows/s; acks in 380 ms, persisted in 32 ms; subtask 0: ack 371 ms, sync 0 ms,
    async 12 ms, 611 B, 10,000 rows; subtask 1: ...``

    "completed in" is trigger -> durable (``record.duration_ms``, after the ``_metadata``
    write); "persisted in" is the measured ``_metadata`` write (``record.persist_ms``).
    The rest of "completed in" minus "acks in" and "persisted in" is the step from the
    last ACK to the write (the storage worker's queue, the fencing check)."""
    stats = record.statistics
    line = (
        f"checkpoint {record.checkpoint_id} ({record.kind}) completed in {record.duration_ms} ms, "
        f"{size_text(record.state_bytes)} state, {record.rows:,} rows; {rows_total:,} rows total, {rate:,.0f} rows/s"
    )
    if "ack_duration_ms" in stats:
        line += f"; acks in {int(stats['ack_duration_ms'])} ms"
        if record.persist_ms is not None:
            line += f", persisted in {record.persist_ms} ms"
        elif "persist_ms" in stats:
            line += f", persisted in {int(stats['persist_ms'])} ms"
    subtasks = stats.get("subtasks")
    if not isinstance(subtasks, dict):
        subtasks = {}
    for index in sorted(subtasks, key=lambda k: int(k) if str(k).isdigit() else 0):
        sub = subtasks[index] if isinstance(subtasks[index], dict) else {}
        line += (
            f"; subtask {index}: ack {int(sub.get('ack_latency_ms', 0))} ms, sync {int(sub.get('sync_ms', 0))} ms, "
            f"async {int(sub.get('async_ms', 0))} ms, {size_text(int(sub.get('state_bytes', 0)))}, "
            f"{int(sub.get('rows_since_last', 0)):,} rows"
        )
    return line


_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)): (.+)$")


def first_line(text: str) -> str:
    """The line that says what went wrong: for a Python error raised on an executor
    that is the exception line at the end of the traceback Spark wraps it in."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    for line in reversed(lines):
        match = _EXCEPTION_LINE.match(line)
        if match and "PythonException" not in match.group(1) and "Py4J" not in match.group(1):
            return f"{match.group(1).rsplit('.', 1)[-1]}: {match.group(3)}"[:500]
    return lines[0][:500] if lines else text
