"""A deterministic simulation of the whole checkpoint protocol, in the spirit of
FoundationDB's and TigerBeetle's simulators.

Everything that decides runs for real: the runner's claim, restore and end
(``JobRun.claim`` / ``coordinator`` / ``end``), the coordinator, the driver loop's event
handling and storage work (``DriverLoop``), the fence log, the checkpoint storage (over
the in-memory file system), and each subtask's barrier handling, state encoding, upload
and restore (``SubtaskRuntime``). What is simulated is what surrounds them: time, the
network, threads (the driver's storage worker is a queue the simulation runs step by
step), Spark (task attempts, retries, a cancelled job), the sink's external system, and
faults. Every choice comes from one ``random.Random(seed)``, and events run one at a time
in (time, sequence) order, so a seed replays exactly.

Faults: storage requests that fail, or succeed and lose their answer; slow storage
work; delayed messages; a transactional sink's PREPARE that takes a while (the rest of
the world, a reconnect of the same subtask included, runs meanwhile); subtask workers killed (Spark retries them) or frozen with their
channel gone (Spark does not); sink pre-commits that fail; drivers killed (the next run
resumes) or taken over while they still run (zombies), also while Spark starts (between
the claim and the split plan); savepoints requested; reruns that restore an older
checkpoint than the latest; in some seeds the job writes two sinks (the File sink and the
transactional one), each rerun listing their blocks in either order, and now and then
losing one of them. In half the seeds a batch is in flight for a while between its read
and its write, and a barrier that comes then is taken by the channel's thread, the cut
going before that batch (``SubtaskRuntime._take_barriers_in_flight``).

Invariants, checked after every step (``Violation`` names the first broken one):

* no checkpoint id completes twice (a non-empty ``_metadata`` is created once);
* nothing commits before a ``_metadata`` covers it;
* a fenced driver deletes, creates and commits nothing in the checkpoint directories or
  the sink (its own fence records and attempt documents aside);
* no state file is overwritten with other bytes;
* a failure in the checkpoint's synchronous part (sink pre-commit) is never a Decline;
* a restore a sink refuses changes no checkpoint;
* an aborted savepoint's uploads are deleted by a run that saw no storage fault;
* the driver loop never spins (ticks at one instant without effect);
* something can always progress or time out until the job finishes;
* a subtask never writes ids that a prepared transaction nothing will release holds
  (the transactional sink's locks: the Jdbc reconnect race);
* a driver taken over writes no split plan and no history segment either (issue 47);
* each sink of a job of two is handed only its own commit infos (issue 47: sinks are
  matched to their output by identity, not by the place of their block), and a rerun
  whose job file lost one of them never restores without it;
* at the end every id of the split plan the job first started with is committed exactly
  once, in each sink (the source's start moves on with time, as Kafka's latest offsets:
  a rerun that asks it again loses what came between), and a job with delete-on-finish
  left nothing in storage.
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
import json
import random
import re
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from airflow_provider_seatunnel_ckpt.config import load_config
from airflow_provider_seatunnel_ckpt.connectors.api import Sink, SinkCommitter, SinkWriter, Source, Split
from airflow_provider_seatunnel_ckpt.connectors.file.sink import FileSink
from airflow_provider_seatunnel_ckpt.engine.completed_store import CompletedCheckpointStore
from airflow_provider_seatunnel_ckpt.engine.composite import GroupWriter, SinkGroup
from airflow_provider_seatunnel_ckpt.engine.driver import DriverLoop
from airflow_provider_seatunnel_ckpt.engine.fencing import FENCE_DIR, PRUNE_EVERY, FenceLog
from airflow_provider_seatunnel_ckpt.engine.messages import (
    AbortCheckpoint,
    Decline,
    EndOfInput,
    Register,
    RequestSplit,
    TaskFailed,
    decode,
)
from airflow_provider_seatunnel_ckpt.engine.runner import DISCARDING, JobRun, RunRequest
from airflow_provider_seatunnel_ckpt.engine.split_book import SplitBook, share_of
from airflow_provider_seatunnel_ckpt.engine.split_enumerator import enumerator_for
from airflow_provider_seatunnel_ckpt.engine.split_plan import REF_KEY as PLAN_REF_KEY
from airflow_provider_seatunnel_ckpt.engine.split_plan import plan_entries
from airflow_provider_seatunnel_ckpt.engine.subtask import SubtaskContext, SubtaskRestart, SubtaskRuntime
from airflow_provider_seatunnel_ckpt.errors import CheckpointError, CheckpointFailed, ConfigError, ConnectorError
from airflow_provider_seatunnel_ckpt.jobfile.job import load_job
from airflow_provider_seatunnel_ckpt.jobfile.spec import JobSpec
from airflow_provider_seatunnel_ckpt.storage.fs_memory import MemoryFileSystem
from airflow_provider_seatunnel_ckpt.storage.fs_storage import FileSystemCheckpointStorage
from airflow_provider_seatunnel_ckpt.storage.layout import Layout

JOB_ID = "sim"
NAMESPACE = "/sim/"
PIPELINE_ID = 1
MAX_RUNS = 16
#: runs after which no fault is injected any more, so the job can finish
CALM_AFTER_RUNS = 7
MAX_EVENTS = 60_000
MAX_TASK_ATTEMPTS = 8
#: ticks of one driver at one instant, without effect, before it counts as spinning
SPIN_LIMIT = 200
#: the share of seeds whose job writes both sinks (each rerun lists them in either order)
TWO_SINKS_SHARE = 0.2
#: how often a rerun of such a job restoring a checkpoint has lost one of its sink blocks
P_SINK_REMOVED = 0.1
#: the share of seeds whose batches stay in flight between read and write (barriers cut
#: before them); the others write each batch at its read, as before that cut existed
IN_FLIGHT_SHARE = 0.5

_CHECKPOINT_PATH = re.compile(r"/pipeline-\d+/(chk|savepoint)-(\d+)(/(.*))?$")
#: a run's own records that a driver taken over must not write either (issue 47, defect 6)
_RUN_RECORD_PATH = re.compile(r"/(plans|history)/[^/]+$")
#: the source's "latest" moves on by one row per split this often (Kafka's, as records arrive)
LATEST_MOVES_EVERY_MS = 50
#: the checkpoint history's bound: small, so that claimants prune earlier attempts' segments
HISTORY_SIZE = 4
HISTORY_FLUSH_MS = 1_000


class Violation(BaseException):
    """An invariant broke; the message names it (and the seed, from ``simulate``).

    A BaseException, and recorded in the world before it is raised (``World.broke``):
    the code under test catches ``Exception`` in many places (a failed deletion is only
    logged), and a violation must never be swallowed there."""


# ---- the seed's world ------------------------------------------------------------------
@dataclass(frozen=True)
class Profile:
    """The job and the fault rates one seed draws."""

    parallelism: int
    splits: int
    rows_per_split: int
    batch: int
    interval_ms: int
    timeout_ms: int
    max_concurrent: int
    tolerable: int
    big_state: bool
    transactional_sink: bool
    p_storage_fail: float
    p_storage_lost: float
    slow_storage_ms: int
    max_message_delay_ms: int
    p_kill_subtask: float
    p_hang_subtask: float
    p_prepare_fail: float
    p_kill_driver: float
    p_takeover: float
    p_savepoint: float
    p_restore_older: float
    p_discard: float
    p_reconnect: float
    p_outage: float
    #: how long a transactional sink's PREPARE takes at its system (0: at once); the
    #: subtask's other threads and everything else run meanwhile
    prepare_ms: int
    #: externalized-retention: delete-on-finish (the finished job leaves nothing in storage)
    delete_on_finish: bool
    #: subtasks read round-robin shares (a source that reads its splits together), not
    #: splits the driver deals on request (engine/split_enumerator.py)
    round_robin: bool = False

    @classmethod
    def draw(cls, rng: random.Random) -> Profile:
        parallelism = rng.randint(1, 3)
        return cls(
            parallelism=parallelism,
            splits=parallelism * rng.randint(1, 3),
            rows_per_split=rng.randint(20, 80),
            batch=rng.randint(3, 12),
            interval_ms=rng.choice((100, 200, 400)),
            timeout_ms=rng.choice((300, 800, 2_000)),
            max_concurrent=rng.randint(1, 2),
            tolerable=rng.randint(0, 2),
            big_state=rng.random() < 0.5,
            transactional_sink=rng.random() < 0.4,
            p_storage_fail=rng.choice((0.0, 0.01, 0.04)),
            p_storage_lost=rng.choice((0.0, 0.01, 0.03)),
            slow_storage_ms=rng.choice((5, 50, 600)),
            max_message_delay_ms=rng.choice((2, 20, 300)),
            p_kill_subtask=rng.choice((0.0, 0.002, 0.01)),
            p_hang_subtask=rng.choice((0.0, 0.0, 0.003)),
            p_prepare_fail=rng.choice((0.0, 0.02, 0.08)),
            p_kill_driver=rng.choice((0.0, 0.002, 0.006)),
            p_takeover=rng.choice((0.0, 0.002, 0.006)),
            p_savepoint=rng.choice((0.0, 0.005, 0.02)),
            p_restore_older=rng.choice((0.0, 0.3)),
            p_discard=rng.choice((0.0, 0.0, 0.2)),
            p_reconnect=rng.choice((0.0, 0.003, 0.01)),
            p_outage=rng.choice((0.0, 0.0, 0.02)),
            prepare_ms=rng.choice((0, 0, 50, 250)),
            delete_on_finish=rng.random() < 0.3,
            round_robin=rng.random() < 0.25,
        )

    @property
    def rows(self) -> int:
        return self.splits * self.rows_per_split


class World:
    """One seed's simulation: a clock, an event queue, storage, the sink, the runs."""

    def __init__(self, seed: int):
        self.seed = seed
        self.rng = random.Random(seed)
        self.profile = Profile.draw(self.rng)
        #: the sinks' own choices, apart from ``rng``: a seed of one sink runs as it always did
        self.sinks_rng = random.Random(f"{seed}/sinks")
        self.two_sinks = self.sinks_rng.random() < TWO_SINKS_SHARE
        #: batches in flight, with their own choices apart from ``rng`` (the other seeds
        #: run as they always did)
        self.flight_rng = random.Random(f"{seed}/in-flight")
        self.cuts_in_flight = self.flight_rng.random() < IN_FLIGHT_SHARE
        if self.two_sinks:  # half the rows: two sinks write each, and the seed costs what others do
            self.profile = dataclasses.replace(self.profile, rows_per_split=max(10, self.profile.rows_per_split // 2))
        self.now = 0
        self._queue: list[tuple[int, int, Callable[[], None]]] = []
        self._sequence = itertools.count()
        self.events = 0
        self.store_name = f"simulation-{seed}"
        self.raw = MemoryFileSystem(self.store_name)  # the truth, without faults
        #: the split plan the current lineage started with (SimSource): the ids to commit
        self.lineage_splits: tuple[Split, ...] | None = None
        self.external = ExternalSink(self)
        self.runs: list[DriverRun] = []
        self.finished = False
        #: the run that finished the job
        self.finisher: DriverRun | None = None
        self.completed_ids: set[int] = set()
        #: the newest run attempt that claimed the job
        self.newest_claim = 0
        #: fence log, in the order of creation (not by record number: a compacted number
        #: may be created again, by a zombie that must then find itself fenced): claim
        #: attempt -> when; (attempt, checkpoint id) -> when its reservation was created
        self.fence_creations = 0
        self.claimed_at: dict[int, int] = {}
        self.reserved_at: dict[tuple[int, int], int] = {}
        #: state file path -> when it was written; (run attempt, checkpoint id) -> when its
        #: abort was sent
        self.state_written_at: dict[str, int] = {}
        self.aborted_at: dict[tuple[int, int], int] = {}
        #: committed output that must stay (snapshots at --discard-existing requests), and
        #: what the current lineage started beside
        self.kept_snapshots: list[dict[str, tuple[int, ...]]] = []
        self.requested_snapshot: dict[str, tuple[int, ...]] = {}
        self.lineage_start: dict[str, tuple[int, ...]] = {}
        #: (run attempt, subtask, attempt, checkpoint id) whose sink pre-commit failed
        self.prepare_faults: set[tuple[int, int, int, int]] = set()
        self.trace: list[str] = []
        #: storage outage: every request fails until then
        self.outage_until = 0
        #: the first invariant broken (kept even if the code under test swallowed the raise)
        self.violation: str | None = None
        #: inside ``run_meanwhile``
        self.waiting = False

    # ---- scheduling -------------------------------------------------------------------
    def at(self, time_ms: int, action: Callable[[], None]) -> None:
        heapq.heappush(self._queue, (max(time_ms, self.now), next(self._sequence), action))

    def after(self, delay_ms: int, action: Callable[[], None]) -> None:
        self.at(self.now + delay_ms, action)

    def clock(self) -> int:
        return self.now

    def note(self, line: str) -> None:
        self.trace.append(f"{self.now:>8} {line}")
        if len(self.trace) > 400:
            del self.trace[:100]

    def broke(self, message: str) -> Violation:
        if self.violation is None:
            self.violation = message
        return Violation(message)

    @property
    def calm(self) -> bool:
        return len(self.runs) >= CALM_AFTER_RUNS

    def chance(self, p: float) -> bool:
        return not self.calm and p > 0 and self.rng.random() < p

    def message_delay(self) -> int:
        return self.rng.randint(1, self.profile.max_message_delay_ms if not self.calm else 2)

    def storage_delay(self) -> int:
        slow = self.profile.slow_storage_ms if not self.calm else 5
        return self.rng.randint(1, slow)

    # ---- the run ------------------------------------------------------------------------
    def run(self) -> None:
        self.at(0, lambda: self.start_run("latest"))
        while self._queue and not self.finished:
            self._run_next()
        if not self.finished:
            live = [r for r in self.runs if r.alive]
            raise self.broke(
                "nothing can progress and nothing times out: the job hangs "
                f"({', '.join(r.describe() for r in live) or 'no live run'})"
            )
        self.check_exactly_once()
        self.check_forgotten()
        self.check_fence_log_bounded()

    def check_forgotten(self) -> None:
        """delete-on-finish: the finished job left nothing in storage (issue 47, defect 6),
        when its last run saw no storage fault (a failed deletion is reported, not retried)."""
        finisher = self.finisher
        if not self.profile.delete_on_finish or finisher is None or finisher.storage_faults:
            return
        left = sorted(info.name for info in self.raw.list_dir(f"{NAMESPACE}{JOB_ID}"))
        if left:
            raise self.broke(f"the job finished with delete-on-finish, and left {left} in storage")

    def check_fence_log_bounded(self) -> None:
        """The fence log holds the newest claim and its driver's newest reservation (it
        prunes the others when it ends), whatever the number of runs before: each claimant
        deletes the records below its claim (issue 51, item 3). A run that met a storage
        fault may have left records (a failed deletion waits for the next claimant); a
        deleted job has none."""
        if self.profile.delete_on_finish or self.finisher is None or self.finisher.storage_faults:
            return
        left = self.raw.list_dir(f"{NAMESPACE}{JOB_ID}/{FENCE_DIR}")
        bound = 2 + sum(PRUNE_EVERY for run in self.runs if run.storage_faults)
        if len(left) > bound:
            raise self.broke(f"the fence log holds {len(left)} records after {len(self.runs)} runs (bound {bound})")

    def _run_next(self) -> None:
        time_ms, _, action = heapq.heappop(self._queue)
        self.now = time_ms
        try:
            action()
        finally:
            if self.violation is not None:
                raise Violation(self.violation)
        self.events += 1
        if self.events > MAX_EVENTS:
            raise self.broke(f"no end after {MAX_EVENTS} events (sim time {self.now} ms)")

    def run_meanwhile(self, duration_ms: int, busy: SimSubtask) -> None:
        """One thread of ``busy`` waits ``duration_ms`` for an external system (its async
        thread inside a PREPARE): everything else due meanwhile runs now, in order: the
        driver, the network, the subtask's client thread (a reconnect). The subtask's
        processing steps wait until the end (they would only queue barrier work behind
        this one); one such wait at a time, other PREPAREs then take no time."""
        deadline = self.now + duration_ms
        held: list[tuple[int, int, Callable[[], None]]] = []
        self.waiting = True
        try:
            while self._queue and self._queue[0][0] <= deadline and not self.finished:
                action = self._queue[0][2]
                if getattr(action, "__self__", None) is busy and getattr(action, "__name__", "") == "step":
                    held.append(heapq.heappop(self._queue))
                    continue
                self._run_next()
            self.now = max(self.now, deadline)
        finally:
            self.waiting = False
            for event in held:
                heapq.heappush(self._queue, event)

    def start_run(self, restore: str) -> None:
        if self.finished:
            return
        if len(self.runs) >= MAX_RUNS:
            raise self.broke(f"the job did not finish in {MAX_RUNS} runs")
        if restore == "latest" and self.chance(self.profile.p_restore_older):
            older = sorted(self.completed_checkpoint_ids())[:-1]
            if older:
                restore = str(self.rng.choice(older))
        if restore == "latest" and self.completed_checkpoint_ids() and self.chance(self.profile.p_discard):
            restore = "discard"
            self.discard_requested()
        run = DriverRun(self, len(self.runs) + 1, restore)
        self.runs.append(run)
        run.start()

    def next_run(self, restore: str = "latest") -> None:
        if not self.finished and not any(r.alive for r in self.runs):
            self.after(self.rng.randint(100, 1_500), lambda: self.start_run(restore))

    # ---- truths read without faults ----------------------------------------------------------
    def storage(self, actor: Any) -> FileSystemCheckpointStorage:
        return FileSystemCheckpointStorage(FaultyFileSystem(self, actor), NAMESPACE, max_retained=2)

    def truth(self) -> FileSystemCheckpointStorage:
        return FileSystemCheckpointStorage(self.raw, NAMESPACE, max_retained=2)

    def completed_checkpoint_ids(self) -> list[int]:
        return [
            e.checkpoint_id
            for e in self.truth().list_checkpoint_entries(JOB_ID, PIPELINE_ID)
            if e.completed and not e.fenced
        ]

    def is_fenced(self, run: DriverRun) -> bool:
        return 0 < run.attempt < self.newest_claim

    # ---- invariants ----------------------------------------------------------------------
    def on_storage_write(self, actor: Any, op: str, path: str, data: bytes | None, before: bytes | None) -> None:
        if op == "created" and "/fence/" in path and data:
            record = json.loads(data)
            self.fence_creations += 1
            if record.get("kind") == "claim":
                self.newest_claim = max(self.newest_claim, int(record["attempt"]))
                self.claimed_at[int(record["attempt"])] = self.fence_creations
            elif record.get("kind") == "reserve":
                self.reserved_at[(int(record["attempt"]), int(record["checkpoint_id"]))] = self.fence_creations
            return
        record = _RUN_RECORD_PATH.search(path)
        if record and isinstance(actor, DriverRun) and actor.attempt and self.is_fenced(actor):
            raise self.broke(f"fenced driver run {actor.attempt} {op} {path}")
        if record and record.group(1) == "plans" and op == "wrote":
            self.planned(data or b"", starting_over=isinstance(actor, DriverRun) and actor.restore == "discard")
        match = _CHECKPOINT_PATH.search(path)
        if match is None:
            return
        name = match.group(4) or ""
        completing = name == "_metadata" and op == "created" and bool(data)
        if isinstance(actor, DriverRun) and actor.attempt and not completing and self.is_fenced(actor):
            raise self.broke(f"fenced driver run {actor.attempt} {op} {path}")
        if completing:
            checkpoint_id = int(match.group(2))
            # Completing is allowed only under the run's own reservation of the id, made
            # before any newer claim (a claim after it fences the id, or finds it done).
            reserved = self.reserved_at.get((getattr(actor, "attempt", -1), checkpoint_id))
            if reserved is None:
                raise self.broke(f"{actor!r} completed checkpoint {checkpoint_id} without reserving it")
            if any(when < reserved for attempt, when in self.claimed_at.items() if attempt > actor.attempt):
                raise self.broke(f"{actor!r} completed checkpoint {checkpoint_id} reserved after a newer claim")
            if checkpoint_id in self.completed_ids:
                raise self.broke(f"checkpoint {checkpoint_id} completed twice")
            self.completed_ids.add(checkpoint_id)
        if name.endswith(".state") and op == "deleted":
            metadata = path.rsplit("/", 1)[0] + "/_metadata"
            try:
                completed = self.raw.read(metadata)
            except FileNotFoundError:
                completed = b""
            if completed and name.encode() in completed:
                raise self.broke(f"{actor!r} deleted {name} of completed checkpoint {match.group(2)}")
        if name.endswith(".state") and op == "wrote":
            if before is not None and before != data:
                raise self.broke(f"state file {path} overwritten with other bytes by {actor!r}")
            self.state_written_at[path] = self.now

    def outputs(self) -> dict[str, tuple[int, ...]]:
        """The committed output, by name: published epochs, and the File sink's part files."""
        return {name: ids for family in self.output_families().values() for name, ids in family.items()}

    def output_families(self) -> dict[str, dict[str, tuple[int, ...]]]:
        """Each sink's committed output, by name (the job's one sink, or both)."""
        families = {}
        if self.profile.transactional_sink or self.two_sinks:
            families["transactional"] = {name: tuple(ids) for name, ids in self.external.final.items()}
        if not self.profile.transactional_sink or self.two_sinks:
            found = {}
            for info in self.raw.list_dir(OUTPUT):
                if not info.is_dir and info.name.startswith("part-"):
                    found[info.name] = tuple(
                        json.loads(line)["id"] for line in self.raw.read(info.path).splitlines() if line
                    )
            families["File"] = found
        return families

    def job_sink(self, run: DriverRun) -> Sink:
        """A run's sink: the seed's one, or both in the order this run's job file lists them."""
        if not self.two_sinks:
            return SimSink(self) if self.profile.transactional_sink else SimFileSink(self, run)
        parts: list[Sink] = [SimFileSink(self, run), SimSink(self)]
        if self.sinks_rng.random() < 0.5:
            parts.reverse()
            self.note(f"run {run.number}: the job file lists its sink blocks the other way round")
        if not self.calm and self.sinks_rng.random() < P_SINK_REMOVED and self.restores_a_checkpoint(run):
            run.removed_sink = parts.pop(self.sinks_rng.randrange(2)).plugin_name
            self.note(f"run {run.number}: the job file lost its {run.removed_sink} sink block")
            return parts[0]
        return SinkGroup(parts)

    def restores_a_checkpoint(self, run: DriverRun) -> bool:
        """``run`` will restore a checkpoint: every completed one holds both sinks' output."""
        document = self.truth().read_document(JOB_ID, "job.json") or {}
        return run.restore == "latest" and bool(self.completed_checkpoint_ids()) and not document.get(DISCARDING)

    def discard_requested(self) -> None:
        """A run asks for --discard-existing: once it has begun (a checkpoint deleted),
        what is committed now must stay (docs/jobs.md 'Starting over')."""
        self.requested_snapshot = self.outputs()

    def discard_began(self) -> None:
        if not self.kept_snapshots or self.kept_snapshots[-1] is not self.requested_snapshot:
            self.kept_snapshots.append(self.requested_snapshot)

    def discarded(self) -> None:
        """The sink dropped its bookkeeping: a new lineage starts, which must write every
        id once more beside what earlier lineages committed."""
        self.discard_began()
        self.lineage_start = self.requested_snapshot
        self.lineage_splits = None

    def planned(self, data: bytes, starting_over: bool) -> None:
        """A split plan was stored. The first of a lineage (or the one of a run that starts
        over) says which ids the job must commit: its start is where the job first
        started. A plan the source made later starts where the source is *then* (issue
        47, defect 1): a run that reads it loses what came between."""
        if self.lineage_splits is None or starting_over:
            self.lineage_splits = tuple(Split(split_id, spec) for split_id, spec in json.loads(data)["splits"])

    def check_exactly_once(self) -> None:
        outputs = self.outputs()
        for snapshot in self.kept_snapshots:
            changed = sorted(name for name, ids in snapshot.items() if outputs.get(name) != ids)
            if changed:
                raise self.broke(f"output committed before a --discard-existing was deleted or changed: {changed[:5]}")
        expected = {i for split in self.lineage_splits or () for i in range(split.spec["start"], split.spec["end"])}
        for sink, family in self.output_families().items():
            ids = Counter(i for name, values in family.items() if name not in self.lineage_start for i in values)
            lost = sorted(expected - set(ids))
            duplicated = sorted(i for i, n in ids.items() if n > 1)
            unexpected = sorted(set(ids) - expected)
            if lost or duplicated or unexpected:
                where = f" in the {sink} sink" if self.two_sinks else ""
                raise self.broke(
                    f"not exactly once{where}: lost {lost[:10]} ({len(lost)}), duplicated "
                    f"{duplicated[:10]} ({len(duplicated)}), unexpected {unexpected[:10]}"
                )


class FaultyFileSystem(MemoryFileSystem):
    """The world's in-memory storage as one actor (a driver run, a subtask) sees it:
    requests fail, or succeed and lose their answer, as the seed decides."""

    def __init__(self, world: World, actor: Any):
        super().__init__(world.store_name)
        self.world = world
        self.actor = actor

    def _fault(self, op: str, path: str) -> str:
        world = self.world
        if world.now < world.outage_until and not world.calm:  # storage unreachable for a while
            self._count()
            return "fail"
        if world.chance(world.profile.p_storage_fail):
            self._count()
            return "fail"
        if op != "read" and world.chance(world.profile.p_storage_lost):
            self._count()
            return "lost"
        return "ok"

    def _count(self) -> None:
        run = self.actor if isinstance(self.actor, DriverRun) else getattr(self.actor, "run", None)
        if run is not None:
            run.storage_faults += 1

    def _raise(self, op: str, path: str, applied: bool) -> None:
        from airflow_provider_seatunnel_ckpt.errors import CheckpointStorageError

        what = "its answer was lost" if applied else "failed"
        raise CheckpointStorageError(f"memory: {op} {path}: injected fault ({what})")

    def _mutate(self, op: str, path: str, apply: Callable[[], None], data: bytes | None = None) -> None:
        fault = self._fault(op, path)
        if fault == "fail":
            self._raise(op, path, applied=False)
        before = self._peek(path) if op == "wrote" else None
        apply()
        self.world.on_storage_write(self.actor, op, path, data, before)
        if fault == "lost":
            self._raise(op, path, applied=True)

    def _peek(self, path: str) -> bytes | None:
        try:
            return MemoryFileSystem.read(self, path)
        except FileNotFoundError:
            return None

    def read(self, path: str, offset: int = 0, length: int | None = None) -> bytes:
        if self._fault("read", path) == "fail":
            self._raise("read", path, applied=False)
        return super().read(path, offset, length)

    def list_dir(self, path: str) -> Any:
        if self._fault("read", path) == "fail":
            self._raise("list", path, applied=False)
        return super().list_dir(path)

    def write_atomic(self, path: str, data: Any) -> None:
        content = bytes(data)
        self._mutate("wrote", path, lambda: MemoryFileSystem.write_atomic(self, path, content), content)

    def _create_new(self, path: str, data: Any) -> None:
        content = bytes(data)
        self._mutate("created", path, lambda: MemoryFileSystem._create_new(self, path, content), content)

    def delete(self, path: str, recursive: bool = False) -> None:
        if MemoryFileSystem.info(self, path) is None:
            return  # nothing there: no request worth failing, and nothing deleted
        self._mutate("deleted", path, lambda: MemoryFileSystem.delete(self, path, recursive))


# ---- the sink -------------------------------------------------------------------------------
OUTPUT = "/out"


_PREPARED_NAME = re.compile(r"^r(\d+)-s(\d+)-a(\d+)-i(\d+)-c(\d+)$")


@dataclass(frozen=True)
class Prepared:
    """Who prepared a staged epoch of the transactional sink (its name says it)."""

    run: int
    subtask: int
    attempt: int
    instance: int
    checkpoint_id: int

    @classmethod
    def of(cls, name: str) -> Prepared:
        match = _PREPARED_NAME.match(name)
        assert match is not None, name
        return cls(*(int(part) for part in match.groups()))


class ExternalSink:
    """A transactional system that cannot un-publish (as Kafka's EXACTLY_ONCE: it refuses
    a restore behind completed checkpoints), with a database's locks (as the Jdbc sink's
    prepared transactions): staged epochs and published ones, by name; a staged epoch
    holds its ids until it is committed or rolled back."""

    def __init__(self, world: World):
        self.world = world
        self.staged: dict[str, list[int]] = {}
        self.final: dict[str, list[int]] = {}
        self.instances = itertools.count(1)
        #: when each staged epoch was prepared; when the driver last released a
        #: subtask's orphans, by (run attempt, subtask)
        self.prepared_at: dict[str, int] = {}
        self.released_at: dict[tuple[int, int], int] = {}

    def roll_back(self, name: str, why: str) -> None:
        self.world.note(f"sink: rolled back {name} ({why})")
        del self.staged[name]


class SimSink(Sink):
    plugin_name = "Simulated"

    def __init__(self, world: World):
        super().__init__({})
        self.world = world

    def create_writer(self, job_id: str, subtask: int, attempt: int) -> SinkWriter:
        return SimWriter(self, subtask, attempt)

    def create_committer(self, job_id: str) -> SinkCommitter:
        return SimCommitter(self)


class SimWriter(SinkWriter):
    """One epoch of one subtask: one transaction (as the Jdbc sink's)."""

    def __init__(self, sink: SimSink, subtask: int, attempt: int):
        self.sink = sink
        self.subtask = subtask
        self.attempt = attempt
        self.rows: list[int] = []
        #: the subtask's sink instance (its registration), set by ``SubtaskSink``
        self.instance: SubtaskSink | None = None

    def open(self, after_checkpoint_id: int) -> None:
        if self.instance is not None:
            self.instance.opened(after_checkpoint_id)

    def write(self, batch: Any) -> None:
        ids = batch.column(0).to_pylist()
        if self.instance is not None:
            self.instance.check_not_blocked(ids)
        self.rows.extend(ids)

    def prepare_commit(self, checkpoint_id: int) -> Any:
        if not self.rows:
            return None
        world, instance = self.sink.world, self.instance
        serial = instance.serial if instance is not None else 0
        name = f"r{self.sink.run_attempt}-s{self.subtask}-a{self.attempt}-i{serial}-c{checkpoint_id}"
        if instance is not None:
            if instance.closed:  # as JdbcSinkWriter._abandon: a released sink prepares nothing
                raise ConnectorError(f"simulated sink: {name} released before its PREPARE; rolled back")
            if world.profile.prepare_ms and not world.waiting and not world.calm:
                subtask = instance.subtask
                if world.chance(world.profile.p_reconnect * 20) and not subtask.reconnecting:
                    subtask.drop_connection()  # the network fails when it likes, during a PREPARE too
                instance.in_flight += 1
                try:
                    world.run_meanwhile(world.rng.randint(1, world.profile.prepare_ms), instance.subtask)
                finally:
                    instance.in_flight -= 1
                if not instance.subtask.alive:  # the worker went before the PREPARE reached the system
                    raise ConnectionError(f"simulated sink: the worker went during the PREPARE of {name}")
        world.external.staged[name] = self.rows
        world.external.prepared_at[name] = world.now
        self.rows = []
        return {"name": name, "cp": checkpoint_id}


class SimCommitter(SinkCommitter):
    def __init__(self, sink: SimSink):
        self.sink = sink
        self.world = sink.world
        self.external = sink.world.external

    def commit(self, commit_infos: Any) -> None:
        for info in commit_infos:
            name = info["name"]
            if name in self.external.final:
                continue
            if name not in self.external.staged:
                raise ConnectorError(f"simulated sink: staged epoch {name} is gone")
            self.external.final[name] = self.external.staged.pop(name)

    def cleanup(self, keep: Any) -> None:
        names = {info["name"] for info in keep if info}
        for name in [n for n in self.external.staged if n not in names]:
            del self.external.staged[name]

    def discard_orphans(self, subtask: int, up_to_checkpoint_id: int, keep: Any) -> None:
        """As the Jdbc sink's: this run's for checkpoints up to the highest triggered, an
        older run's whatever their checkpoint, never a newer run's."""
        kept = {info["name"] for info in keep if info}
        run = self.sink.run_attempt
        self.external.released_at[(run, subtask)] = self.world.now
        for name in list(self.external.staged):
            prepared = Prepared.of(name)
            if name in kept or prepared.subtask != subtask or prepared.run > run:
                continue
            if prepared.run == run and prepared.checkpoint_id > up_to_checkpoint_id:
                continue
            self.external.roll_back(name, f"orphan of subtask {subtask}, released by the driver")

    def check_rollback(self, after_checkpoint_id: int, newer_checkpoint_ids: Any) -> None:
        if list(newer_checkpoint_ids):
            raise ConfigError(
                "--restore", f"simulated transactional sink cannot un-publish checkpoints {list(newer_checkpoint_ids)}"
            )

    def rollback(self, after_checkpoint_id: int) -> None:
        newer = [
            n
            for n in self.external.final
            if int(n.rsplit("-c", 1)[1]) > after_checkpoint_id and n not in self.world.lineage_start
        ]  # an earlier lineage's output stays (--discard-existing)
        if newer:
            raise self.world.broke(f"a transactional sink was asked to un-publish {newer}: the restore was not refused")


class SimFileSink(FileSink):
    """The real File sink (jsonl) on the world's storage, under ``/out``, with faults."""

    def __init__(self, world: World, run: DriverRun):
        super().__init__({"path": f"memory://{world.store_name}{OUTPUT}/", "format": "jsonl"})
        self.fs = FaultyFileSystem(world, run)


class FaultyWriter(SinkWriter):
    """A writer whose pre-commit fails when the seed says so (around the real one)."""

    def __init__(self, world: World, inner: SinkWriter, key: tuple[int, int, int]):
        self.world = world
        self.inner = inner
        self.key = key

    def open(self, after_checkpoint_id: int) -> None:
        self.inner.open(after_checkpoint_id)

    def write(self, batch: Any) -> None:
        if isinstance(self.inner, GroupWriter):  # both sinks read the source's one table
            for index in range(len(self.inner.writers)):
                self.inner.write_to(index, batch)
        else:
            self.inner.write(batch)

    def prepare_commit(self, checkpoint_id: int) -> Any:
        world = self.world
        if world.chance(world.profile.p_prepare_fail):
            world.prepare_faults.add((*self.key, checkpoint_id))
            raise OSError("injected sink pre-commit failure")
        return self.inner.prepare_commit(checkpoint_id)

    def close(self) -> None:
        self.inner.close()


class SubtaskSink:
    """The sink as one registration of a subtask sees it: a new instance at every
    restart, as ``load_sink`` gives the real subtask. Its writers' pre-commits fail when
    the seed says so. For the transactional sink it does what the Jdbc sink does against
    the reconnect race (issue 30, defect 6): the old registration's instance is closed
    before the new one exists, and a PREPARE that gets in first is finished before that
    (the simulation's processing steps wait while one is in flight); the new instance's
    first writer then releases what the subtask's previous registrations left prepared
    for checkpoints after the restored one (``JdbcSink.release_stale``)."""

    def __init__(self, sink: Sink, world: World, subtask: SimSubtask):
        self.sink = sink
        self.world = world
        self.subtask = subtask
        self.key = (subtask.run.attempt, subtask.index, subtask.attempt)
        self.serial = next(world.external.instances)
        self.registered_at = subtask.registered_at
        self.closed = False
        self.in_flight = 0
        #: the checkpoint this registration restored (its first writer's)
        self.restored_from: int | None = None

    def create_writer(self, job_id: str, subtask: int, attempt: int) -> SinkWriter:
        inner = self.sink.create_writer(job_id, subtask, attempt)
        for writer in inner.writers if isinstance(inner, GroupWriter) else [inner]:
            if isinstance(writer, SimWriter):
                writer.instance = self
        return FaultyWriter(self.world, inner, self.key)

    def opened(self, after_checkpoint_id: int) -> None:
        if self.restored_from is None:
            self.restored_from = after_checkpoint_id
            self.release_stale(after_checkpoint_id)

    def release_stale(self, after_checkpoint_id: int) -> None:
        run, index, attempt = self.key
        for name in list(self.world.external.staged):
            prepared = Prepared.of(name)
            if (
                prepared.run == run
                and prepared.subtask == index
                and prepared.attempt <= attempt
                and prepared.checkpoint_id > after_checkpoint_id
            ):
                self.world.external.roll_back(name, f"left by subtask {index}'s previous registration")

    def check_not_blocked(self, ids: list[int]) -> None:
        """A write of ids a prepared transaction holds waits for it (there is no lock
        timeout). One prepared by an earlier registration of this subtask, for a
        checkpoint after the restored one, is never committed (its checkpoint was
        aborted when the subtask registered again); the driver releases it when this
        registration's Register reaches it. If it was prepared after that release, nothing
        releases it while the run lives: the write waits until the run fails."""
        run, index, _ = self.key
        after = self.restored_from or 0
        external = self.world.external
        released = external.released_at.get((run, index), -1)
        if released < self.registered_at:
            return  # this registration's release is still to come: the wait ends then
        for name, held in external.staged.items():
            prepared = Prepared.of(name)
            if (
                prepared.run == run
                and prepared.subtask == index
                and prepared.instance != self.serial
                and prepared.checkpoint_id > after
                and external.prepared_at[name] > released
                and not set(held).isdisjoint(ids)
            ):
                raise self.world.broke(
                    f"subtask {index} (restored from {after}) writes ids that {name} holds, prepared "
                    f"by an earlier registration after the driver released its orphans: nothing "
                    "releases it, the write waits until the run fails"
                )

    def close(self) -> None:
        self.closed = True


class CheckedCommitter(SinkCommitter):
    """The run's committer, watched: a fenced driver commits, cleans up and rolls back
    nothing; nothing is committed before a ``_metadata`` covers it."""

    def __init__(self, world: World, run: DriverRun, inner: SinkCommitter):
        self.world = world
        self.run = run
        self.inner = inner

    def _not_fenced(self, what: str) -> None:
        if self.world.is_fenced(self.run):
            raise self.world.broke(f"fenced driver run {self.run.attempt} {what}")

    def _own_infos(self, infos: Any, what: str) -> None:
        """Each sink of a group is handed its own parts (a transactional epoch has a name,
        a File epoch staged files), at the place of its block in this run's job file; a
        run whose job file lost one of the two is handed no part of both."""
        sink = self.run.sink
        if not isinstance(sink, SinkGroup):
            if any(isinstance(info, dict) and "sinks" in info for info in infos):
                raise self.world.broke(
                    f"run {self.run.number} {what} the output of two sinks as its one sink's: "
                    "sinks matched to their commit infos by place, not identity"
                )
            return
        for info in infos:
            for part, owner in zip((info or {}).get("sinks", ()), sink.sinks):
                found = "transactional" if isinstance(part, dict) and "name" in part else "File"
                expected = "transactional" if isinstance(owner, SimSink) else "File"
                if part is not None and found != expected:
                    raise self.world.broke(
                        f"run {self.run.number} {what} the {found} sink's output as the {expected} "
                        "sink's: sinks matched to their commit infos by place, not identity"
                    )

    def commit(self, commit_infos: Any) -> None:
        self._not_fenced("committed sink output")
        commit_infos = list(commit_infos)
        self._own_infos(commit_infos, "committed")
        completed = self.world.completed_checkpoint_ids()
        for info in commit_infos:
            checkpoint_id = epoch_of(info)
            if not any(c >= checkpoint_id for c in completed):
                raise self.world.broke(
                    f"the epoch of checkpoint {checkpoint_id} committed before a _metadata covers it"
                )
        self.inner.commit(commit_infos)

    def cleanup(self, keep: Any) -> None:
        self._not_fenced("cleaned up sink output")
        keep = list(keep)
        self._own_infos(keep, "kept")
        self.inner.cleanup(keep)

    def check_rollback(self, after_checkpoint_id: int, newer_checkpoint_ids: Any) -> None:
        self.inner.check_rollback(after_checkpoint_id, newer_checkpoint_ids)

    def rollback(self, after_checkpoint_id: int) -> None:
        self._not_fenced("rolled back sink output")
        self.inner.rollback(after_checkpoint_id)

    def discard_orphans(self, subtask: int, up_to_checkpoint_id: int, keep: Any) -> None:
        keep = list(keep)
        self._own_infos(keep, "kept")
        self.inner.discard_orphans(subtask, up_to_checkpoint_id, keep)

    def discard_job(self) -> None:
        self._not_fenced("discarded the job's sink bookkeeping")
        self.inner.discard_job()
        if self.run.alive:  # not delete-on-finish's, at the job's end: no lineage follows it
            self.world.discarded()


_FINAL_CHECKPOINT = re.compile(r"part-[0-9a-f]{8}-\d+-\d+-(\d+)-\d+\.")


def epoch_of(info: Any) -> int:
    """The checkpoint id a commit info's epoch ends at."""
    if "sinks" in info:  # the epoch of a job's two sinks
        return max(epoch_of(part) for part in info["sinks"] if part)
    if "cp" in info:
        return int(info["cp"])
    return max(int(_FINAL_CHECKPOINT.search(path).group(1)) for path in info["final"])


# ---- the simulated parts around the real code ---------------------------------------------------
class AsyncThread:
    """A subtask's async thread. It runs each task at once, as the simulation always did,
    except a task submitted by a barrier taken in flight (on the channel's thread, under
    the subtask's ``_cut`` lock, which a real async thread does not hold): that one, and
    any submitted while it waits, run in order as the next events, after the take."""

    def __init__(self, world: World, runtime: SubtaskRuntime):
        self.world, self.runtime = world, runtime
        self._waiting: list[tuple[Future[Any], Callable[..., Any], tuple[Any, ...]]] = []

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        if not self._waiting and not self.runtime._cut.locked():
            return InlineExecutor().submit(fn, *args)
        future: Future[Any] = Future()
        self._waiting.append((future, fn, args))
        if len(self._waiting) == 1:
            self.world.after(0, self._run_waiting)
        return future

    def _run_waiting(self) -> None:
        while self._waiting:
            future, fn, args = self._waiting[0]
            done = InlineExecutor().submit(fn, *args)
            del self._waiting[0]
            error = done.exception()
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(done.result())


class InlineExecutor:
    """An executor that runs the task at once (the fence thread; a subtask's async thread)."""

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args))
        except Violation:
            raise
        except BaseException as err:  # handed to the caller as the future's
            future.set_exception(err)
        return future

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        pass


