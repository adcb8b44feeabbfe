"""The Kafka sink's EXACTLY_ONCE semantics: a transaction per epoch and subtask, prepared
at the barrier, committed by the driver after the checkpoint (Flink's ``KafkaSink`` design).

Each epoch of each subtask writes from its own transactional producer
(:func:`transactional_id`: prefix, job, sink tag, subtask, checkpoint, run attempt; the
run attempt keeps a zombie driver's producers from fencing the claimant's).
``prepare_commit`` flushes and returns ``(transactional.id, producer id, epoch)``: the
transaction stays open, invisible to ``read_committed`` readers, and its coordinates go
into the checkpoint. ``TransactionCommitter`` ends it after the checkpoint completed
(``transactions.py``), again on a restore, which the broker answers with success.

docs/kafka.md, "EXACTLY_ONCE"; lingering ids: :func:`fence_lingering`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import pyarrow as pa

from ...errors import ConfigError, ConnectorError
from ..api import JsonValue, SinkCommitter, SinkWriter
from .client import reason
from .producing import Producing, ProducingSink
from .transactions import TransactionCoordinators, audit, commit_info, parse_commit_info

log = logging.getLogger(__name__)

#: a prepared transaction must outlive the checkpoint, its commit and a driver restart:
#: the brokers' default ceiling (transaction.max.timeout.ms, 15 min) unless kafka.config says
DEFAULT_TRANSACTION_TIMEOUT_MS = 900_000
#: how often librdkafka reports its statistics, the only place it tells its producer id and
#: epoch. A producer lives for one epoch and is started ahead, off the hot path, so the wait
#: is cheap; reports of an idle producer queue until its next poll (ten a second, bounded
#: by the checkpoint interval)
STATS_INTERVAL_MS = 100
#: how many ids after the restored checkpoint ``fence_lingering`` tries at most, per run
MAX_LINGERING_PROBES = 100
#: how many runs before its own ``fence_lingering`` probes (each costs a probe or more):
#: a run's leftovers escape only when this many later runs in a row never started the
#: subtask, all within the transaction timeout
LINGERING_RUNS = 5


def transactional_id(prefix: str, subtask: int, after_checkpoint_id: int, run_attempt: int = 0) -> str:
    """``<prefix>-<subtask>-<after>-r<run attempt>``. Run attempt 0 (a sink the engine gave
    none) has the form every id of the releases before had, without ``-r``: those end in
    digits, these in ``r`` and digits, so the two forms never name the same id."""
    name = f"{prefix}-{subtask}-{after_checkpoint_id}"
    return f"{name}-r{run_attempt}" if run_attempt > 0 else name


def id_prefix(transaction_prefix: str | None, job_id: str, instance: str | None = None) -> str:
    """The job id is always part of it: two jobs given the same ``transaction_prefix``
    would otherwise fence (abort) each other's prepared transactions. So is the sink's
    place in the job (``Sink.instance``) for every sink but the first: two sinks of one job
    sharing ids fence each other the same way. The first (or only) one keeps the ids
    earlier releases gave, so their checkpoints restore as before."""
    prefix = f"{transaction_prefix or 'seatunnel-ckpt'}-{job_id}"
    if instance is None:
        return prefix
    return f"{prefix}-{hashlib.sha256(instance.encode('utf-8')).hexdigest()[:8]}"


class Transaction:
    """A transactional producer, initialised, with the producer id and epoch it holds."""

    def __init__(self, name: str, producing: Producing, producer_id: int, producer_epoch: int):
        self.name = name
        self.producing = producing
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.begun = False

    def discard(self) -> None:
        """Drop the producer; a begun transaction is aborted (nothing of it may commit)."""
        if self.begun:
            try:
                self.producing.producer.abort_transaction(self.producing.sink.target.connect_timeout_s)
                audit("abort", self.name)
            except Exception:  # the next producer of this id fences it anyway
                pass


def start_transaction(sink: ProducingSink, name: str) -> Transaction:
    """A producer for ``name``, past ``init_transactions`` (which fences its older producers)."""
    from confluent_kafka import KafkaException

    coordinates: dict[str, int] = {}

    def statistics(report: str) -> None:
        if not coordinates:
            eos = json.loads(report).get("eos") or {}
            if eos.get("idemp_state") == "Assigned" and eos.get("producer_id", -1) >= 0:
                coordinates.update(producer_id=eos["producer_id"], producer_epoch=eos["producer_epoch"])

    config = sink.producer_config(
        **{"transaction.timeout.ms": sink.transaction_timeout_ms, "statistics.interval.ms": STATS_INTERVAL_MS}
    )
    config.update({"transactional.id": name, "stats_cb": statistics})
    producing = Producing(sink, config)
    timeout_s = sink.target.connect_timeout_s
    try:
        audit("start", name)
        producing.producer.init_transactions(timeout_s)
        deadline = time.monotonic() + timeout_s
        while not coordinates and time.monotonic() < deadline:
            producing.producer.poll(STATS_INTERVAL_MS / 1000)
    except KafkaException as err:
        raise ConnectorError(
            f"Kafka sink: starting transaction {name!r} at {sink.describe()} failed: {reason(err)}"
        ) from None
    if not coordinates:
        raise ConnectorError(
            f"Kafka sink: librdkafka reported no producer id for transaction {name!r} within {timeout_s:g} s"
        )
    return Transaction(name, producing, coordinates["producer_id"], coordinates["producer_epoch"])


def lingering_ranges(run_attempt: int, after_checkpoint_id: int) -> list[tuple[int, int]]:
    """Where ``fence_lingering`` probes: (run attempt, first checkpoint id) pairs, each
    probed upwards. Run attempt 0 stands for the ids without a run (older releases)."""
    if run_attempt <= 0:
        return [(0, after_checkpoint_id + 1)]
    older = range(run_attempt - 1, max(0, run_attempt - 1 - LINGERING_RUNS), -1)
    return [
        (run_attempt, after_checkpoint_id + 1),
        *((run, after_checkpoint_id) for run in older),
        (0, after_checkpoint_id),
    ]


def fence_lingering(sink: ProducingSink, prefix: str, subtask: int, after_checkpoint_id: int) -> int:
    """Before an attempt's first transaction: earlier attempts and runs may have left
    transactions open under the ids of epochs after the restored checkpoint (never
    committed: no run can complete a checkpoint newer than the one a later run restores,
    and their rows are read again). Claiming each id aborts its transaction now instead of
    when it times out, which would hold back every ``read_committed`` reader of its
    partitions until then. The rule (``lingering_ranges``), for subtask k of run N
    restoring checkpoint C:

    * run N's own ids after C (an earlier attempt of this subtask in this run; the first
      transaction, under the id after C, fences that one itself);
    * the ids from C up of the ``LINGERING_RUNS`` runs before N (N-1, N-2, ...): crashed
      runs, and zombies still running. Never a later run's: a zombie's subtasks never
      touch the run that claimed the job after it;
    * the ids from C up without a run, as the releases before named them.

    The restored checkpoint's own transactions belong to epochs before C and are never
    probed. In each range ids are tried upwards until one was never used (epoch 0); an id
    skipped because its checkpoint never reached the subtask leaves the ones after it open
    until their timeout. Returns how many ids were fenced."""
    return fence_ranges(sink, prefix, subtask, lingering_ranges(sink.run_attempt, after_checkpoint_id))


def older_run_ranges(run_attempt: int, after_checkpoint_id: int) -> list[tuple[int, int]]:
    """``lingering_ranges`` without the run's own: the ids its end-of-job sweep probes."""
    return lingering_ranges(run_attempt, after_checkpoint_id)[1:] if run_attempt > 0 else []


