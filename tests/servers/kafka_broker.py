"""A real Kafka: Apache Kafka's own broker (4.1, KRaft, no ZooKeeper) in a JVM, on loopback.

Each node is a combined broker and controller (``process.roles=broker,controller``), as
in Kafka's quickstart; a cluster of three has a three-voter controller quorum, so it
keeps working when one node is killed::

    with KafkaBroker() as kafka:                 # one node
        kafka.bootstrap_servers                  # "127.0.0.1:40123"
    with KafkaBroker(nodes=3) as kafka:          # three, replication factor 3
        kafka.kill_node(2)                       # SIGKILL, as a crash
        kafka.start_node(2)                      # back, same ports and log dirs

Unlike the librdkafka mock (tests/servers/kafka.py) this broker does transactions for
real: ``isolation.level=read_committed`` hides aborted records, fencing works.
Internal topics are small (3 partitions for offsets and transactions) to start fast.
The JVMs run under servers.Lifeline: closing their stdin (or pytest dying) ends them.
"""

from __future__ import annotations

import base64
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tests.servers.jvm import JvmProcess, JvmServer, JvmServerError, free_ports, port_open, run_main, wait_until
from tests.servers.kafka_records import ProducesRecords

KAFKA_VERSION = "4.1.1"  # tests/servers/jvm/pom.xml


class KafkaBroker(JvmServer, ProducesRecords):
    def __init__(self, nodes: int = 1, workdir: Path | None = None, start_timeout: float = 120):
        super().__init__(workdir, "kafka-broker-")
        self.nodes = nodes
        self.start_timeout = start_timeout
        self.cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        ports = free_ports(2 * nodes)
        self.broker_ports, self.controller_ports = ports[:nodes], ports[nodes:]
        self.processes: dict[int, JvmProcess] = {}
        self.start_seconds: float | None = None

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for p in self.broker_ports)

    def node_ids(self) -> list[int]:
        return list(range(1, self.nodes + 1))

    def _properties(self, node: int) -> Path:
        i = node - 1
        replicas = min(3, self.nodes)
        voters = ",".join(f"{n}@127.0.0.1:{self.controller_ports[n - 1]}" for n in self.node_ids())
        settings = {
            "process.roles": "broker,controller",
            "node.id": node,
            "controller.quorum.voters": voters,
            "listeners": f"PLAINTEXT://127.0.0.1:{self.broker_ports[i]},CONTROLLER://127.0.0.1:{self.controller_ports[i]}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.broker_ports[i]}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": self.workdir / f"node-{node}" / "data",
            "num.partitions": 1,
            "default.replication.factor": replicas,
            "min.insync.replicas": 1,
            "offsets.topic.replication.factor": replicas,
            "offsets.topic.num.partitions": 3,
            "transaction.state.log.replication.factor": replicas,
            "transaction.state.log.min.isr": 1,
            "transaction.state.log.num.partitions": 3,
            "group.initial.rebalance.delay.ms": 0,
            # a killed node is fenced and its partitions move in ~4 s (default 9 s)
            "broker.session.timeout.ms": 4000,
            "broker.heartbeat.interval.ms": 1000,
            "auto.create.topics.enable": "true",
            "log.flush.interval.messages": 9223372036854775807,
            "socket.request.max.bytes": 104857600,
        }
        path = self.workdir / f"node-{node}" / "server.properties"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
        return path

    def _format(self, node: int) -> None:
        run_main(
            "kafka",
            "kafka.tools.StorageTool",
            # "=" binds the id: a random one may start with "-", which argparse would take for an option.
            ["format", f"--cluster-id={self.cluster_id}", "-c", str(self._properties(node)), "--ignore-formatted"],
        )

    def start_node(self, node: int) -> None:
        process = JvmProcess(
            "kafka",
            "servers.Lifeline",
            ["kafka.Kafka", str(self._properties(node))],
            log_path=self.workdir / f"node-{node}" / "server.log",
            heap="512m",
        )
        self.processes[node] = process.start()

    def kill_node(self, node: int) -> None:
        """SIGKILL one node (a crash: no controlled shutdown)."""
        self.processes[node].kill()

    def stop_node(self, node: int) -> None:
        """Stop one node cleanly (controlled shutdown)."""
        self.processes[node].stop()

    def start(self) -> KafkaBroker:
        started = time.monotonic()
        try:
            with ThreadPoolExecutor(self.nodes) as pool:  # a JVM each: format in parallel
                list(pool.map(self._format, self.node_ids()))
            for node in self.node_ids():
                self.start_node(node)
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - started
        return self

    def wait_ready(self, nodes: list[int] | None = None) -> None:
        """Until every (given) node is a broker in the cluster's metadata."""
        from confluent_kafka.admin import AdminClient

        wanted = set(nodes or self.node_ids())
        admin: list[Any] = []

        def ready() -> bool:
            if not all(port_open(self.broker_ports[n - 1]) for n in wanted):
                return False
            if not admin:  # librdkafka logs every refused connection: connect once they listen
                admin.append(AdminClient({"bootstrap.servers": self.bootstrap_servers, "log_level": 0}))
            return wanted <= set(admin[0].list_topics(timeout=2).brokers)

        for node in wanted:
            wait_until(lambda: True, 1, f"Kafka node {node}", self.processes[node])  # still alive
        try:
            wait_until(ready, self.start_timeout, f"Kafka {self.bootstrap_servers}", self.processes[min(wanted)])
        except JvmServerError as exc:
            tails = "\n".join(self.processes[n].log_tail(20) for n in sorted(wanted) if n != min(wanted))
            raise JvmServerError(f"{exc}\n{tails}") from None

    # --- what the Kafka suites ask of a cluster (as of tests/servers/kafka.py's mock) ---
    def config(self, **extra: Any) -> dict[str, Any]:
        return {"bootstrap.servers": self.bootstrap_servers, **extra}

    def create_topic(self, name: str, partitions: int, timeout: float = 30) -> None:
        """Create ``name`` through the broker's own CreateTopics, and wait until the
        metadata lists its partitions (the controller answers before the brokers know it;
        their leaders may still be settling, as for any client of a new topic)."""
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient(self.config(log_level=0))
        futures = admin.create_topics([NewTopic(name, partitions, min(3, self.nodes))], operation_timeout=timeout)
        futures[name].result(timeout)

        def listed() -> bool:
            topic = admin.list_topics(name, timeout=timeout).topics.get(name)
            return topic is not None and topic.error is None and len(topic.partitions) == partitions

        wait_until(listed, timeout, f"topic {name} in the metadata of {self.bootstrap_servers}")

    def processes_to_stop(self) -> list[JvmProcess]:
        return list(self.processes.values())