class StorageWorker:
    """The driver's ordered storage thread, as a queue the world runs one task at a time,
    each after a delay (slow storage)."""

    def __init__(self, run: DriverRun):
        self.run = run
        self.tasks: list[tuple[Callable[..., Any], tuple[Any, ...], Future[Any]]] = []
        self.busy = False

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        self.tasks.append((fn, args, future))
        if not self.busy:
            self.busy = True
            self.run.world.after(self.run.world.storage_delay(), self.step)
        return future

    def step(self) -> None:
        if not self.run.alive or not self.tasks:
            self.busy = False
            return
        self.run_one()
        self.run.deliver_loop_events()
        if self.tasks:
            self.run.world.after(self.run.world.storage_delay(), self.step)
        else:
            self.busy = False

    def run_one(self) -> None:
        fn, args, future = self.tasks.pop(0)
        try:
            future.set_result(fn(*args))
        except Violation:
            raise
        except BaseException as err:
            future.set_exception(err)

    def drain(self) -> None:
        """``shutdown(wait=True)``: what is queued runs, in order."""
        while self.tasks:
            self.run_one()

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        pass


class Connection:
    """One control connection of a subtask attempt (the driver's connection id): ordered
    both ways, each message late by a random delay; what is in flight when it drops is
    lost."""

    def __init__(self, world: World, subtask: SimSubtask):
        self.world = world
        self.subtask = subtask
        self.open = True
        self._to_driver_at = 0
        self._to_subtask_at = 0

    def later(self, towards_driver: bool) -> int:
        at = self.world.now + self.world.message_delay()
        if towards_driver:
            at = self._to_driver_at = max(at, self._to_driver_at)
        else:
            at = self._to_subtask_at = max(at, self._to_subtask_at)
        return at


