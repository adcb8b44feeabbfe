"""``Kafka`` sink: ``semantics: AT_LEAST_ONCE`` (idempotent producer, flushed at every
barrier) or ``EXACTLY_ONCE`` (a transaction per epoch, committed after the checkpoint).

Options (SeaTunnel's names): ``bootstrap.servers``, ``topic``, ``format`` (``json``: each row
as a JSON object; ``text``: the columns joined by ``field_delimiter``), ``partition_key_fields``
(the record key: those columns, in the same format, so equal keys land in the same
partition), ``partition`` (a fixed partition instead), ``kafka.config`` (librdkafka
properties), ``semantics`` and ``transaction_prefix``.

Rows are encoded to record values in bulk by DuckDB (``to_json`` over the batch), not row
by row in Python. At a barrier, ``prepare_commit`` waits until the broker acknowledged
every record of the epoch (``acks=all``, idempotent producer: no duplicates from the
producer's own retries).

AT_LEAST_ONCE: a completed checkpoint means its rows are in Kafka. A restore replays the
epochs after the restored checkpoint: rows written after it are written again.

EXACTLY_ONCE, the two phases (Flink's ``KafkaSink`` design):

1. Each epoch of each subtask writes in its own transaction, from a producer whose
   ``transactional.id`` is ``<transaction_prefix>-<subtask>-<checkpoint the epoch
   follows>``. Starting it fences every older producer of that id: the broker aborts the
   transaction a crashed run left open under the same name (the epoch it held is being
   read again). The first epoch of an attempt also fences the ids of the epochs that
   followed, as far as they were used (``_fence_lingering``).
2. ``prepare_commit`` flushes and returns ``(transactional.id, producer id, epoch)``: the
   transaction stays open, invisible to ``read_committed`` readers, and its coordinates go
   into the checkpoint.
3. The driver's committer ends it with ``EndTxn`` after the checkpoint completed
   (``transactions.py``); a restore commits the restored checkpoint's transactions again,
   which the broker answers with success if they were committed already.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any, Iterable, Mapping

import pyarrow as pa

from ....errors import ConfigError, ConnectorError
from ..api import JsonValue, Sink, SinkCommitter, SinkWriter
from ..batch_sql import BatchQuery
from ..options import Options, option_key
from .client import KafkaTarget, reason
from .transactions import TransactionCoordinators, commit_info, parse_commit_info

SEMANTICS = ("non", "at_least_once", "exactly_once")
_ROWS = "kafka_rows"
#: seconds prepare_commit waits for the broker's acknowledgements before failing the checkpoint
FLUSH_TIMEOUT_S = 60.0
#: a prepared transaction must outlive the checkpoint, its commit and a driver restart:
#: the brokers' default ceiling (transaction.max.timeout.ms, 15 min) unless kafka.config says
DEFAULT_TRANSACTION_TIMEOUT_MS = 900_000
#: how often librdkafka reports its statistics, the only place it tells its producer id and
#: epoch; a transactional producer lives for one epoch
_STATS_INTERVAL_MS = 10
_KNOWN = {"bootstrap.servers", "topic", "format", "field_delimiter", "partition_key_fields", "partition",
          "kafka.config", "semantics", "transaction_prefix", "connection_check_timeout_sec"}


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class KafkaSink(Sink):
    plugin_name = "Kafka"

    def __init__(self, options: Mapping[str, Any]):
        super().__init__(options)
        opts = Options(self.plugin_name, options, known=_KNOWN)
        self.target = KafkaTarget(opts)
        self.topic: str = opts.str("topic")
        self.format: str = opts.str("format", "json", choices=("json", "text"))
        self.delimiter: str = opts.str("field_delimiter", ",")
        self.key_fields: list[str] = opts.str_list("partition_key_fields") if opts.has("partition_key_fields") else []
        self.partition: int | None = opts.int("partition", None, minimum=0)
        self.semantics: str = opts.str("semantics", "at_least_once", choices=SEMANTICS)
        self.transaction_prefix: str | None = opts.str("transaction_prefix", None)
        if "transactional.id" in self.target.config:
            raise ConfigError("kafka.config", "transactional.id is chosen by the sink per subtask and epoch; "
                                              "set transaction_prefix instead")
        self._encoders: dict[tuple[str, ...], BatchQuery] = {}
        self._shared: _Producing | None = None  # AT_LEAST_ONCE: one producer for every epoch
        self._fenced_after_restore = False

    @property
    def exactly_once(self) -> bool:
        return self.semantics == "exactly_once"

    def describe(self) -> str:
        return f"topic {self.topic!r} at {self.target.describe()}"

    def preflight(self) -> None:
        from .client import metadata

        consumer = self.target.consumer(**{"group.id": "seatunnel-ckpt-preflight"})
        try:
            topics = metadata(consumer, self.target).topics
        finally:
            consumer.close()
        if self.topic not in topics or topics[self.topic].error is not None:
            raise ConfigError(option_key(self, "topic"), f"no topic {self.topic!r} at {self.target.describe()}")
        if self.partition is not None and self.partition not in topics[self.topic].partitions:
            raise ConfigError(option_key(self, "partition"), f"{self.describe()} has no partition {self.partition}")

    # ---- encoding -------------------------------------------------------------------------------
    def _expression(self, columns: Iterable[str]) -> str:
        names = list(columns)
        if self.format == "json":
            return f"to_json(struct_pack({', '.join(f'{_ident(n)} := {_ident(n)}' for n in names)}))"
        parts = ", ".join(f"coalesce(CAST({_ident(n)} AS VARCHAR), '')" for n in names)
        return f"concat_ws('{self.delimiter.replace(chr(39), chr(39) * 2)}', {parts})"

    def encode(self, batch: pa.RecordBatch) -> tuple[list[str], list[str] | None]:
        """The batch's record values (and keys), encoded by one DuckDB query per batch."""
        names = tuple(batch.schema.names)
        missing = [f for f in self.key_fields if f not in names]
        if missing:
            raise ConfigError(option_key(self, "partition_key_fields"), f"no column {missing[0]!r} in the batch "
                                                                         f"(columns: {list(names)})")
        encoder = self._encoders.get(names)
        if encoder is None:
            key = f", {self._expression(self.key_fields)} AS k" if self.key_fields else ""
            encoder = BatchQuery(f"SELECT {self._expression(names)} AS v{key} FROM {_ROWS}", "format")
            self._encoders[names] = encoder
        encoded = encoder.run(batch, option_key(self, "format"))
        if encoded is None:
            return [], None
        keys = encoded.column("k").to_pylist() if self.key_fields else None
        return encoded.column("v").to_pylist(), keys

    # ---- producing ------------------------------------------------------------------------------
    def producer_config(self, **settings: Any) -> dict[str, Any]:
        return self.target.client_config(**{"enable.idempotence": True, "acks": "all", "linger.ms": 5, **settings})

    def shared_producer(self) -> "_Producing":
        if self._shared is None:
            self._shared = _Producing(self, self.producer_config())
        return self._shared

    def transactional_id(self, job_id: str, subtask: int, after_checkpoint_id: int) -> str:
        return f"{self.transaction_prefix or 'seatunnel-ckpt-' + job_id}-{subtask}-{after_checkpoint_id}"

    def fence_lingering(self, job_id: str, subtask: int, after_checkpoint_id: int, timeout_ms: int) -> int:
        """Once per attempt, before its first transaction: a run that died may have left
        transactions open under the ids of the epochs after the restored checkpoint (they
        were never committed, their rows are read again). Claiming each id aborts its
        transaction at once instead of when it times out, which would hold back every
        ``read_committed`` reader of the topic until then. Ids are tried upwards until
        one was never used; an id skipped because its checkpoint never reached this
        subtask stays open until its timeout. Returns how many ids were fenced."""
        if self._fenced_after_restore:
            return 0
        self._fenced_after_restore = True
        coordinators = TransactionCoordinators(self.target)
        fenced = 0
        try:
            for later in range(after_checkpoint_id + 1, after_checkpoint_id + 1 + MAX_LINGERING_PROBES):
                if coordinators.fence(self.transactional_id(job_id, subtask, later), timeout_ms) == 0:
                    break
                fenced += 1
        finally:
            coordinators.close()
        return fenced

    def create_writer(self, job_id: str, subtask: int, attempt: int) -> SinkWriter:
        if self.exactly_once:
            return TransactionalWriter(self, job_id, subtask)
        return KafkaSinkWriter(self)

    def create_committer(self, job_id: str) -> SinkCommitter:
        if self.exactly_once:
            return TransactionCommitter(self.target)
        return _NothingToCommit()

    def close(self) -> None:
        if self._shared is not None:
            self._shared.flush()
            self._shared = None


