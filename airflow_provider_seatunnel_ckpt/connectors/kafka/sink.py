"""``Kafka`` sink: ``semantics: AT_LEAST_ONCE`` (idempotent producer, flushed at every
barrier) or ``EXACTLY_ONCE`` (a transaction per epoch, committed after the checkpoint).

Rows are encoded to record values in bulk by DuckDB (``to_json`` over the batch), not row
by row in Python; formats: :mod:`.avro_format`, :mod:`.change_formats`. At a barrier,
``prepare_commit`` waits until the broker acknowledged every record of the epoch
(``acks=all``). AT_LEAST_ONCE writes the epochs after a restored checkpoint again,
duplicates included, so it accepts any restore; EXACTLY_ONCE (``exactly_once.py``)
refuses a restore behind newer completed checkpoints, whose transactions cannot be
taken back.

Options: docs/options.md ("Kafka sink"); semantics: docs/kafka.md, "The `Kafka` sink".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from ...errors import ConfigError
from ...extras import require
from ...sql.batch_query import BatchQuery
from ..api import ROW_KIND, Dataset, JsonValue, Sink, SinkCommitter, SinkWriter
from ..datasets import kafka_datasets
from ..options import REQUIRED, Option, OptionTable, option_key
from .avro_format import AvroCodec
from .change_formats import SINK_FORMATS, encoding_sql
from .client import CONNECTION_OPTIONS, KafkaTarget
from .exactly_once import (
    DEFAULT_TRANSACTION_TIMEOUT_MS,
    ProducerPipeline,
    TransactionalWriter,
    TransactionCommitter,
    id_prefix,
)
from .producing import Producing
from .transactions import TRANSACTION_TIMEOUT

SEMANTICS = ("non", "at_least_once", "exactly_once")
_ROWS = "kafka_rows"
_OPTIONS = OptionTable(
    *CONNECTION_OPTIONS,
    Option("topic", "str", "the topic written", REQUIRED),
    Option("format", "str", "the records' format", "json", choices=("json", "text", "avro", *SINK_FORMATS)),
    Option("field_delimiter", "str", "text format: the delimiter between fields", ","),
    Option("partition_key_fields", "columns", "the columns whose values make the record's key"),
    Option("partition", "int", "the one partition written (default: by key, or the producer's choice)", minimum=0),
    Option("semantics", "str", "non, at_least_once or exactly_once (transactions)", "at_least_once", choices=SEMANTICS),
    Option("transaction_prefix", "str", "exactly_once: the prefix of the transactional ids"),
)


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class KafkaSink(Sink):
    plugin_name = "Kafka"
    OPTIONS = _OPTIONS

    def __init__(self, options: Mapping[str, Any]):
        super().__init__(options)
        opts = self.parse_options()
        self.target = KafkaTarget(opts)
        self.topic: str = opts["topic"]
        self.format: str = opts["format"]
        if self.format == "avro":
            require("avro", "format avro", "format")
        self._avro: dict[pa.Schema, AvroCodec] = {}
        if self.format in SINK_FORMATS:
            self.change_rows = "keep"  # each row's kind decides insert or delete
        self.delimiter: str = opts["field_delimiter"]
        self.key_fields: list[str] = opts["partition_key_fields"] or []
        self.partition: int | None = opts["partition"]
        self.semantics: str = opts["semantics"]
        self.transaction_prefix: str | None = opts["transaction_prefix"]
        if "transactional.id" in self.target.config:
            raise ConfigError(
                "kafka.config",
                "transactional.id is chosen by the sink per subtask and epoch; set transaction_prefix instead",
            )
        #: how long the brokers keep an epoch's transaction open (EXACTLY_ONCE), ms
        self.transaction_timeout_ms = self._transaction_timeout()
        self._encoders: dict[tuple[str, ...], BatchQuery] = {}
        self._shared: Producing | None = None  # AT_LEAST_ONCE: one producer for every epoch
        self._pipelines: dict[int, ProducerPipeline] = {}  # EXACTLY_ONCE: each subtask's transactional producers

    @property
    def exactly_once(self) -> bool:
        return self.semantics == "exactly_once"

    def describe(self) -> str:
        return f"topic {self.topic!r} at {self.target.describe()}"

    def _transaction_timeout(self) -> int:
        value = self.target.config.get(TRANSACTION_TIMEOUT, DEFAULT_TRANSACTION_TIMEOUT_MS)
        try:
            timeout_ms = int(str(value).strip())
        except ValueError:
            timeout_ms = 0
        if timeout_ms <= 0:
            raise ConfigError(f"kafka.config.{TRANSACTION_TIMEOUT}", f"expected milliseconds (> 0), got {value!r}")
        return timeout_ms

    def accepts_checkpointing(self, interval_ms: int, timeout_ms: int) -> None:
        """An epoch's transaction is open from its first record until the driver commits it
        after the checkpoint: up to the interval plus the checkpoint's timeout. A broker
        that aborts it first loses its records (the commit then fails loudly): refused here."""
        needed = interval_ms + timeout_ms
        if self.exactly_once and self.transaction_timeout_ms < needed:
            raise ConfigError(
                f"kafka.config.{TRANSACTION_TIMEOUT}",
                f"{self.transaction_timeout_ms} ms is shorter than an epoch's transaction stays open with "
                f"EXACTLY_ONCE: checkpoint.interval ({interval_ms} ms) + checkpoint.timeout ({timeout_ms} ms) = "
                f"{needed} ms, after which the broker would abort it before the driver commits it; raise it (the "
                f"default is {DEFAULT_TRANSACTION_TIMEOUT_MS}) or lower checkpoint.interval / checkpoint.timeout",
            )

    def datasets(self) -> list[Dataset]:
        return kafka_datasets(self.target.bootstrap_servers, [self.topic])

    def preflight(self) -> None:
        from .client import metadata

        topics = metadata(self.target.admin(), self.target).topics
        if self.topic not in topics or topics[self.topic].error is not None:
            raise ConfigError(option_key(self, "topic"), f"no topic {self.topic!r} at {self.target.describe()}")
        if self.partition is not None and self.partition not in topics[self.topic].partitions:
            raise ConfigError(option_key(self, "partition"), f"{self.describe()} has no partition {self.partition}")
        if self.exactly_once:
            from .transactions import TransactionCoordinators

            coordinators = TransactionCoordinators(self.target, request_timeout_s=self.target.connect_timeout_s)
            try:
                preflight_id = f"{self.transaction_prefix or 'seatunnel-ckpt'}-preflight"  # any id will do
                coordinators.check(preflight_id, self.transaction_timeout_ms)
            finally:
                coordinators.close()

    # ---- encoding -------------------------------------------------------------------------------
    def _expression(self, columns: Iterable[str], value: bool = False) -> str:
        names = [n for n in columns if n != ROW_KIND]
        row = f"struct_pack({', '.join(f'{_ident(n)} := {_ident(n)}' for n in names)})"
        if value and self.format in SINK_FORMATS:
            return encoding_sql(self.format, row, _ident(ROW_KIND) if ROW_KIND in columns else None)
        if self.format != "text":
            return f"to_json({row})"
        parts = ", ".join(f"coalesce(CAST({_ident(n)} AS VARCHAR), '')" for n in names)
        return f"concat_ws('{self.delimiter.replace(chr(39), chr(39) * 2)}', {parts})"

    def encode(self, batch: pa.RecordBatch) -> tuple[list[str] | list[bytes], list[str] | None]:
        """The batch's record values (and keys), encoded by one DuckDB query per batch
        (avro: by fastavro, row by row)."""
        names = tuple(batch.schema.names)
        missing = [f for f in self.key_fields if f not in names]
        if missing:
            raise ConfigError(
                option_key(self, "partition_key_fields"),
                f"no column {missing[0]!r} in the batch (columns: {list(names)})",
            )
        if self.format == "avro":
            return self._encode_avro(batch)
        encoder = self._encoders.get(names)
        if encoder is None:
            key = f", {self._expression(self.key_fields)} AS k" if self.key_fields else ""
            encoder = BatchQuery(f"SELECT {self._expression(names, value=True)} AS v{key} FROM {_ROWS}", "format")
            self._encoders[names] = encoder
        encoded = encoder.run(batch, option_key(self, "format"))
        if encoded is None:
            return [], None
        keys = encoded.column("k").to_pylist() if self.key_fields else None
        return encoded.column("v").to_pylist(), keys

    def _encode_avro(self, batch: pa.RecordBatch) -> tuple[list[bytes], list[str] | None]:
        codec = self._avro.get(batch.schema)
        if codec is None:
            codec = self._avro[batch.schema] = AvroCodec(batch.schema, option_key(self, "format"))
        keys = None
        if self.key_fields:  # the key is json, as for the other formats
            key_batch = batch.select(self.key_fields)
            keys = self._key_encoder().run(key_batch, option_key(self, "partition_key_fields")).column("k").to_pylist()
        return codec.encode(batch), keys

    def _key_encoder(self) -> BatchQuery:
        names = tuple(self.key_fields)
        if names not in self._encoders:
            self._encoders[names] = BatchQuery(
                f"SELECT {self._expression(names)} AS k FROM {_ROWS}", "partition_key_fields"
            )
        return self._encoders[names]

    # ---- producing ------------------------------------------------------------------------------
    def producer_config(self, **settings: Any) -> dict[str, Any]:
        return self.target.client_config(**{"enable.idempotence": True, "acks": "all", "linger.ms": 5, **settings})

    def shared_producer(self) -> Producing:
        if self._shared is None:
            self._shared = Producing(self, self.producer_config())
        return self._shared

    def create_writer(self, job_id: str, subtask: int, attempt: int) -> SinkWriter:
        if not self.exactly_once:
            return KafkaSinkWriter(self)
        pipeline = self._pipelines.get(subtask)
        if pipeline is None:
            prefix = id_prefix(self.transaction_prefix, job_id, self.instance)
            pipeline = self._pipelines[subtask] = ProducerPipeline(self, prefix, subtask)
        return TransactionalWriter(pipeline)

    def create_committer(self, job_id: str) -> SinkCommitter:
        if not self.exactly_once:
            return _NothingToCommit()
        return TransactionCommitter(self, job_id, id_prefix(self.transaction_prefix, job_id, self.instance))

    def close(self) -> None:
        if self._shared is not None:
            self._shared.flush()
            self._shared = None
        for pipeline in self._pipelines.values():
            pipeline.close()
        self._pipelines.clear()


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


class _NothingToCommit(SinkCommitter):
    """At least once: a record is published when the broker acknowledges it. Duplicates
    after a restore are this sink's documented contract (docs/kafka.md), so it accepts
    every restore, also one behind newer completed checkpoints."""

    def commit(self, commit_infos: Iterable[JsonValue]) -> None:
        pass

    def cleanup(self, keep: Iterable[JsonValue]) -> None:
        pass

    def check_rollback(self, after_checkpoint_id: int, newer_checkpoint_ids: Sequence[int]) -> None:
        """Accepts: the newer checkpoints' records stay in the topic and the replayed
        epochs write them again (at least once)."""

    def rollback(self, after_checkpoint_id: int) -> None:
        pass  # published records stay; the replayed epochs write theirs again (at least once)