def fence_ranges(sink: ProducingSink, prefix: str, subtask: int, ranges: Sequence[tuple[int, int]]) -> int:
    """Claims the ids of ``ranges`` ((run attempt, first checkpoint id) pairs), each
    upwards until one was never used; returns how many were fenced."""
    coordinates = TransactionCoordinators(sink.target)
    timeout_ms = sink.transaction_timeout_ms
    fenced = 0
    try:
        for run, first in ranges:
            for later in range(first, first + MAX_LINGERING_PROBES):
                if coordinates.fence(transactional_id(prefix, subtask, later, run), timeout_ms) == 0:
                    break
                fenced += 1
    finally:
        coordinates.close()
    return fenced


def fence_listed(sink: ProducingSink, prefix: str, coordinators: TransactionCoordinators, keep: set[str]) -> int:
    """Claims every id the brokers list as open (``open_transactions``) that is this sink's
    (``prefix``, any subtask and checkpoint) and of this run or an earlier one, but those
    in ``keep``; returns how many. A later run's ids stay: a run that claimed the job
    after this one is the job's owner now. Brokers before Kafka 3.0 cannot list: none."""
    own = re.compile(rf"{re.escape(prefix)}-(\d+)-(\d+)(?:-r(\d+))?")
    listed = coordinators.open_transactions(f"{prefix}-")
    fenced = 0
    for name in sorted(listed or ()):
        match = own.fullmatch(name)
        if match is None or name in keep or int(match.group(3) or 0) > sink.run_attempt:
            continue
        coordinators.fence(name, sink.transaction_timeout_ms)
        fenced += 1
    return fenced


