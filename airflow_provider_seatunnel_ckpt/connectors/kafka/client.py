"""Connecting to Kafka: client configuration from the connector options, and errors.

``bootstrap.servers`` and ``kafka.config`` (passed to librdkafka as they are: SASL, TLS,
``client.id``...) make the client configuration. ``kafka.config`` may hold secrets
(``sasl.password``): a client is described by its bootstrap servers only, and
librdkafka's messages are passed on without the configuration.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from ...errors import ConfigError, ConnectorError
from ..options import REQUIRED, Option, Parsed

#: seconds to wait for the cluster's metadata on the driver before giving up
DEFAULT_CONNECT_TIMEOUT_S = 15.0
#: seconds between two asks while a partition's leader is not ready (``while_leaders_move``)
LEADER_RETRY_S = 0.1

T = TypeVar("T")


def _librdkafka_config(extra: Any) -> dict[str, Any]:
    extra = extra or {}
    if not isinstance(extra, Mapping) or not all(isinstance(k, str) for k in extra):
        raise ConfigError("kafka.config", f"expected a mapping of librdkafka properties, got {type(extra).__name__}")
    return {key: value if isinstance(value, (bool, int, float)) else str(value) for key, value in extra.items()}


#: the options of every Kafka connector that say where the cluster is and how to reach it
CONNECTION_OPTIONS = (
    Option("bootstrap.servers", "str", "the brokers, host:port,...", REQUIRED),
    Option(
        "kafka.config",
        "value",
        "librdkafka properties, passed as they are (SASL, TLS, client.id...)",
        convert=_librdkafka_config,
    ),
    Option(
        "connection_check_timeout_sec",
        "float",
        "seconds to wait for the cluster's metadata on the driver",
        DEFAULT_CONNECT_TIMEOUT_S,
        minimum=0.1,
    ),
)


class KafkaTarget:
    """Where a connector's cluster is and how to talk to it (JSON-safe options only)."""

    def __init__(self, opts: Parsed):
        self.bootstrap_servers: str = opts["bootstrap.servers"]
        self.config: dict[str, Any] = opts["kafka.config"]
        self.connect_timeout_s: float = opts["connection_check_timeout_sec"]

    def describe(self) -> str:
        return f"Kafka at {self.bootstrap_servers}"

    def client_config(self, **settings: Any) -> dict[str, Any]:
        """librdkafka's configuration: ours, then the user's ``kafka.config`` on top."""
        return {"bootstrap.servers": self.bootstrap_servers, **settings, **self.config}

    def consumer(self, **settings: Any) -> Any:
        from confluent_kafka import Consumer, KafkaException

        try:
            return Consumer(self.client_config(**settings))
        except (KafkaException, ValueError, TypeError) as err:
            raise ConfigError("kafka.config", f"librdkafka refused the configuration: {reason(err)}") from None

    def admin(self) -> Any:
        """A client of the producer kind, for metadata: a sink's ``kafka.config`` holds
        producer settings, which a consumer would print a warning about, one per setting."""
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        try:
            return AdminClient(self.client_config())
        except (KafkaException, ValueError, TypeError) as err:
            raise ConfigError("kafka.config", f"librdkafka refused the configuration: {reason(err)}") from None


def reason(err: BaseException) -> str:
    """librdkafka's message for an error, one line."""
    args = getattr(err, "args", ())
    inner = args[0] if args else err
    text = inner.str() if hasattr(inner, "str") else str(inner)
    return " ".join(str(text).split()) or type(err).__name__


def metadata(consumer: Any, target: KafkaTarget) -> Any:
    """The cluster's metadata, or a ``ConnectorError`` naming the servers within the timeout."""
    from confluent_kafka import KafkaException

    try:
        return consumer.list_topics(timeout=target.connect_timeout_s)
    except KafkaException as err:
        raise ConnectorError(
            f"{target.describe()}: no answer within {target.connect_timeout_s:g} s ({reason(err)})"
        ) from None


def while_leaders_move(target: KafkaTarget, call: Callable[[], T]) -> T:
    """``call()`` (a request a partition's leader answers: offsets), asked again while the
    cluster says that leader is not ready, up to ``connection_check_timeout_sec``. A topic
    is in the metadata as soon as the controller created it, and its partitions' leaders
    answer a moment later ("Not leader for partition"), as while a leader moves: a job
    planned, or a restore discovering topics, right then must wait, not fail. Any other
    answer is raised at once."""
    from confluent_kafka import KafkaError, KafkaException

    not_ready = {
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError.OFFSET_NOT_AVAILABLE,
    }
    deadline = time.monotonic() + target.connect_timeout_s
    while True:
        try:
            return call()
        except KafkaException as err:
            error = err.args[0] if err.args else None
            code = error.code() if isinstance(error, KafkaError) else None
            if code not in not_ready or time.monotonic() >= deadline:
                raise
        time.sleep(LEADER_RETRY_S)
