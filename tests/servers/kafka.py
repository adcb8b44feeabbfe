"""A loopback Kafka for tests: librdkafka's built-in mock cluster, in its own process.

No Kafka broker can be installed on these machines. librdkafka (inside confluent-kafka)
carries a mock cluster that serves the Kafka protocol over TCP on 127.0.0.1: metadata,
produce, fetch, list-offsets, offset commit/fetch, groups, transactions. It lives as long
as the client handle that created it, so a small child process creates one through
librdkafka's public mock API (``rdkafka_mock.h``, via ctypes: the Python client does not
expose it), prints its bootstrap servers and creates topics on request (the mock
answers no admin CreateTopics: it has no controller). Clients anywhere (Spark's Python
workers included) connect to it::

    with KafkaMockCluster(brokers=3) as kafka:
        kafka.create_topic("events", partitions=6)
        kafka.produce_json("events", rows)         # [{"id": 1, ...}, ...] spread by key
        kafka.bootstrap_servers                     # "127.0.0.1:40123,127.0.0.1:..."

What the mock does not do (librdkafka 2.16, checked): ``isolation.level=read_committed``
is ignored (aborted transactional records are delivered), a producer fenced by a newer
one with the same ``transactional.id`` can still commit, and offsets sent with
``send_offsets_to_transaction`` are not stored. So exactly-once *output to* Kafka cannot
be proven against it. It keeps about 5 MB per partition (older
records go, the low watermark moves up, as with a size-based retention): keep tests'
records small, and check ``low_watermarks`` before counting on the earliest offset.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.servers.kafka_records import ProducesRecords

_CHILD = r"""
import ctypes, glob, os, sys
import confluent_kafka
# librdkafka's public mock API (rdkafka_mock.h), from the library confluent-kafka ships
libs = os.path.join(os.path.dirname(os.path.dirname(confluent_kafka.__file__)), "confluent_kafka.libs")
lib = ctypes.CDLL(glob.glob(os.path.join(libs, "librdkafka*.so*"))[0])
lib.rd_kafka_conf_new.restype = ctypes.c_void_p
lib.rd_kafka_new.restype = ctypes.c_void_p
lib.rd_kafka_new.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
lib.rd_kafka_mock_cluster_new.restype = ctypes.c_void_p
lib.rd_kafka_mock_cluster_new.argtypes = [ctypes.c_void_p, ctypes.c_int]
lib.rd_kafka_mock_cluster_bootstraps.restype = ctypes.c_char_p
lib.rd_kafka_mock_cluster_bootstraps.argtypes = [ctypes.c_void_p]
lib.rd_kafka_mock_topic_create.restype = ctypes.c_int
lib.rd_kafka_mock_topic_create.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
errors = ctypes.create_string_buffer(512)
handle = lib.rd_kafka_new(1, lib.rd_kafka_conf_new(), errors, 512)  # a producer handle owns the cluster
cluster = lib.rd_kafka_mock_cluster_new(handle, int(sys.argv[1]))
print(lib.rd_kafka_mock_cluster_bootstraps(cluster).decode(), flush=True)
for line in sys.stdin:  # "topic <name> <partitions>" until the parent closes our stdin
    _, name, partitions = line.split()
    code = lib.rd_kafka_mock_topic_create(cluster, name.encode(), int(partitions), 1)
    print(code, flush=True)