class ProducerPipeline:
    """One subtask attempt's transactional producers, each initialised one epoch ahead on a
    thread of its own, the attempt's lingering ids fenced first.

    A producer's ``init_transactions`` takes tens of milliseconds, so the next epoch's
    producer is initialised while the current epoch is written: the id the next epoch
    will most likely have is known (checkpoint ids go up by one), and a guess that turns
    out wrong costs one discarded producer."""

    def __init__(self, sink: ProducingSink, prefix: str, subtask: int):
        self.sink = sink
        self.prefix = prefix
        self.subtask = subtask
        self.run_attempt = sink.run_attempt  # set by the engine before any writer exists
        self._thread = ThreadPoolExecutor(1, thread_name_prefix=f"kafka-transactions-{subtask}")
        self._ahead: tuple[int, Future[Transaction]] | None = None
        #: the attempt's fencing of lingering ids: queued first, before any producer starts
        self._fencing: Future[int] | None = None

    def _start(self, after_checkpoint_id: int) -> Transaction:
        assert self._fencing is not None
        self._fencing.result()  # done (the thread runs in order); raises its failure
        return start_transaction(
            self.sink, transactional_id(self.prefix, self.subtask, after_checkpoint_id, self.run_attempt)
        )

    def wait_fenced(self) -> None:
        """Until what earlier attempts and runs left open after the restored checkpoint is
        fenced. An epoch that wrote nothing waits for it before its checkpoint is
        acknowledged: a later restore starts above those ids and would never fence them,
        and they would hold every read_committed reader back for transaction.timeout.ms."""
        if self._fencing is not None:
            self._fencing.result()

    def transaction_after(self, after_checkpoint_id: int) -> Future[Transaction]:
        """The producer for the epoch after ``after_checkpoint_id``; starts the next one's."""
        if self._fencing is None:  # the attempt's first epoch: after the restored checkpoint
            self._fencing = self._thread.submit(
                fence_lingering, self.sink, self.prefix, self.subtask, after_checkpoint_id
            )
        ahead = self._ahead
        if ahead is not None and ahead[0] == after_checkpoint_id and not _failed(ahead[1]):
            current = ahead[1]
        else:
            if self._ahead is not None:
                _discard_when_ready(self._ahead[1])
            current = self._thread.submit(self._start, after_checkpoint_id)
        self._ahead = (after_checkpoint_id + 1, self._thread.submit(self._start, after_checkpoint_id + 1))
        return current

    def close(self) -> None:
        """Returns at once: a start still queued is cancelled, one running is discarded
        when it ends (a broker that does not answer must not hold up the attempt's end)."""
        if self._ahead is not None:
            _discard_when_ready(self._ahead[1])
            self._ahead = None
        self._thread.shutdown(wait=False, cancel_futures=True)