#: how many ids after the restored checkpoint ``fence_lingering`` tries at most
MAX_LINGERING_PROBES = 100


class _Producing:
    """A librdkafka producer and the delivery failures its callbacks reported."""

    def __init__(self, sink: KafkaSink, config: Mapping[str, Any]):
        from confluent_kafka import KafkaException, Producer

        self.sink = sink
        self._lock = threading.Lock()
        self._failure: str | None = None
        try:
            self.producer = Producer(dict(config))
        except (KafkaException, ValueError, TypeError) as err:
            raise ConfigError(option_key(sink, "kafka.config"),
                              f"librdkafka refused the configuration: {reason(err)}") from None

    def delivered(self, err: Any, _message: Any) -> None:
        if err is not None:
            with self._lock:
                self._failure = self._failure or reason(err)

    def check_deliveries(self) -> None:
        with self._lock:
            failure, self._failure = self._failure, None
        if failure is not None:
            raise ConnectorError(f"Kafka sink: a record to {self.sink.describe()} was not delivered: {failure}")

    def write(self, batch: pa.RecordBatch) -> None:
        sink, producer = self.sink, self.producer
        self.check_deliveries()
        values, keys = sink.encode(batch)
        extra = {"partition": sink.partition} if sink.partition is not None else {}
        for index, value in enumerate(values):
            key = keys[index] if keys is not None else None
            while True:
                try:
                    producer.produce(sink.topic, value, key, on_delivery=self.delivered, **extra)
                    break
                except BufferError:  # the local queue is full: let deliveries drain it
                    producer.poll(0.05)
        producer.poll(0)

    def flush(self) -> None:
        """Wait until the broker acknowledged every record produced so far."""
        left = self.producer.flush(FLUSH_TIMEOUT_S)
        if left:
            raise ConnectorError(f"Kafka sink: {left} records to {self.sink.describe()} not acknowledged "
                                 f"within {FLUSH_TIMEOUT_S:g} s")
        self.check_deliveries()