"""


class KafkaMockCluster(ProducesRecords):
    def __init__(self, brokers: int = 3):
        self.brokers = brokers
        self.bootstrap_servers = ""
        self._process: subprocess.Popen | None = None

    def start(self) -> KafkaMockCluster:
        self._process = subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(self.brokers)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        line = self._process.stdout.readline().strip()
        if not line:
            self.stop()
            raise RuntimeError("the Kafka mock cluster did not start")
        self.bootstrap_servers = line
        return self

    def stop(self) -> None:
        if self._process is not None:
            try:
                self._process.stdin.close()
                self._process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self._process.kill()
                self._process.wait()
            self._process = None

    def __enter__(self) -> KafkaMockCluster:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def config(self, **extra: Any) -> dict[str, Any]:
        return {"bootstrap.servers": self.bootstrap_servers, **extra}

    def create_topic(self, name: str, partitions: int) -> None:
        """The mock has no controller for CreateTopics: its owner creates the topic."""
        assert self._process is not None and " " not in name
        self._process.stdin.write(f"topic {name} {partitions}\n")
        self._process.stdin.flush()
        code = self._process.stdout.readline().strip()
        if code != "0":
            raise RuntimeError(f"creating topic {name!r} failed: librdkafka error {code}")

    def low_watermarks(self, topic: str, partitions: int) -> list[int]:
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer(self.config(**{"group.id": "low-watermarks"}))
        try:
            return [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[0] for p in range(partitions)]
        finally:
            consumer.close()


def read_committed_values(bootstrap_servers: str, topic: str, partitions: int) -> list[bytes]:
    """What a ``read_committed`` consumer would read: the mock cluster serves every record
    whatever the isolation level, so this applies the rule to the raw log itself. Each
    partition's record batches are fetched with kafka-python's protocol layer; a
    transactional batch becomes visible when its producer's COMMIT control record follows
    it, is dropped at an ABORT, and stays invisible while neither came (an open transaction)."""
    import struct

    from kafka.client_async import KafkaClient
    from kafka.protocol.fetch import FetchRequest
    from kafka.record import MemoryRecords

    client = KafkaClient(bootstrap_servers=bootstrap_servers.split(","), request_timeout_ms=10_000)
    try:
        future = client.cluster.request_update()
        client.poll(future=future, timeout_ms=10_000)
        client.add_topic(topic)
        future = client.cluster.request_update()
        client.poll(future=future, timeout_ms=10_000)
        visible: list[bytes] = []
        for partition in range(partitions):
            leader = client.cluster.leader_for_partition(_topic_partition(topic, partition))
            offset, high = 0, None
            pending: dict[int, list[bytes]] = {}
            while high is None or offset < high:
                while not client.ready(leader):
                    client.poll(timeout_ms=100)
                request = FetchRequest[4](-1, 100, 1, 64 << 20, 0, [(topic, [(partition, offset, 64 << 20)])])
                future = client.send(leader, request)
                client.poll(future=future, timeout_ms=10_000)
                _topic, [(_p, error, high, _lso, _aborted, raw)] = future.value.topics[0]
                assert error == 0, f"fetching {topic}/{partition} failed with error {error}"
                records = MemoryRecords(raw)
                while (batch := records.next_batch()) is not None:
                    if batch.base_offset + batch.last_offset_delta < offset:
                        continue
                    entries = list(batch)
                    if batch.is_control_batch:
                        _version, kind = struct.unpack(">hh", entries[0].key)
                        done = pending.pop(batch.producer_id, [])
                        if kind == 1:  # COMMIT
                            visible.extend(done)
                    elif batch.is_transactional:
                        pending.setdefault(batch.producer_id, []).extend(e.value for e in entries if e.offset >= offset)
                    else:
                        visible.extend(e.value for e in entries if e.offset >= offset)
                    offset = batch.base_offset + batch.last_offset_delta + 1
        return visible
    finally:
        client.close()


def _topic_partition(topic: str, partition: int) -> Any:
    from kafka.structs import TopicPartition

    return TopicPartition(topic, partition)


def claimed_while_prepared(audit_path: str | Path) -> tuple[list[str], int]:
    """Read the Kafka sink's transaction audit (``SEATUNNEL_CKPT_KAFKA_TRANSACTION_LOG``) and
    list every claim (a producer started, or an id fenced) of a transactional id between its
    ``prepare`` and the ``commit`` that followed: on a real broker that claim aborts the
    prepared transaction and the commit fails or, worse, its rows are lost. The mock cluster
    lets such a commit through, so only this log can show it. Returns (the claims, how many
    commits were checked)."""
    events = sorted(
        (json.loads(line) for line in Path(audit_path).read_text().splitlines() if line), key=lambda e: e["at"]
    )
    hazards, commits = [], 0
    last_prepare: dict[str, float] = {}
    claims: dict[str, list[float]] = {}
    for event in events:
        name, at = event["id"], event["at"]
        if event["event"] == "prepare":
            last_prepare[name] = at
        elif event["event"] in ("start", "fence"):
            claims.setdefault(name, []).append(at)
        elif event["event"] == "commit" and name in last_prepare:
            commits += 1
            prepared = last_prepare[name]
            hazards += [
                f"{name}: claimed at {t:.3f}, prepared at {prepared:.3f}, committed at {at:.3f}"
                for t in claims.get(name, [])
                if prepared < t < at
            ]
    return hazards, commits