def _failed(future: Future[Transaction]) -> bool:
    """A speculative start that failed (a broker blip) is retried for real, not reported."""
    return future.done() and not future.cancelled() and future.exception() is not None


def _discard_when_ready(future: Future[Transaction]) -> None:
    def discard(done: Future[Transaction]) -> None:
        if not done.cancelled() and done.exception() is None:
            done.result().discard()

    future.add_done_callback(discard)


class TransactionalWriter(SinkWriter):
    """One epoch of one subtask: one transaction (module docstring)."""

    def __init__(self, pipeline: ProducerPipeline):
        self.pipeline = pipeline
        self._pending: Future[Transaction] | None = None
        self._transaction: Transaction | None = None
        self._prepared = False

    def open(self, after_checkpoint_id: int) -> None:
        self._pending = self.pipeline.transaction_after(after_checkpoint_id)

    def _current(self) -> Transaction:
        if self._transaction is None:
            if self._pending is None:  # the id would be a guess, and could be a prepared one's
                raise RuntimeError("TransactionalWriter.write before open(after_checkpoint_id)")
            self._transaction = self._pending.result()  # raises the ConnectorError of a failed start
            self._transaction.producing.producer.poll(0)  # the statistics queued while it waited
            self._transaction.producing.producer.begin_transaction()
            self._transaction.begun = True
        return self._transaction

    def write(self, batch: pa.RecordBatch) -> None:
        self._current().producing.write(batch)

    def prepare_commit(self, checkpoint_id: int) -> JsonValue:
        transaction = self._transaction
        if transaction is None:
            self.pipeline.wait_fenced()  # see there
            return None  # nothing written this epoch: no transaction to commit
        transaction.producing.flush()
        audit("prepare", transaction.name)
        self._prepared = True
        return commit_info(
            transaction.name, transaction.producer_id, transaction.producer_epoch, checkpoint_id, self.pipeline.subtask
        )

    def close(self) -> None:
        """A prepared transaction is left open for the committer; one never prepared (the
        attempt ended or went stale inside the epoch) is aborted now."""
        transaction, self._transaction = self._transaction, None
        if transaction is not None and not self._prepared:
            transaction.discard()
        elif transaction is None and self._pending is not None:
            _discard_when_ready(self._pending)
        self._pending = None


