"""The Kafka sink in EXACTLY_ONCE (a transaction per epoch, committed by the driver) and the
Kafka source, on the session's real broker (Apache Kafka 4.1, KRaft, ``kafka_broker``):
the sink's output is counted by a real ``read_committed`` consumer, so a transaction the
broker aborted is never counted and one left open hides what follows it, as from any
reader."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from tests.servers.kafka_records import read_ids

from ..contexts import SinkUnderTest, SourceUnderTest, unique

PARTITIONS = 3


class KafkaSink(SinkUnderTest):
    name = "Kafka (EXACTLY_ONCE)"

    def __init__(self, cluster: Any):
        self.cluster = cluster

    def new_target(self) -> str:
        topic = unique("topic")
        self.cluster.create_topic(topic, partitions=PARTITIONS)
        return topic

    def sink(self, target: str) -> dict[str, Any]:
        return {
            "plugin_name": "Kafka",
            "bootstrap.servers": self.cluster.bootstrap_servers,
            "topic": target,
            "semantics": "EXACTLY_ONCE",
        }

    def committed(self, target: str) -> list[int]:
        return read_ids(self.cluster, target, PARTITIONS)


@contextlib.contextmanager
def exactly_once(request: pytest.FixtureRequest) -> Iterator[SinkUnderTest]:
    yield KafkaSink(request.getfixturevalue("kafka_broker"))


class KafkaSource(SourceUnderTest):
    """A topic of JSON records ``{"id": n}``, read without end; the suite stops the job with
    a savepoint. ``earliest`` reads everything; ``latest`` what came after the job first
    started (the rerun of a driver that died before its first checkpoint keeps that start)."""

    bounded = False

    def __init__(self, cluster: Any, start_mode: str):
        self.cluster, self.start_mode = cluster, start_mode
        self.name = f"Kafka ({start_mode})"
        if start_mode == "latest":
            reason = "reads as Kafka (earliest) once started; only where it starts differs (case i)"
            self.skips = {"kill_and_resume": reason, "restore_older_checkpoint": reason}
        self.skips = {
            **self.skips,
            "nothing_left_after_delete_on_finish": "an unbounded job ends with a savepoint, which delete-on-finish keeps (docs/storage.md)",
        }

    def new_dataset(self) -> str:
        topic = unique("src")
        self.cluster.create_topic(topic, partitions=PARTITIONS)
        return topic

    def append(self, dataset: str, ids: Any) -> None:
        self.cluster.produce_json(dataset, ({"id": i} for i in ids), partitions=PARTITIONS)

    def source(self, dataset: str) -> dict[str, Any]:
        return {
            "plugin_name": "Kafka",
            "bootstrap.servers": self.cluster.bootstrap_servers,
            "topic": dataset,
            "format": "json",
            "schema": {"fields": {"id": "bigint"}},
            "start_mode": self.start_mode,
        }

    def expected(self, before: Any, during: Any, after: Any) -> list[int]:
        return [*during, *after] if self.start_mode == "latest" else [*before, *during, *after]


@contextlib.contextmanager
def source_earliest(request: pytest.FixtureRequest) -> Iterator[SourceUnderTest]:
    yield KafkaSource(request.getfixturevalue("kafka_broker"), "earliest")


@contextlib.contextmanager
def source_latest(request: pytest.FixtureRequest) -> Iterator[SourceUnderTest]:
    yield KafkaSource(request.getfixturevalue("kafka_broker"), "latest")
