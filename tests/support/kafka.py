"""Helpers of the Kafka suites on the real broker (tests/servers/kafka_broker.py): a topic
of its own per test on the session's shared broker, the EXACTLY_ONCE sink, and the job
file that writes Sequence ids through it."""

from __future__ import annotations

import itertools
import uuid
from pathlib import Path
from typing import Any

from airflow_provider_seatunnel_ckpt.connectors import load_sink
from tests.support.workspace import Workspace

_names = itertools.count()


def new_topic(cluster: Any, partitions: int = 3) -> str:
    name = f"out-{next(_names)}-{uuid.uuid4().hex[:8]}"  # unique on a broker shared by the session's suites
    cluster.create_topic(name, partitions)
    return name


def exactly_once_sink(cluster: Any, topic: str, **extra: Any) -> Any:
    return load_sink(
        {
            "plugin_name": "Kafka",
            "bootstrap.servers": cluster.bootstrap_servers,
            "topic": topic,
            "semantics": "EXACTLY_ONCE",
            **extra,
        },
        "sink[0]",
    )


def sequence_to_kafka(workspace: Workspace, kafka: Any, topic: str, rows: int, **sequence: Any) -> Path:
    """The job file of ``rows`` Sequence ids into ``topic`` through the EXACTLY_ONCE sink."""
    sink = {"plugin_name": "Kafka", "bootstrap.servers": kafka.bootstrap_servers, "topic": topic}
    return workspace.write_job(
        {"plugin_name": "Sequence", "rows": rows, **sequence}, {**sink, "semantics": "EXACTLY_ONCE"}
    )