class KafkaSinkWriter(SinkWriter):
    """AT_LEAST_ONCE: the sink's one producer, flushed at every barrier."""

    def __init__(self, sink: KafkaSink):
        self.sink = sink

    def write(self, batch: pa.RecordBatch) -> None:
        self.sink.shared_producer().write(batch)

    def prepare_commit(self, checkpoint_id: int) -> JsonValue:
        if self.sink._shared is not None:
            self.sink._shared.flush()
        return None


class TransactionalWriter(SinkWriter):
    """EXACTLY_ONCE: one epoch, one transactional producer (module docstring)."""

    def __init__(self, sink: KafkaSink, job_id: str, subtask: int):
        self.sink = sink
        self.job_id = job_id
        self.subtask = subtask
        self.after_checkpoint_id = 0
        self._producing: _Producing | None = None
        self._coordinates: tuple[int, int] | None = None  # producer id, epoch
        self._prepared = False

    @property
    def transactional_id(self) -> str:
        return self.sink.transactional_id(self.job_id, self.subtask, self.after_checkpoint_id)

    def open(self, after_checkpoint_id: int) -> None:
        self.after_checkpoint_id = after_checkpoint_id

    def _begin(self) -> _Producing:
        from confluent_kafka import KafkaException

        sink = self.sink
        coordinates: dict[str, int] = {}

        def statistics(report: str) -> None:
            if not coordinates:
                eos = json.loads(report).get("eos") or {}
                if eos.get("idemp_state") == "Assigned" and eos.get("producer_id", -1) >= 0:
                    coordinates.update(producer_id=eos["producer_id"], producer_epoch=eos["producer_epoch"])

        config = sink.producer_config(**{"transactional.id": self.transactional_id,
                                         "transaction.timeout.ms": DEFAULT_TRANSACTION_TIMEOUT_MS,
                                         "statistics.interval.ms": _STATS_INTERVAL_MS})
        config["stats_cb"] = statistics
        timeout_ms = int(config["transaction.timeout.ms"])
        sink.fence_lingering(self.job_id, self.subtask, self.after_checkpoint_id, timeout_ms)
        producing = _Producing(sink, config)
        producer = producing.producer
        try:
            producer.init_transactions(sink.target.connect_timeout_s)  # fences this id's older producers
            deadline = time.monotonic() + sink.target.connect_timeout_s
            while not coordinates and time.monotonic() < deadline:
                producer.poll(_STATS_INTERVAL_MS / 1000)
            if not coordinates:
                raise ConnectorError(f"Kafka sink: librdkafka reported no producer id for transaction "
                                     f"{self.transactional_id!r} within {sink.target.connect_timeout_s:g} s")
            producer.begin_transaction()
        except KafkaException as err:
            raise ConnectorError(f"Kafka sink: starting transaction {self.transactional_id!r} at "
                                 f"{sink.describe()} failed: {reason(err)}") from None
        self._coordinates = (coordinates["producer_id"], coordinates["producer_epoch"])
        return producing

    def write(self, batch: pa.RecordBatch) -> None:
        if self._producing is None:
            self._producing = self._begin()
        self._producing.write(batch)

    def prepare_commit(self, checkpoint_id: int) -> JsonValue:
        if self._producing is None:
            return None  # nothing written this epoch: no transaction to commit
        self._producing.flush()
        self._prepared = True
        assert self._coordinates is not None
        return commit_info(self.transactional_id, *self._coordinates)

    def close(self) -> None:
        """A prepared transaction is left open for the committer; one never prepared (the
        attempt ended or went stale inside the epoch) is aborted now."""
        producing, self._producing = self._producing, None
        if producing is not None and not self._prepared:
            try:
                producing.producer.abort_transaction(FLUSH_TIMEOUT_S)
            except Exception:  # noqa: BLE001 - the next producer of this id fences it anyway
                pass


class TransactionCommitter(SinkCommitter):
    """Commits the prepared transactions named in a completed checkpoint (driver side)."""

    def __init__(self, target: KafkaTarget):
        self.coordinators = TransactionCoordinators(target)

    def commit(self, commit_infos: Iterable[JsonValue]) -> None:
        for info in commit_infos:
            if isinstance(info, Mapping):
                self.coordinators.end(*parse_commit_info(info), commit=True)

    def cleanup(self, keep: Iterable[JsonValue]) -> None:
        """Transactions no checkpoint kept were aborted by their writer or are fenced by the
        next attempt (``fence_lingering``); there is no staged output to remove."""
        self.coordinators.close()

    def rollback(self, after_checkpoint_id: int) -> None:
        pass  # committed transactions cannot be un-published: see docs/kafka.md (--restore ID)


class _NothingToCommit(SinkCommitter):
    """At least once: a record is published when the broker acknowledges it."""

    def commit(self, commit_infos: Iterable[JsonValue]) -> None:
        pass

    def cleanup(self, keep: Iterable[JsonValue]) -> None:
        pass

    def rollback(self, after_checkpoint_id: int) -> None:
        pass  # published records stay; the replayed epochs write theirs again (at least once)