class TransactionCommitter(SinkCommitter):
    """Commits the prepared transactions named in a completed checkpoint (driver side)."""

    def __init__(self, sink: ProducingSink, job_id: str, prefix: str):
        self.sink = sink
        self.job_id = job_id
        #: the writers' ``id_prefix``
        self.prefix = prefix
        self.coordinators = TransactionCoordinators(sink.target)
        #: the checkpoints whose transactions this committer committed (or tried to)
        self._committed: set[int] = set()
        #: the subtasks whose transactions it committed: whose ids the end-of-job sweep probes
        self._subtasks: set[int] = set()

    def commit(self, commit_infos: Iterable[JsonValue]) -> None:
        """Every transaction is tried, so one the broker lost does not leave the others of
        the checkpoint uncommitted; the failures are then raised together."""
        failures = []
        for info in commit_infos:
            if isinstance(info, Mapping):
                if isinstance(info.get("checkpoint_id"), int):  # infos of older releases have none
                    self._committed.add(info["checkpoint_id"])
                if isinstance(info.get("subtask"), int):
                    self._subtasks.add(info["subtask"])
                try:
                    self.coordinators.end(*parse_commit_info(info), commit=True)
                except ConnectorError as err:
                    failures.append(str(err))
        if failures:
            more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
            raise ConnectorError(failures[0] + more)

    def cleanup(self, keep: Iterable[JsonValue]) -> None:
        """On a restore, before any writer opens, and at the end of the job: a transaction
        of this sink that is still open and not in ``keep`` can never commit, so it is
        fenced (``fence_listed``) instead of holding every read_committed reader of its
        partitions back until transaction.timeout.ms. The writers' upward probes
        (``fence_lingering``) find most such ids; the listing also finds those below the
        restored checkpoint, which no probe reaches (an attempt that died before its first
        producer claimed its id again)."""
        kept = {str(i["transactional_id"]) for i in keep if isinstance(i, Mapping) and "transactional_id" in i}
        try:
            fenced = fence_listed(self.sink, self.prefix, self.coordinators, kept)
        except ConnectorError as err:  # what is left times out: slower readers, nothing lost
            log.warning("Kafka sink: could not fence the transactions earlier attempts left open: %s", err)
        else:
            if fenced:
                log.info("Kafka sink: fenced %d transactions earlier attempts left open", fenced)
        finally:
            self.coordinators.close()

    def job_finished(self, restored_checkpoint_id: int | None) -> None:
        """The end-of-job sweep: what the earlier runs' drivers, taken over while they still
        ran (zombies), opened after this run's writers fenced their ids at the start, the
        same ranges are claimed again, for every subtask this run committed for. A zombie
        stops within a second of noticing the takeover (engine/driver.py), but what it
        opened until then would otherwise hold back every read_committed reader of its
        partitions until transaction.timeout.ms, after this job reported success."""
        ranges = older_run_ranges(self.sink.run_attempt, restored_checkpoint_id or 0)
        if not ranges:
            return
        for subtask in sorted(self._subtasks):
            try:
                swept = fence_ranges(self.sink, self.prefix, subtask, ranges)
            except ConnectorError as err:  # the output is committed: what is left times out
                log.warning("Kafka sink: could not fence what earlier runs left open: %s", err)
                return
            if swept:
                log.info("Kafka sink: subtask %d: fenced %d transaction ids earlier runs used", subtask, swept)

    def check_rollback(self, after_checkpoint_id: int, newer_checkpoint_ids: Sequence[int]) -> None:
        """Refuse to go back behind completed checkpoints: their transactions were
        committed when they completed (or will be, when a run replays them), and a
        committed Kafka transaction cannot be taken back. To accept that their records
        are published a second time, the user deletes those checkpoints first."""
        newer = sorted({int(c) for c in newer_checkpoint_ids if int(c) > after_checkpoint_id})
        if not newer:
            return
        ids = ", ".join(map(str, newer))
        named = f"checkpoint {ids}" if len(newer) == 1 else f"checkpoints {ids}"
        restoring = f"checkpoint {after_checkpoint_id}" if after_checkpoint_id else "the start"
        delete = "it" if len(newer) == 1 else "them"
        which = f"--checkpoint {newer[0]}" + "".join(f", then --checkpoint {c}" for c in newer[1:])
        raise ConfigError(
            "--restore",
            f"{self.sink.describe()}: {named} of job {self.job_id}, newer than {restoring}, committed Kafka "
            f"transactions that cannot be un-published: restore the newest checkpoint instead (--restore latest), "
            f"or, to accept that the records of {named} are published a second time, delete {delete} first "
            f"(seatunnel-ckpt delete --job-id {self.job_id} --pipeline 1 {which}, with the run's --config) "
            f"and run again (docs/kafka.md)",
        )

    def rollback(self, after_checkpoint_id: int) -> None:
        """Nothing can be un-published: refuses (``check_rollback``) when this committer
        committed a checkpoint newer than ``after_checkpoint_id``."""
        self.check_rollback(after_checkpoint_id, sorted(self._committed))
