"""A librdkafka producer writing a Kafka sink's batches: ``Producing``, and what it needs of
its sink (``ProducingSink``).

Both of the sink's semantics produce through it: AT_LEAST_ONCE with one shared producer
flushed at every barrier (``sink.py``), EXACTLY_ONCE with a transactional producer per
epoch (``exactly_once.py``). Delivery failures arrive on librdkafka's callbacks, off the
writing thread; they are kept and raised at the next write or flush, so a lost record
fails the epoch's checkpoint instead of being reported nowhere.

It lives below both semantics' modules, and knows the sink only as ``ProducingSink``, so
that neither module needs the other: the sink chooses the semantics, the EXACTLY_ONCE
writer starts producers, and neither imports back.
"""

from __future__ import annotations

import queue
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, Protocol

import pyarrow as pa

from ...errors import ConfigError, ConnectorError
from ..options import option_key
from .client import KafkaTarget, reason

#: seconds a flush (at a barrier) waits for the broker's acknowledgements before failing the checkpoint
FLUSH_TIMEOUT_S = 60.0


class ProducingSink(Protocol):
    """What producing for a Kafka sink needs of it (``KafkaSink`` is one): where it writes,
    how a batch becomes records, and the producer settings. ``run_attempt`` is the
    connector API's (``Sink.run_attempt``); the EXACTLY_ONCE writer puts it in its ids."""

    target: KafkaTarget
    topic: str
    #: ``transaction.timeout.ms``: what ``kafka.config`` says, else the sink's default
    transaction_timeout_ms: int
    partition: int | None
    run_attempt: int

    def describe(self) -> str: ...

    def encode(self, batch: pa.RecordBatch) -> tuple[list[str] | list[bytes], list[str] | None]: ...

    def producer_config(self, **settings: Any) -> dict[str, Any]: ...


class Deliveries:
    """The first delivery failure librdkafka's callbacks reported, until it is taken.
    Apart from ``Producing`` so that the producer holding the callback does not hold the
    ``Producing`` that holds the producer: no cycle, a dropped producer goes at once.

    A ``SimpleQueue``, not a lock: the callback runs inside librdkafka's poll and flush,
    where an exception raised by a signal handler (pytest-timeout's, a SIGINT) between a
    lock's acquire and its release leaked the lock, and the next failed delivery waited
    for it forever (a CI run hung so inside ``flush``). ``SimpleQueue.put`` is reentrant."""

    def __init__(self) -> None:
        self._failures: queue.SimpleQueue[str] = queue.SimpleQueue()

    def delivered(self, err: Any, _message: Any) -> None:
        if err is not None:
            self._failures.put(reason(err))

    def take(self) -> str | None:
        """The first failure reported since the last take, if any; the others are dropped."""
        try:
            failure = self._failures.get_nowait()
        except queue.Empty:
            return None
        while True:
            try:
                self._failures.get_nowait()
            except queue.Empty:
                return failure


class Producing:
    """A librdkafka producer and the delivery failures its callbacks reported."""

    def __init__(self, sink: ProducingSink, config: Mapping[str, Any]):
        from confluent_kafka import KafkaException, Producer

        self.sink = sink
        self.deliveries = Deliveries()
        try:
            # One delivery callback for every record, in the producer's configuration: a
            # callback given to each produce() call is a bound method object per record,
            # alive until its delivery report, and a few million of those in flight kept
            # the garbage collector busy (a quarter of a sink worker's CPU, bench/kafka_bench.py)
            self.producer = Producer({**config, "on_delivery": self.deliveries.delivered})
        except (KafkaException, ValueError, TypeError) as err:
            raise ConfigError(
                option_key(sink, "kafka.config"), f"librdkafka refused the configuration: {reason(err)}"
            ) from None

    def check_deliveries(self) -> None:
        failure = self.deliveries.take()
        if failure is not None:
            raise ConnectorError(f"Kafka sink: a record to {self.sink.describe()} was not delivered: {failure}")

    def write(self, batch: pa.RecordBatch) -> None:
        """Every record of the batch into librdkafka's queue, in order. The loop over the
        records is the sink's hot path: one ``produce`` call each and nothing else (what a
        bare producer does); a full queue (``BufferError``) is drained by polling, then the
        loop goes on from the record it refused."""
        sink, producer = self.sink, self.producer
        self.check_deliveries()
        values, keys = sink.encode(batch)
        topic = sink.topic
        produce: Callable[..., None] = producer.produce
        if sink.partition is not None:
            produce = partial(produce, partition=sink.partition)
        start, at, count = 0, 0, len(values)
        while start < count:
            try:
                if keys is None:
                    for at in range(start, count):
                        produce(topic, values[at])
                else:
                    for at in range(start, count):
                        produce(topic, values[at], keys[at])
                start = count
            except BufferError:  # the local queue is full: let deliveries drain it
                start = at  # the refused record, first of the next round
                producer.poll(0.05)
        producer.poll(0)

    def flush(self) -> None:
        """Wait until the broker acknowledged every record produced so far."""
        left = self.producer.flush(FLUSH_TIMEOUT_S)
        if left:
            raise ConnectorError(
                f"Kafka sink: {left} records to {self.sink.describe()} not acknowledged within {FLUSH_TIMEOUT_S:g} s"
            )
        self.check_deliveries()
