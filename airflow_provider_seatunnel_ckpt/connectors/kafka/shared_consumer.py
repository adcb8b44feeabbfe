"""One librdkafka consumer for every partition a subtask reads (Flink's and SeaTunnel's
reading model), shared by that subtask's split readers.

The engine keeps one reader per split and takes a batch from each in turn
(``Source.reads_splits_together``); each Kafka reader asks this consumer for its own
partition's records. The consumer is *assigned* its partitions at explicit offsets (no
group rebalancing): a reader's position is the only truth, so restores and rescaling stay
exact. Records come from librdkafka in one stream for all partitions and are kept per
partition until that partition's reader asks; a partition with a full batch waiting is
paused (librdkafka stops fetching it) and resumed once its reader took it, so what waits
here stays within a batch or two per partition. librdkafka resumes a paused partition at
the offset after the last record handed out, so nothing is skipped or read twice.

A read that finds nothing waits at most ``wait_s`` for records, but only once per round of
the subtask's readers that all found nothing: an idle topic of 1,000 partitions costs one
short wait per round, not one per partition.
"""

from __future__ import annotations

import contextlib
import gc
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from ...errors import ConnectorError
from .client import reason

TopicPartitionKey = tuple[str, int]


class SharedConsumer:
    """The partitions of one subtask through one consumer, created at the first
    ``add``. ``make`` creates the librdkafka consumer; ``describe`` names the source."""

    def __init__(self, make: Callable[[], Any], describe: Callable[[], str], wait_s: float):
        self._make = make
        self._describe = describe
        self.wait_s = wait_s
        self.consumer: Any = None
        #: records (and end-of-partition events) fetched, by partition, until its reader asks
        self._buffers: dict[TopicPartitionKey, deque[Any]] = {}
        #: the batch size of each partition's reader: a fuller buffer pauses the partition
        self._limits: dict[TopicPartitionKey, int] = {}
        #: partitions added since the last fetch, assigned together at the next one
        self._to_assign: dict[TopicPartitionKey, int] = {}
        self._paused: set[TopicPartitionKey] = set()
        #: partitions whose reader found nothing since the last fetch that returned records
        self._idle: set[TopicPartitionKey] = set()

    @property
    def partitions(self) -> list[TopicPartitionKey]:
        return sorted(self._buffers)

    def add(self, partition: TopicPartitionKey, offset: int, batch_size: int) -> None:
        """Read ``partition`` from ``offset`` on (assigned at the next read)."""
        if partition in self._buffers:
            raise ValueError(f"partition {partition[1]} of {partition[0]!r} is read twice by one subtask")
        if self.consumer is None:
            self.consumer = self._make()
        self._buffers[partition] = deque()
        self._limits[partition] = batch_size
        self._to_assign[partition] = offset

    def remove(self, partition: TopicPartitionKey) -> None:
        """Stop reading ``partition`` (its reader is closed); what was fetched for it goes."""
        from confluent_kafka import TopicPartition

        if self._buffers.pop(partition, None) is None:
            return
        del self._limits[partition]
        self._paused.discard(partition)
        self._idle.discard(partition)
        if self._to_assign.pop(partition, None) is None and self.consumer is not None:
            self.consumer.incremental_unassign([TopicPartition(*partition)])

    def take(self, partition: TopicPartitionKey, wanted: int) -> list[Any]:
        """Up to ``wanted`` records (and end-of-partition or error events) of ``partition``,
        in offset order: what was fetched already, else what one fetch brings now."""
        buffer = self._buffers[partition]
        if not buffer:
            self._fetch(wanted, 0)
        if not buffer:
            # every reader found nothing since records last came (or this one reads alone):
            # wait once for this round
            if partition in self._idle or len(self._buffers) == 1:
                self._idle.clear()
                self._fetch(wanted, self.wait_s)
            else:
                self._idle.add(partition)
        taken = [buffer.popleft() for _ in range(min(wanted, len(buffer)))]
        if partition in self._paused and len(buffer) < self._limits[partition]:
            from confluent_kafka import TopicPartition

            self.consumer.resume([TopicPartition(*partition)])
            self._paused.discard(partition)
        return taken

    def _fetch(self, count: int, timeout: float) -> None:
        from confluent_kafka import KafkaException, TopicPartition

        if self._to_assign:
            assign = [TopicPartition(t, p, offset) for (t, p), offset in self._to_assign.items()]
            self._to_assign.clear()
            try:
                self.consumer.incremental_assign(assign)
            except KafkaException as err:
                raise ConnectorError(f"{self._describe()}: assigning partitions failed: {reason(err)}") from None
        with collector_paused():
            messages = self.consumer.consume(num_messages=count, timeout=timeout)
        if not messages:
            return
        self._idle.clear()
        filled = set()
        for message in messages:
            key = (message.topic(), message.partition())
            buffer = self._buffers.get(key)
            if buffer is not None:
                buffer.append(message)
                filled.add(key)
            elif message.error() is not None and (key[0] is None or key[1] is None or key[1] < 0):
                # an error of the consumer, not of a partition
                raise ConnectorError(f"{self._describe()}: reading failed: {reason(message.error())}")
            # else: a partition removed since it was fetched
        full = [k for k in filled if k not in self._paused and len(self._buffers[k]) >= self._limits[k]]
        if full:
            self.consumer.pause([TopicPartition(*key) for key in full])
            self._paused.update(full)

    def close(self) -> None:
        consumer, self.consumer = self.consumer, None
        self._buffers.clear()
        self._limits.clear()
        self._to_assign.clear()
        self._paused.clear()
        self._idle.clear()
        if consumer is not None:
            consumer.close()


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The garbage collector off while a poll makes its messages, on again after (as it
    was). A poll of 65,536 records makes as many ``Message`` objects, which the collector
    tracks: every 700 of them started a collection that walked all those made so far, a
    third of a source worker's CPU (bench/kafka_bench.py --profile). They hold no cycles
    (reference counting frees them), and the one collection after the poll walks them once."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