class SimServer:
    """What the driver loop sends through: into the subtask's connection."""

    def __init__(self, run: DriverRun):
        self.run = run

    def send(self, connection: Any, raw: Any) -> None:
        conn: Connection = connection
        message = decode(raw)
        if isinstance(message, AbortCheckpoint):
            self.run.world.aborted_at.setdefault((self.run.attempt, message.checkpoint_id), self.run.world.now)
        if not conn.open:
            raise ConnectionError("closed")
        self.run.world.at(conn.later(towards_driver=False), lambda: conn.open and conn.subtask.receive(raw))


class SimClient:
    def __init__(self, subtask: SimSubtask):
        self.subtask = subtask

    def send(self, raw: Any) -> None:
        subtask = self.subtask
        world = subtask.run.world
        message = decode(raw)
        if isinstance(message, Decline):
            key = (subtask.run.attempt, subtask.index, subtask.attempt, message.checkpoint_id)
            if key in world.prepare_faults:
                raise world.broke(
                    f"subtask {subtask.index} attempt {subtask.attempt} declined checkpoint "
                    f"{message.checkpoint_id} for a failed sink pre-commit: a task failure, not a "
                    "counted decline (Flink's rule)"
                )
        conn = subtask.conn
        if not conn.open:
            raise ConnectionError("closed")
        world.at(conn.later(towards_driver=True), lambda: subtask.run.handle(("message", conn, raw)))


