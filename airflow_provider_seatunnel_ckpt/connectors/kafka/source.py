"""``Kafka`` source: topic-partitions as splits, the next offset of each as its position.

Offsets are resolved once, on the driver, when the job first starts, and kept in the
checkpoint with the split plan: a restart before the first checkpoint starts exactly
where the first run started (``latest`` does not move), and a restore continues at the
checkpoint's next offset of every partition. Each subtask reads all its partitions
together through one consumer (:mod:`.shared_consumer`), assigned at their offsets (no
group rebalancing); partitions discovered while the job runs join it. Offsets committed
to ``consumer.group`` are for monitoring and new jobs only: a restore never reads them.

Record formats: :mod:`.records`, :mod:`.change_formats`. Options: docs/options.md
("Kafka source"); start and stop modes, bounded runs, discovery and ``table_list``:
docs/kafka.md.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from ...errors import ConfigError, ConnectorError
from ...extras import require
from ..api import Dataset, JsonValue, ReaderContext, Source, SourceReader, Split
from ..datasets import kafka_datasets
from ..options import Option, OptionTable, Parsed, option_key
from ..seatunnel_types import parse_schema
from ..table_metadata import attach, parse_table_metadata
from .change_formats import LENIENT_FORMATS
from .client import CONNECTION_OPTIONS, KafkaTarget, metadata, reason, while_leaders_move
from .records import ERROR_WAYS, FORMATS, DecodeError, RecordDecoder, empty_batch
from .shared_consumer import SharedConsumer

log = logging.getLogger(__name__)

START_MODES = ("earliest", "latest", "group_offsets", "specific_offsets", "timestamp")
STOP_MODES = ("unbounded", "end_offsets_at_start", "timestamp")
DEFAULT_GROUP = "SeaTunnel-Consumer-Group"
#: how long a read waits for records before it returns an empty batch (once per round of
#: the subtask's partitions that all found none), so that barriers get their turn
POLL_WAIT_S = 0.05
_OPTIONS = OptionTable(
    *CONNECTION_OPTIONS,
    Option("pattern", "bool", "topic is a regular expression of topic names", False),
    Option("topic", "value", "a topic name or a list of names (or, with pattern, one regular expression)"),
    Option("consumer.group", "str", "the consumer group offsets are committed to", DEFAULT_GROUP),
    Option("start_mode", "str", "where a job without a checkpoint starts", "group_offsets", choices=START_MODES),
    Option("start_mode.offsets", "value", "specific_offsets: {topic-partition: offset}"),
    Option("start_mode.timestamp", "int", "timestamp: ms since the epoch", minimum=0),
    Option("job.mode", "str", "env.job.mode, set by the engine", "streaming", choices=("batch", "streaming")),
    Option("stop_mode", "str", "where reading ends (default: end_offsets_at_start in batch jobs)", choices=STOP_MODES),
    Option("stop_mode.timestamp", "int", "timestamp: ms since the epoch", minimum=0),
    Option("format", "str", "the records' format", "json", choices=FORMATS),
    Option("schema", "value", "SeaTunnel's schema of the records' fields"),
    Option("field_delimiter", "str", "text format: the delimiter between fields", ","),
    Option("format_error_handle_way", "str", "skip or fail a record that does not parse", choices=ERROR_WAYS),
    Option("key_converter_schema_enabled", "bool", "Kafka Connect's setting; changes nothing here", True),
    Option("value_converter_schema_enabled", "bool", "Kafka Connect's setting; changes nothing here", True),
    Option("debezium_record_include_schema", "bool", "debezium_json records carry their schema", True),
    Option("batch_size", "int", "rows per batch (default: the engine's)", minimum=1),
    Option("commit_on_checkpoint", "bool", "commit the group's offsets when a checkpoint completes", True),
    Option(
        "partition-discovery.interval-millis", "int", "ms between looks for new partitions (-1: never)", -1, minimum=-1
    ),
)


class KafkaSource(Source):
    plugin_name = "Kafka"
    reads_splits_together = True
    #: the job's ``env.job.mode`` when the job file sets it (``connectors/__init__.py``)
    reads_job_mode = True
    #: ``table_list``: several topics, each its own table (format, schema...), read as one
    #: source of several tables (``union.tables_source``), each named by its topic
    reads_tables_configs = True
    tables_option = "table_list"
    OPTIONS = _OPTIONS

    @staticmethod
    def table_name(entry: Mapping[str, Any]) -> tuple[Any, str]:
        return entry.get("topic"), "topic"

    def __init__(self, options: Mapping[str, Any]):
        super().__init__(options)
        opts = self.parse_options()
        self.target = KafkaTarget(opts)
        self.pattern: bool = opts["pattern"]
        self.topics = self._topics(opts)
        self.group: str = opts["consumer.group"]
        self.start_mode: str = opts["start_mode"]
        self.start_offsets = self._specific_offsets(opts) if self.start_mode == "specific_offsets" else {}
        self.start_ms = opts.require("start_mode.timestamp") if self.start_mode == "timestamp" else None
        batch_job = opts["job.mode"] == "batch"
        self.stop_mode: str = opts["stop_mode"] or ("end_offsets_at_start" if batch_job else "unbounded")
        self.stop_ms = opts.require("stop_mode.timestamp") if self.stop_mode == "timestamp" else None
        self.format: str = opts["format"]
        if self.format == "avro":
            require("avro", "format avro", "format")
        schema = parse_schema(opts["schema"]) if opts.given("schema") else None
        self.table_metadata = parse_table_metadata(opts["schema"], "Kafka") if opts.given("schema") else None
        delimiter: str = opts["field_delimiter"]
        lenient = "skip" if self.format in LENIENT_FORMATS else "fail"
        skip = (opts["format_error_handle_way"] or lenient) == "skip"
        # Kafka Connect's converter settings (key_/value_converter_schema_enabled) change
        # nothing here: its JSON is read by its envelope's payload either way (SeaTunnel
        # reads ``payload`` in both cases too)
        self.decoder = RecordDecoder(
            self.format,
            schema,
            delimiter,
            skip,
            debezium_schema_included=opts["debezium_record_include_schema"],
        )
        self.change_rows = self.decoder.change_rows
        self.batch_size: int | None = opts["batch_size"]
        self.commit_on_checkpoint: bool = opts["commit_on_checkpoint"]
        discovery_ms: int = opts["partition-discovery.interval-millis"]
        # a bounded job keeps the partitions it started with (its end is fixed at the start)
        if discovery_ms > 0 and self.stop_mode == "unbounded":
            self.discovery_interval_s = discovery_ms / 1000
        self._committer: Any = None
        self._shared: SharedConsumer | None = None
        #: the table of a ``table_list`` whose consumer this one's partitions share
        self._consumer_of: KafkaSource | None = None

    @staticmethod
    def tables_built(sources: Sequence[Source]) -> None:
        """``table_list``: the tables of one cluster and consumer group are read through
        one consumer per subtask, the first table's (``shared_consumer``). Patterns (which
        may match one topic twice) keep their own."""
        first: dict[str, KafkaSource] = {}
        for source in sources:
            if isinstance(source, KafkaSource) and not source.pattern:
                key = json.dumps([source.target.client_config(), source.group], sort_keys=True)
                if first.setdefault(key, source) is not source:
                    source._consumer_of = first[key]

    def _topics(self, opts: Parsed) -> list[str]:
        value = opts["topic"]
        topics = [value] if isinstance(value, str) else value
        if not isinstance(topics, list) or not topics or not all(isinstance(t, str) and t.strip() for t in topics):
            raise ConfigError("topic", f"expected a topic name or a list of names, got {value!r}")
        if self.pattern:
            if len(topics) != 1:
                raise ConfigError("topic", "with pattern: true, give one regular expression")
            try:
                re.compile(topics[0])
            except re.error as err:
                raise ConfigError("topic", f"{topics[0]!r} is not a regular expression: {err}") from None
        return [t.strip() for t in topics]

    @staticmethod
    def _specific_offsets(opts: Parsed) -> dict[tuple[str, int], int]:
        value = opts["start_mode.offsets"]
        if not isinstance(value, Mapping) or not value:
            raise ConfigError(
                "start_mode.offsets", "is required for start_mode specific_offsets: {topic-partition: offset}"
            )
        offsets = {}
        for key, offset in value.items():
            topic, _, partition = str(key).rpartition("-")
            if (
                not topic
                or not partition.isdigit()
                or isinstance(offset, bool)
                or not isinstance(offset, int)
                or offset < 0
            ):
                raise ConfigError(
                    f"start_mode.offsets.{key}", f"expected <topic>-<partition>: <offset >= 0>, got {offset!r}"
                )
            offsets[(topic, int(partition))] = offset
        return offsets

    def describe(self) -> str:
        what = f"topics matching {self.topics[0]!r}" if self.pattern else f"topic {', '.join(self.topics)}"
        return f"{what} at {self.target.describe()}"

    def datasets(self) -> list[Dataset]:
        # a pattern names no dataset until the job runs
        return [] if self.pattern else kafka_datasets(self.target.bootstrap_servers, self.topics)

    # ---- driver -----------------------------------------------------------------------------
    def preflight(self) -> None:
        consumer = self.target.consumer(**{"group.id": self.group})
        try:
            self._partitions(consumer)
        finally:
            consumer.close()

    def produced_schema(self) -> pa.Schema | None:
        return None if self.decoder.schema is None else attach(self.decoder.schema, self.table_metadata)

    def _partitions(self, consumer: Any) -> list[tuple[str, int]]:
        """Every (topic, partition) the job reads, sorted."""
        topics = metadata(consumer, self.target).topics
        if self.pattern:
            expression = re.compile(self.topics[0])
            names = sorted(t for t in topics if expression.fullmatch(t) and not t.startswith("__"))
            if not names:
                raise ConfigError(
                    option_key(self, "topic"), f"no topic matches {self.topics[0]!r} at {self.target.describe()}"
                )
        else:
            names = self.topics
            for name in names:
                if name not in topics or topics[name].error is not None:
                    raise ConfigError(option_key(self, "topic"), f"no topic {name!r} at {self.target.describe()}")
        return sorted((name, partition) for name in names for partition in topics[name].partitions)

    def splits(self, parallelism: int) -> list[Split]:
        consumer = self.target.consumer(**{"group.id": self.group, "enable.auto.commit": False})
        try:
            partitions = self._partitions(consumer)
            starts = self._start_offsets(consumer, partitions)
            stops = self._stop_offsets(consumer, partitions)
        finally:
            consumer.close()
        return [
            Split(
                f"{topic}-{partition}",
                {
                    "topic": topic,
                    "partition": partition,
                    "start": starts[(topic, partition)],
                    "stop": stops.get((topic, partition)),
                },
            )
            for topic, partition in partitions
        ]

    def discover_splits(self, known: Sequence[Split]) -> list[Split]:
        """Unbounded: partitions created since the plan was made (a topic grown, or a new
        topic matching the pattern), from their earliest offset, as Flink reads
        discovered partitions. A bounded job keeps the partitions it started with."""
        if self.stop_mode != "unbounded":
            return []
        consumer = self.target.consumer(**{"group.id": self.group, "enable.auto.commit": False})
        try:
            ids = {split.split_id for split in known}
            new = [tp for tp in self._partitions(consumer) if f"{tp[0]}-{tp[1]}" not in ids]
            starts = {tp: low for tp, (low, _) in self._watermarks(consumer, new).items()} if new else {}
        finally:
            consumer.close()
        return [
            Split(
                f"{topic}-{partition}",
                {"topic": topic, "partition": partition, "start": starts[(topic, partition)], "stop": None},
            )
            for topic, partition in new
        ]

    def _watermarks(self, consumer: Any, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], tuple[int, int]]:
        from confluent_kafka import KafkaException, TopicPartition

        try:
            return {
                tp: while_leaders_move(
                    self.target,
                    lambda tp=tp: consumer.get_watermark_offsets(
                        TopicPartition(*tp), timeout=self.target.connect_timeout_s
                    ),
                )
                for tp in partitions
            }
        except KafkaException as err:
            raise ConnectorError(f"{self.describe()}: reading the partitions' offsets failed: {reason(err)}") from None

    def _at_time(self, consumer: Any, partitions: list[tuple[str, int]], ms: int) -> dict[tuple[str, int], int]:
        """The first offset at or after ``ms`` per partition; -1 where there is none yet."""
        from confluent_kafka import KafkaException, TopicPartition

        try:
            found = while_leaders_move(
                self.target,
                lambda: consumer.offsets_for_times(
                    [TopicPartition(t, p, ms) for t, p in partitions], timeout=self.target.connect_timeout_s
                ),
            )
        except KafkaException as err:
            raise ConnectorError(f"{self.describe()}: looking offsets up by time failed: {reason(err)}") from None
        return {(tp.topic, tp.partition): tp.offset for tp in found}

    def _start_offsets(self, consumer: Any, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        from confluent_kafka import KafkaException, TopicPartition

        marks = self._watermarks(consumer, partitions)
        if self.start_mode == "latest":
            return {tp: high for tp, (_, high) in marks.items()}
        if self.start_mode == "timestamp":
            return {
                tp: offset if offset >= 0 else marks[tp][1]
                for tp, offset in self._at_time(consumer, partitions, self.start_ms).items()
            }
        if self.start_mode == "specific_offsets":
            return {tp: self.start_offsets.get(tp, low) for tp, (low, _) in marks.items()}
        if self.start_mode == "group_offsets":
            try:
                committed = consumer.committed(
                    [TopicPartition(*tp) for tp in partitions], timeout=self.target.connect_timeout_s
                )
            except KafkaException as err:
                raise ConnectorError(
                    f"{self.describe()}: reading group {self.group!r}'s offsets failed: {reason(err)}"
                ) from None
            found = {(tp.topic, tp.partition): tp.offset for tp in committed if tp.offset >= 0}
            return {tp: found.get(tp, low) for tp, (low, _) in marks.items()}
        return {tp: low for tp, (low, _) in marks.items()}

    def _stop_offsets(self, consumer: Any, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        if self.stop_mode == "unbounded":
            return {}
        marks = self._watermarks(consumer, partitions)
        if self.stop_mode == "end_offsets_at_start":
            return {tp: high for tp, (_, high) in marks.items()}
        return {
            tp: offset if offset >= 0 else marks[tp][1]
            for tp, offset in self._at_time(consumer, partitions, self.stop_ms).items()
        }

    # ---- executors ---------------------------------------------------------------------------
    def checkpoint_completed(self, positions: Mapping[str, JsonValue]) -> None:
        """Commit the completed checkpoint's offsets to ``consumer.group`` (as Flink does):
        monitoring sees the lag, and ``start_mode: group_offsets`` in a new job starts
        there. Restores never read them."""
        from confluent_kafka import TopicPartition

        if not self.commit_on_checkpoint:
            return
        offsets = []
        for split_id, position in positions.items():
            topic, _, partition = split_id.rpartition("-")
            if isinstance(position, Mapping) and "offset" in position:
                offsets.append(TopicPartition(topic, int(partition), int(position["offset"])))
        if offsets:
            if self._committer is None:
                self._committer = self.target.consumer(**{"group.id": self.group, "enable.auto.commit": False})
            self._committer.commit(offsets=offsets, asynchronous=True)

    def shared_consumer(self) -> SharedConsumer:
        """The one consumer this source reads all its partitions of a subtask through
        (the source is made anew for every subtask attempt, so it is the subtask's)."""
        if self._consumer_of is not None:
            return self._consumer_of.shared_consumer()
        if self._shared is None:
            self._shared = SharedConsumer(
                lambda: self.target.consumer(
                    **{
                        "group.id": self.group,
                        "enable.auto.commit": False,
                        "enable.auto.offset.store": False,
                        "enable.partition.eof": True,
                        "auto.offset.reset": "error",
                    }
                ),
                self.describe,
                POLL_WAIT_S,
            )
        return self._shared

    def close(self) -> None:
        shared, self._shared = self._shared, None
        try:
            if shared is not None:
                shared.close()
        finally:
            if self._committer is not None:  # closing waits for the commits in flight
                self._committer.close()
                self._committer = None

    def create_reader(self, split: Split, position: JsonValue | None, context: ReaderContext) -> SourceReader:
        return KafkaReader(self, split, position, self.batch_size or context.batch_size)


class KafkaReader(SourceReader):
    """One partition from its position (``{"offset": next, "skipped": n}``) to its stop
    offset, or for ever."""

    def __init__(self, source: KafkaSource, split: Split, position: JsonValue | None, batch_size: int):
        self.source = source
        self.topic: str = split.spec["topic"]
        self.partition: int = int(split.spec["partition"])
        stop = split.spec.get("stop")
        self.stop: int | None = int(stop) if stop is not None else None
        self.offset: int = int(position["offset"]) if position else int(split.spec["start"])
        self.skipped: int = int(position.get("skipped", 0)) if position else 0
        self.batch_size = batch_size
        #: the subtask's one consumer (``shared_consumer.py``), while this partition is read
        self.consumer: SharedConsumer | None = None
        if self.stop is None or self.offset < self.stop:
            self.consumer = source.shared_consumer()
            self.consumer.add((self.topic, self.partition), self.offset, batch_size)

    def read_batch(self) -> pa.RecordBatch | None:
        if self.stop is not None and self.offset >= self.stop:
            return None
        wanted = self.batch_size if self.stop is None else min(self.batch_size, self.stop - self.offset)
        # What the subtask's consumer fetched for this partition, at once; only when no
        # partition of the subtask had any does a read wait (once per round of them)
        assert self.consumer is not None  # open until the stop offset is reached
        messages = self.consumer.take((self.topic, self.partition), wanted)
        records = []
        for message in messages:
            error = message.error()
            if error is None:
                if message.offset() >= self.offset and (self.stop is None or message.offset() < self.stop):
                    records.append(message)
            elif error.code() == error._PARTITION_EOF:
                # everything before the end offset was delivered (transaction markers
                # included), so the bounded end counts as reached there
                end = message.offset() if self.stop is None else min(message.offset(), self.stop)
                self.offset = max(self.offset, end)
            else:
                raise ConnectorError(
                    f"{self.source.describe()}: reading partition {self.partition} of {self.topic!r} "
                    f"failed: {reason(error)}"
                )
        if not records:
            return empty_batch(self.source.decoder.schema)
        try:
            decoded = self.source.decoder.decode(records)
        except DecodeError as err:
            bad = records[err.index]
            raise ConfigError(
                option_key(self.source, "format"),
                f"record {bad.offset()} of {self.topic}-{self.partition} is not valid {self.source.format}: {err.problem}; "
                "set format_error_handle_way: skip to drop such records",
            ) from None
        if decoded.skipped:
            self.skipped += len(decoded.skipped)
            log.warning(
                "Kafka source: skipped %d malformed records of %s-%d (offsets %s), %d in all",
                len(decoded.skipped),
                self.topic,
                self.partition,
                ", ".join(str(records[i].offset()) for i in decoded.skipped[:5]),
                self.skipped,
            )
        self.offset = max(self.offset, records[-1].offset() + 1)
        return decoded.batch

    def position(self) -> JsonValue:
        return {"offset": self.offset, "skipped": self.skipped}

    def close(self) -> None:
        if self.consumer is not None:
            self.consumer.remove((self.topic, self.partition))
            self.consumer = None