class SimSource(Source):
    """The job's source as the runner plans it: one range of ids per split, each starting
    at the source's "latest", which moves on as time passes (as Kafka's latest offsets do
    while records arrive). So only the plan of the job's first start reads every id the
    job must commit (``World.planned``, when it is stored): a rerun with nothing to
    restore must keep it."""

    def __init__(self, world: World):
        super().__init__({})
        self.world = world
        self.reads_splits_together = world.profile.round_robin

    def splits(self, parallelism: int) -> list[Split]:
        world = self.world
        rows = world.profile.rows_per_split
        moved = min(rows // 2, world.now // LATEST_MOVES_EVERY_MS)
        return [
            Split(f"range-{i:03d}", {"start": i * rows + moved, "end": (i + 1) * rows})
            for i in range(world.profile.splits)
        ]


# ---- a driver run -----------------------------------------------------------------------------
class DriverRun:
    """One ``seatunnel-ckpt run``: the real JobRun claim and restore, the real coordinator
    and driver loop, the subtasks Spark would run."""

    def __init__(self, world: World, number: int, restore: str):
        self.world = world
        self.number = number
        self.restore = restore
        self.alive = True
        self.attempt = 0
        self.storage_faults = 0
        self.subtasks: dict[int, SimSubtask] = {}
        self.task_attempts: Counter[int] = Counter()
        self.savepoints: list[int] = []
        #: the plugin of the sink block this run's job file lost (its restore must be refused)
        self.removed_sink: str | None = None
        self.loop: DriverLoop | None = None
        self.enumerator: Any = None
        #: the attempt's split plan and checkpoint history (from ``begin``)
        self.splits: tuple[Split, ...] = ()
        self.history: Any = None
        self._ticks_at: tuple[int, int] = (-1, 0)
        self._tick_scheduled: int | None = None

    def __repr__(self) -> str:
        return f"<run {self.number} attempt {self.attempt}>"

    def describe(self) -> str:
        coordinator = self.loop.coordinator.describe() if self.loop else "not started"
        return f"run {self.number} (attempt {self.attempt}): {coordinator}"

    # ---- start: the runner's own code ----------------------------------------------------------
    def start(self) -> None:
        world = self.world
        profile = world.profile
        source = {"plugin_name": "Sequence", "rows": profile.rows}
        job = load_job(
            {
                "env": {"job.name": JOB_ID, "parallelism": profile.parallelism},
                "source": [source],
                "sink": [{"plugin_name": "Console"}],
            }
        )
        config = load_config(
            {
                "seatunnel": {
                    "engine": {
                        "checkpoint": {
                            "interval": profile.interval_ms,
                            "timeout": profile.timeout_ms,
                            "max-concurrent": profile.max_concurrent,
                            "tolerable-failure": profile.tolerable,
                            "storage": {"type": "memory", "max-retained": 2},
                            "externalized-retention": "delete-on-finish"
                            if profile.delete_on_finish
                            else "retain-on-finish",
                        }
                    }
                }
            }
        )
        self.job = JobSpec(JOB_ID, profile.parallelism, source, {"plugin_name": "Simulated"})
        discard = self.restore == "discard"
        request = RunRequest(
            job=job, config=config, job_id=JOB_ID, restore="none" if discard else self.restore, discard_existing=discard
        )
        run = self.job_run = JobRun(request, progress=world.note)
        run.storage = world.storage(self)
        run.store = CompletedCheckpointStore(run.storage, JOB_ID, PIPELINE_ID)
        run.fence = FenceLog(run.storage, JOB_ID, deletable=run.fence.deletable)
        self.sink = world.job_sink(self)
        self.committer = CheckedCommitter(world, self, self.sink.create_committer(JOB_ID))
        self.token = f"token-{self.number}"
        before = world.completed_checkpoint_ids()
        try:
            manifest, highest_id, restored_infos = run.claim(self.token, self.sink, self.committer)
        except Violation:
            raise
        except ConfigError as err:
            self.attempt = run.attempt_number
            if "--restore" in str(err) and world.completed_checkpoint_ids() != before:
                raise world.broke(
                    f"a refused restore changed the checkpoints: {before} -> {world.completed_checkpoint_ids()} ({err})"
                ) from None
            self.end_failed_start(err)
            return
        except CheckpointError as err:
            self.attempt = run.attempt_number
            if self.restore == "discard" and world.completed_checkpoint_ids() != before:
                world.discard_began()  # checkpoints went: the next run must finish the discard
            self.end_failed_start(err)
            return
        self.attempt = run.attempt_number
        if self.removed_sink is not None and manifest is not None:
            raise world.broke(
                f"run {self.number} restored checkpoint {run.restored_id} without its {self.removed_sink} "
                "sink: that sink's output was dropped, and no --allow-non-restored-state asked for it"
            )
        world.note(f"run {self.number} claimed attempt {self.attempt}, restored {run.restored_id}")
        self.schedule_faults()
        # Spark starts between the claim and the split plan: another run may claim meanwhile
        world.after(world.rng.randint(1, 200), lambda: self.begin(manifest, highest_id, restored_infos))

    def begin(self, manifest: Any, highest_id: int, restored_infos: list[Any]) -> None:
        """Spark is up: the runner's split plan (``JobRun.plan_splits``), then the loop."""
        if not self.alive:
            return
        world, run = self.world, self.job_run
        try:
            self.splits, plan_ref = run.plan_splits(SimSource(world), manifest)
        except Violation:
            raise
        except Exception as err:  # recorded as the real run() would
            run._release_after_error(err, self.token)
            self.end_failed_start(err)
            return
        coordinator = run.coordinator(manifest, highest_id, clock=world.clock)
        self.enumerator = enumerator_for(SimSource(world), manifest, len(self.splits), world.profile.parallelism)
        self.history = run._history = run.open_history(HISTORY_SIZE)
        loop = self.loop = DriverLoop(
            coordinator,
            run.store,
            self.committer,
            run.fence,
            properties={"job_name": JOB_ID, "attempt": self.attempt, PLAN_REF_KEY: plan_ref},
            split_plan=plan_entries(self.splits),
            progress=world.note,
            clock=world.clock,
            durable_infos=restored_infos,
            history=self.history,
            sinks=run.sink_layout,
            enumerator=self.enumerator,
        )
        loop._io.shutdown(wait=True)
        loop._fence_io.shutdown(wait=True)
        loop._io = self.io = StorageWorker(self)
        loop._fence_io = InlineExecutor()
        loop.server = SimServer(self)
        self.execute(coordinator.on_tick())
        for index in range(world.profile.parallelism):
            self.spawn(index, 0)
        world.after(HISTORY_FLUSH_MS, self.flush_history)

    def flush_history(self) -> None:
        """The recorder's thread, every second while the driver lives (a zombie's too)."""
        if self.alive:
            self.history.flush()
            self.world.after(HISTORY_FLUSH_MS, self.flush_history)

    def end_failed_start(self, err: BaseException) -> None:
        self.world.note(f"run {self.number} failed to start: {err}")
        self.alive = False
        self.world.next_run()

    # ---- events ---------------------------------------------------------------------------------
    def handle(self, event: tuple[Any, ...]) -> None:
        if not self.alive or self.loop is None:
            return
        self.loop._handle(event)
        self.after_event()

    def execute(self, actions: list[Any]) -> None:
        assert self.loop is not None
        self.loop._execute(actions)
        self.after_event()

    def deliver_loop_events(self) -> None:
        """Move what the storage worker reported onto the loop's thread (a little later)."""
        assert self.loop is not None
        while not self.loop.events.empty():
            event = self.loop.events.get_nowait()
            self.world.after(1, lambda e=event: self.handle(e))

    def after_event(self) -> None:
        """As ``DriverLoop._step`` after each event: tick when due, then keep a wakeup."""
        loop = self.loop
        assert loop is not None
        if self.finish_if_done():
            return
        wakeup = loop._wakeup_at
        if wakeup is None or self.world.now >= wakeup:
            self.tick()
            return
        self.schedule_tick(wakeup)

    def schedule_tick(self, at: int | None) -> None:
        # The real loop also wakes every REQUEST_POLL_S (1 s) when nothing else is due.
        at = self.world.now + 1_000 if at is None else min(at, self.world.now + 1_000)
        if self._tick_scheduled is not None and self._tick_scheduled <= at and self._tick_scheduled >= self.world.now:
            return
        self._tick_scheduled = at
        self.world.at(at, self.tick_event)

    def tick_event(self) -> None:
        self._tick_scheduled = None
        if self.alive and self.loop is not None:
            loop = self.loop
            if loop._wakeup_at is None or self.world.now >= loop._wakeup_at:
                self.tick()
            else:
                self.schedule_tick(loop._wakeup_at)

    def tick(self) -> None:
        loop = self.loop
        assert loop is not None
        before = loop._wakeup_at
        actions = loop.coordinator.on_tick()
        loop._execute(actions)
        if self.finish_if_done():
            return
        instant, count = self._ticks_at
        count = count + 1 if instant == self.world.now and not actions else 0
        self._ticks_at = (self.world.now, count)
        if count > SPIN_LIMIT:
            raise self.world.broke(
                f"run {self.number}: the driver loop spins: {count} ticks at {self.world.now} ms without "
                f"effect (wakeup {before}; {loop.coordinator.describe()}; next wakeup {loop.coordinator.next_wakeup_ms()})"
            )
        wakeup = loop._wakeup_at
        if wakeup is not None and wakeup <= self.world.now:
            self.world.at(self.world.now, self.tick_event)  # as the real loop: events.get(timeout=0)
            self._tick_scheduled = self.world.now
        else:
            self.schedule_tick(wakeup)

    # ---- the end of the run -----------------------------------------------------------------------
    def finish_if_done(self) -> bool:
        loop = self.loop
        if loop is None or not loop._done.is_set() or not self.alive:
            return False
        self.alive = False
        self.io.drain()  # _io.shutdown(wait=True)
        for subtask in list(self.subtasks.values()):
            subtask.stop()  # the Spark job is cancelled (or its tasks return)
        outcome = loop.outcome
        try:
            self.job_run.end(outcome, self.committer, self.token)
        except Violation:
            raise
        except Exception as err:  # recorded as the real run() would
            self.job_run._release_after_error(err, self.token)
        self.world.note(f"run {self.number} ended: finished={outcome.finished} error={outcome.error}")
        self.check_savepoints_deleted()
        if outcome.finished and not self.world.is_fenced(self):
            self.world.finished = True
            self.world.finisher = self
            return True
        self.world.next_run()
        return True

    def check_savepoints_deleted(self) -> None:
        """What was uploaded for an aborted savepoint before its abort is deleted (a
        subtask still uploading after it leaves a leftover the next claim removes)."""
        world = self.world
        if self.storage_faults or world.is_fenced(self):
            return
        truth = world.truth()
        for savepoint in self.savepoints:
            aborted = world.aborted_at.get((self.attempt, savepoint))  # a zombie may use the same id
            if aborted is None:
                continue
            directory = truth.layout.checkpoint_dir(JOB_ID, PIPELINE_ID, savepoint, savepoint=True)
            for info in world.raw.list_dir(directory):
                ours = Layout.state_file_run(info.name) == self.attempt  # a zombie's are not this run's to delete
                if ours and world.state_written_at.get(info.path, aborted) < aborted:
                    raise world.broke(f"run {self.number}: aborted savepoint {savepoint} left {info.name} behind")

    def kill(self) -> None:
        """SIGKILL of the driver: nothing more of this run happens, its executors go too."""
        if not self.alive:
            return
        self.world.note(f"run {self.number}: driver killed")
        self.alive = False
        for subtask in list(self.subtasks.values()):
            subtask.stop()
        self.world.next_run()

    # ---- faults ------------------------------------------------------------------------------------
    def schedule_faults(self) -> None:
        world = self.world

        def maybe() -> None:
            if not self.alive or world.finished:
                return
            profile = world.profile
            if world.chance(profile.p_outage * 20):
                world.outage_until = world.now + world.rng.randint(100, 3_000)
                world.note(f"storage outage until {world.outage_until} ms")
            if world.chance(profile.p_kill_driver * 20):
                self.kill()
                return
            if world.chance(profile.p_takeover * 20):
                world.note(f"run {self.number}: another run takes over while this one still runs")
                world.start_run("latest")
            if world.chance(profile.p_savepoint * 20) and self.loop is not None:
                try:
                    savepoint, actions = self.loop.coordinator.trigger_savepoint()
                except CheckpointFailed:
                    pass
                else:
                    self.savepoints.append(savepoint)
                    self.execute(actions)
            if self.alive:
                world.after(world.rng.randint(50, 250), maybe)

        world.after(world.rng.randint(50, 250), maybe)

    # ---- Spark ---------------------------------------------------------------------------------------
    def spawn(self, index: int, attempt: int) -> None:
        self.task_attempts[index] += 1
        subtask = SimSubtask(self, index, attempt)
        self.subtasks[index] = subtask
        self.world.after(self.world.rng.randint(1, 30), subtask.start)

    def task_failed(self, index: int, attempt: int, error: str) -> None:
        """Spark retries a failed task, up to its limit; past it the Spark job fails."""
        if not self.alive:
            return
        if self.task_attempts[index] >= MAX_TASK_ATTEMPTS:
            self.world.after(5, lambda: self.handle(("spark_ended", RuntimeError(f"task {index} failed: {error}"))))
            return
        self.world.after(self.world.rng.randint(5, 200), lambda: self.alive and self.spawn(index, attempt + 1))


class SimSubtask:
    """One Spark task attempt running a subtask: the real SubtaskRuntime's barrier,
    restore and message handling, with reading and the Spark task around it simulated."""

    def __init__(self, run: DriverRun, index: int, attempt: int):
        self.run = run
        self.world = run.world
        self.index = index
        self.attempt = attempt
        self.conn = Connection(self.world, self)
        self.alive = True
        self.hung = False
        self.started = False
        self.eoi_sent = False
        self.reconnecting = False
        #: a batch read and not yet written (index, split, state, start, end): barriers
        #: meanwhile are cut before it
        self.in_flight: tuple[int, Split, Any, int, int] | None = None
        #: when this attempt last sent Register
        self.registered_at = 0
        context = SubtaskContext(
            JOB_ID,
            PIPELINE_ID,
            run.job.to_json(),
            run.splits,
            ("sim", 0),
            "t" * 32,
            storage=self.world.storage(self),
            run_attempt=run.attempt,
            dealt=run.enumerator is not None,
        )
        rt = self.rt = SubtaskRuntime(context, index, attempt)
        rt._client = SimClient(self)
        rt._async = AsyncThread(self.world, rt)
        self.mine = share_of(list(run.splits), rt.parallelism, index)

    def __repr__(self) -> str:
        return f"<subtask {self.index} attempt {self.attempt} of run {self.run.number}>"

    def start(self) -> None:
        if not self.alive:
            return
        self.registered_at = self.world.now
        try:
            self.rt._send(Register(self.index, self.attempt))
        except ConnectionError:
            return

    def receive(self, raw: Any) -> None:
        if not self.alive or self.hung:
            return
        self.rt._on_message(raw)
        if not self.started and self.rt._restore_event.is_set():
            self.started = True
            self.restore()

    def restore(self) -> None:
        rt = self.rt
        try:
            states = rt._load_states(rt._restore)
        except Violation:
            raise
        except Exception as err:  # the task fails, as in SubtaskRuntime.run
            self.fail(f"restore failed: {err}")
            return
        # As SubtaskRuntime._run_attempt: the previous registration's sink goes first
        rt._release_connectors()
        rt._sink = SubtaskSink(self.run.sink, self.world, self)
        rt._requested, rt._booked = False, []  # as SubtaskRuntime._run_attempt
        rt._has_read, rt._grouped = False, False  # as SubtaskRuntime._run_attempt
        rt._cuts_in_flight = self.world.cuts_in_flight  # the simulated job has no stateful transform
        self.in_flight = None
        try:
            if rt.ctx.dealt:  # as SubtaskRuntime._run_attempt: what the restored state holds
                self.mine = rt._restored_dealt(states, rt._restore.shared, "restore")
            rt._book = book = SplitBook.restored(self.mine, states, len(self.run.splits), "restore", dealt=rt.ctx.dealt)
        except Violation:
            raise
        except Exception as err:  # as in SubtaskRuntime.run
            self.fail(f"restore failed: {err}")
            return
        self.world.note(
            f"{self!r} restored from {rt._restore.checkpoint_id}: "
            f"{ {k: v.position for k, v in book.states.items()} }, finished runs {book.finished.runs}"
        )
        if self.world.profile.big_state and self.mine and not book.is_finished(*self.mine[0]):
            book.state_of(self.mine[0][1]).operators.setdefault("0", {})["pad"] = "x" * 5_000
        rt._writer = rt._new_writer(rt._restore.checkpoint_id or 0)
        self.eoi_sent = False  # every registration reads its splits to their end again
        self.world.after(self.world.rng.randint(1, 20), self.step)

    def step(self) -> None:
        if not self.alive or self.hung:
            return
        world, rt = self.world, self.rt
        if self.in_flight is not None:  # the processing thread still waits to write it
            world.after(1, self.step)
            return
        profile = world.profile
        if world.chance(profile.p_kill_subtask):
            self.kill()
            return
        if world.chance(profile.p_hang_subtask):
            self.hang()
            return
        if world.chance(profile.p_reconnect) and not self.reconnecting:
            self.drop_connection()
        try:
            if rt.ctx.dealt and (rt._assigned or rt._booked) and not rt._restart:
                # SubtaskRuntime._read_splits' order: dealt splits are booked at the top
                # of the loop, the barriers waiting then taken in _process_batch
                self.mine.extend(rt._take_assigned())
            if rt._barrier_pending:
                rt._take_barriers()
            rt._check()
        except SubtaskRestart:
            # SubtaskRuntime.run: the channel was re-established; restart from the state
            # the coordinator sends for the new registration
            rt._restart = False
            self.started = False
            if rt._restore_event.is_set():
                self.started = True
                self.restore()
            return
        except Violation:
            raise
        except Exception as err:  # the task fails, as run() reports it
            self.fail(f"{type(err).__name__}: {err}")
            return
        if rt._finish_id is not None:
            self.stop()
            return
        self.read_batch()
        delay = world.rng.randint(5, 25)
        if self.in_flight is not None:  # written before the next step, as the loop does
            world.after(world.flight_rng.randint(1, delay - 1), self.land_batch)
        world.after(delay, self.step)

    def read_batch(self) -> None:
        """One batch of the first split not finished, as ``SubtaskRuntime._read_splits``
        reads one split at a time: with dealt splits, the next ones are asked for once
        those dealt are read, and the input ends when the driver has none left."""
        rt = self.rt
        dealt = rt.ctx.dealt
        for index, split in self.mine:
            if rt._book.is_finished(index, split):
                continue
            state = rt._book.state_of(split)
            start = state.position if state.position is not None else split.spec["start"]
            end = min(start + self.world.profile.batch, split.spec["end"])
            in_flight = rt._open_window()  # as SubtaskRuntime._read_and_route
            rt._has_read = True
            if in_flight:
                self.in_flight = (index, split, state, start, end)
            else:
                self.write_batch(index, split, state, start, end)
            return
        if dealt and not rt._no_more:
            self.ask_for_split()
            return
        if not self.eoi_sent:
            self.eoi_sent = True
            self.send(EndOfInput(self.index, self.attempt))

    def land_batch(self) -> None:
        """The batch in flight is transformed: the window closes and it is written."""
        if self.in_flight is None or not self.alive or self.hung:
            return
        if self.rt._cut.locked():
            # A take in flight is under way (its PREPARE lets the world run meanwhile):
            # the processing thread waits for it at _close_window
            self.world.after(1, self.land_batch)
            return
        batch, self.in_flight = self.in_flight, None
        self.rt._close_window()
        self.write_batch(*batch)

    def write_batch(self, index: int, split: Split, state: Any, start: int, end: int) -> None:
        rt = self.rt
        rt._write_batch([(0, pa.record_batch([pa.array(range(start, end), pa.int64())], names=["id"]))], state, end)
        if end >= split.spec["end"]:
            rt._book.finish(index, split, end)
            if rt.ctx.dealt:  # the book forgets a dealt split once it is finished
                self.mine.remove((index, split))

    def ask_for_split(self) -> None:
        rt = self.rt
        if not rt._requested and not rt._no_more:
            rt._requested = True
            self.send(RequestSplit(self.index, self.attempt))

    def send(self, message: Any) -> None:
        try:
            self.rt._send(message)
        except ConnectionError:
            pass

    def drop_connection(self) -> None:
        """The connection drops while the worker lives: the client reconnects a little
        later and re-registers (the real ``_on_reconnect``); the driver aborts what was
        pending and answers with the latest completed checkpoint."""
        self.world.note(f"{self!r}: control connection dropped")
        old = self.conn
        old.open = False
        self.run.world.at(old.later(towards_driver=True), lambda: self.run.handle(("disconnect", old)))
        self.reconnecting = True

        def reconnected() -> None:
            self.reconnecting = False
            if not self.alive or self.hung:
                return
            self.conn = Connection(self.world, self)
            self.registered_at = self.world.now
            # Re-registers on the new connection; the processing loop (still stepping)
            # then meets SubtaskRestart and waits for the new restore state.
            self.rt._on_reconnect()

        self.world.after(self.world.rng.randint(20, 400), reconnected)

    # ---- the ways a task attempt ends -------------------------------------------------------------
    def fail(self, error: str) -> None:
        self.send(TaskFailed(self.index, self.attempt, error[:2000]))
        self.close()
        self.run.task_failed(self.index, self.attempt, error)

    def kill(self) -> None:
        """The worker is SIGKILLed: the driver sees the connection drop; Spark retries."""
        self.world.note(f"{self!r} killed")
        self.close()
        self.run.task_failed(self.index, self.attempt, "worker killed")

    def hang(self) -> None:
        """Frozen with its channel gone (a worker stalled past the reconnects): it neither
        runs nor ends, and Spark, which sees a running task, does not retry it."""
        self.world.note(f"{self!r} hangs with its channel gone")
        self.hung = True
        self.close()

    def stop(self) -> None:
        self.alive = False
        self.conn.open = False

    def close(self) -> None:
        if not self.hung:
            self.alive = False
        if not self.conn.open:
            return
        self.conn.open = False
        run = self.run
        conn = self.conn
        self.world.at(conn.later(towards_driver=True), lambda: run.handle(("disconnect", conn)))


def simulate(seed: int) -> World:
    """Run one seed; raise ``Violation`` (naming the seed and the recent trace) on a broken
    invariant. The memory store is dropped afterwards."""
    world = World(seed)
    try:
        world.run()
    except Violation as err:
        trace = "\n".join(world.trace[-40:])
        raise Violation(f"seed {seed}: {err}\nprofile: {world.profile}\nlast events:\n{trace}") from None
    finally:
        with MemoryFileSystem._lock:
            MemoryFileSystem._stores.pop(world.store_name, None)
    return world
