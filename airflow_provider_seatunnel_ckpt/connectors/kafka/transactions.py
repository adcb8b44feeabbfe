"""Ending a Kafka transaction that another process began: the EXACTLY_ONCE sink's commit.

A subtask's producer prepares an epoch's transaction (its records are written, not yet
visible to ``read_committed`` readers) and the driver commits it after the checkpoint
completed, possibly a new driver after a crash. librdkafka cannot end a transaction it did
not begin (a new producer with the same ``transactional.id`` aborts it), so the driver
sends the protocol's ``EndTxn`` itself, naming the producer id and epoch the subtask saved
in the checkpoint: what Flink's exactly-once sink does through the Java client's internals.
The requests come from kafka-python's protocol layer; the connection uses the security
settings of the connector's ``kafka.config`` (``LIBRDKAFKA_TO_KAFKA_PYTHON``).
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Mapping
from typing import Any

import tenacity

from ...errors import ConfigError, ConnectorError
from .client import KafkaTarget

log = logging.getLogger(__name__)

#: librdkafka property -> kafka-python client argument: the settings a connection needs to
#: authenticate; librdkafka's tuning properties have no meaning for these few requests
LIBRDKAFKA_TO_KAFKA_PYTHON = {
    "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.mechanisms": "sasl_mechanism",
    "sasl.username": "sasl_plain_username",
    "sasl.password": "sasl_plain_password",
    "sasl.kerberos.service.name": "sasl_kerberos_service_name",
    "ssl.ca.location": "ssl_cafile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
    "ssl.key.password": "ssl_password",
    "client.id": "client_id",
}
#: seconds one request may take, and how long a retriable error (coordinator moving or
#: loading, a concurrent transaction still completing) is retried before giving up
REQUEST_TIMEOUT_S = 30.0
RETRY_FOR_S = 120.0
_TRANSACTION_COORDINATOR = 1  # FindCoordinator key_type


#: when set, every transaction decision (start, fence, prepare, commit, abort) is appended
#: to this file as a JSON line, from the driver and every subtask: an audit trail of which
#: transactional id was claimed when (docs/kafka.md; the sink's chaos test checks it)
AUDIT_ENV = "SEATUNNEL_CKPT_KAFKA_TRANSACTION_LOG"


def audit(event: str, transactional_id: str) -> None:
    path = os.environ.get(AUDIT_ENV)
    if path:
        line = json.dumps({"event": event, "id": transactional_id, "at": time.time(), "process": os.getpid()})
        with open(path, "a") as log_file:  # one short append per line: lines from processes do not mix
            log_file.write(line + "\n")


class Retriable(Exception):
    """The broker asked to try again (or the connection broke): retried by tenacity."""


class CoordinatorNotReady(Retriable):
    """A broker answered, but the transaction coordinator is not ready yet: a new cluster
    creates its transaction log on the first FindCoordinator, and a coordinator moving to
    another broker loads its state first."""


#: how long the driver's check waits for a coordinator that is not ready yet
CHECK_WAITS_FOR_S = 30.0
#: the producer setting (in ``kafka.config``) of how long the broker keeps a transaction open
TRANSACTION_TIMEOUT = "transaction.timeout.ms"


class ForgottenTransaction(Exception):
    """The broker has no record of the transactional id: it expired
    (``transactional.id.expiration.ms``, 7 days by default, after the id's last use)."""


def kafka_python_config(target: KafkaTarget) -> dict[str, Any]:
    config: dict[str, Any] = {
        "bootstrap_servers": target.bootstrap_servers.split(","),
        "request_timeout_ms": int(REQUEST_TIMEOUT_S * 1000),
        "api_version_auto_timeout_ms": int(target.connect_timeout_s * 1000),
    }
    for key, value in target.config.items():
        name = LIBRDKAFKA_TO_KAFKA_PYTHON.get(key)
        if name is not None:
            config[name] = value.upper() if name in ("security_protocol", "sasl_mechanism") else value
    return config


class TransactionCoordinators:
    """One connection pool to the cluster; ends or fences transactions by id."""

    def __init__(self, target: KafkaTarget, request_timeout_s: float = REQUEST_TIMEOUT_S):
        self.target = target
        self.request_timeout_s = request_timeout_s
        self._client: Any = None

    def _connected(self) -> Any:
        from kafka.client_async import KafkaClient
        from kafka.errors import KafkaError

        if self._client is None:
            try:
                self._client = KafkaClient(**kafka_python_config(self.target))
            except KafkaError as err:  # no broker answered (the message names no secret)
                raise Retriable(f"{type(err).__name__}: {err}") from None
        return self._client

    def _call(self, node: Any, request: Any) -> Any:
        client = self._connected()
        deadline = time.monotonic() + self.request_timeout_s
        while not client.ready(node):
            if time.monotonic() > deadline:
                raise Retriable(f"broker {node} of {self.target.describe()} not reachable")
            client.poll(timeout_ms=100)
            if client.connection_failed(node):
                # Refused: the broker is gone. Its coordinators move to another within the
                # cluster's session timeout; asking for the coordinator again finds it, where
                # waiting out the request timeout here stalled every commit (and checkpoint).
                raise Retriable(f"broker {node} of {self.target.describe()} refused the connection")
        future = client.send(node, request)
        client.poll(future=future, timeout_ms=self.request_timeout_s * 1000)
        if not future.is_done:
            raise Retriable(f"no answer from broker {node} within {self.request_timeout_s:g} s")
        if future.failed():
            raise Retriable(f"{type(future.exception).__name__}: {future.exception}")
        return future.value

    def _coordinator(self, transactional_id: str) -> Any:
        from kafka.protocol.find_coordinator import FindCoordinatorRequest

        client = self._connected()
        node = client.least_loaded_node()
        if node is None:
            raise Retriable(f"no broker of {self.target.describe()} is reachable")
        version = client.api_version(FindCoordinatorRequest, max_version=2)
        response = self._call(node, FindCoordinatorRequest[version](transactional_id, _TRANSACTION_COORDINATOR))
        what = f"finding the coordinator of transaction {transactional_id!r}"
        _raise_if_not_ready(response.error_code, what)
        _raise_for(response.error_code, what)
        node = client.cluster.add_coordinator(response, "transaction", transactional_id)
        # kafka-python keeps an entry per transactional id for good; ids change every epoch,
        # so a long-running driver would keep millions. The broker's node entry stays.
        client.cluster._coordinators.pop(("transaction", transactional_id), None)
        return node

    def _retrying(
        self, what: str, action: Any, retry_on: type[Exception] = Retriable, for_s: float = RETRY_FOR_S
    ) -> Any:
        for attempt in tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(retry_on),
            stop=tenacity.stop_after_delay(for_s),
            wait=tenacity.wait_exponential(multiplier=0.05, max=2),
            before_sleep=lambda state: log.info("Kafka sink: %s: %s; retrying", what, state.outcome.exception()),
            reraise=True,
        ):
            with attempt:
                return action()
        return None  # unreachable: tenacity re-raises the last error

    def check(self, transactional_id: str, timeout_ms: int) -> None:
        """The driver's check, before Spark starts: find the transaction coordinator of
        ``transactional_id`` and initialise the id as a producer would, with the sink's
        ``timeout_ms``. So this client reaches the cluster with the connector's security
        settings (a commit after the first checkpoint will too), and the brokers accept the
        timeout (at most their ``transaction.max.timeout.ms``; a producer would otherwise
        fail on an executor). A cluster that does not answer fails it at once; one whose
        coordinator is not ready yet (a new cluster's first transaction) is asked again for
        up to ``CHECK_WAITS_FOR_S``."""
        import kafka.errors as errors
        from kafka.protocol.init_producer_id import InitProducerIdRequest

        what = f"initialising transaction {transactional_id!r}"

        def initialise() -> int:
            node = self._coordinator(transactional_id)
            error_code = self._call(node, InitProducerIdRequest[0](transactional_id, timeout_ms)).error_code
            _raise_if_not_ready(error_code, what, also=(errors.ConcurrentTransactionsError,))
            return int(error_code)

        try:
            error_code = self._retrying(what, initialise, CoordinatorNotReady, CHECK_WAITS_FOR_S)
        except Retriable as err:
            raise ConnectorError(
                f"Kafka sink: EXACTLY_ONCE commits go through kafka-python, which could not "
                f"reach the transaction coordinator at {self.target.describe()}: {err}"
            ) from None
        if errors.for_code(error_code) is errors.InvalidTransactionTimeoutError:
            raise ConfigError(
                f"kafka.config.{TRANSACTION_TIMEOUT}",
                f"{timeout_ms} ms is more than the brokers of {self.target.describe()} allow (their "
                "transaction.max.timeout.ms, 900000 by default): lower it, or raise the brokers' ceiling",
            )
        _raise_for(error_code, what)

    def end(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool) -> None:
        """Commit (or abort) the open transaction of ``transactional_id``, made by that
        producer id and epoch. Ending an already ended transaction the same way again is
        answered with success by the broker, so a repeated commit is harmless."""
        from kafka.protocol.end_txn import EndTxnRequest

        what = f"{'committing' if commit else 'aborting'} transaction {transactional_id!r}"

        def end_once() -> None:
            node = self._coordinator(transactional_id)
            version = self._connected().api_version(EndTxnRequest, max_version=2)
            response = self._call(node, EndTxnRequest[version](transactional_id, producer_id, producer_epoch, commit))
            _raise_for(response.error_code, f"{what} (producer id {producer_id}, epoch {producer_epoch})")

        try:
            self._retrying(what, end_once)
            audit("commit" if commit else "abort", transactional_id)
        except Retriable as err:
            raise ConnectorError(f"Kafka sink: {what} at {self.target.describe()} failed: {err}") from None
        except ForgottenTransaction as err:
            # Only a restore commits an id old enough to have expired (a savepoint resumed
            # after a week): it was committed when its checkpoint completed, as every
            # completed checkpoint's are, or failed loudly then. Flink's committer skips it too.
            if not commit:
                return
            log.warning(
                "Kafka sink: %s; it was committed when its checkpoint completed, more than "
                "transactional.id.expiration.ms ago, so there is nothing left to commit",
                err,
            )

    def fence(self, transactional_id: str, timeout_ms: int) -> int:
        """Claim ``transactional_id`` with a new epoch, as a new producer would: the broker
        aborts its open transaction and refuses its older producers from now on. Returns
        the new epoch (0: the id was never used)."""
        from kafka.protocol.init_producer_id import InitProducerIdRequest

        what = f"fencing transaction {transactional_id!r}"

        def fence_once() -> int:
            node = self._coordinator(transactional_id)
            audit("fence", transactional_id)
            response = self._call(node, InitProducerIdRequest[0](transactional_id, timeout_ms))
            _raise_for(response.error_code, what)
            return int(response.producer_epoch)

        try:
            return self._retrying(what, fence_once)
        except Retriable as err:
            raise ConnectorError(f"Kafka sink: {what} at {self.target.describe()} failed: {err}") from None

    def open_transactions(self, prefix: str) -> list[str] | None:
        """The ids starting with ``prefix`` of every transaction the brokers hold open
        (``open_transactions.py``; each broker is asked, as each coordinates its share),
        or None when they predate the request (Kafka before 3.0)."""
        from kafka.errors import IncompatibleBrokerVersion
        from kafka.protocol.metadata import MetadataRequest

        from .open_transactions import ListTransactionsRequest, listed_ids, ongoing_request

        what = "listing the open transactions"

        def list_once() -> list[str] | None:
            client = self._connected()
            node = client.least_loaded_node()
            if node is None:
                raise Retriable(f"no broker of {self.target.describe()} is reachable")
            client.cluster.update_metadata(self._call(node, MetadataRequest[1](topics=[])))
            try:
                client.api_version(ListTransactionsRequest, max_version=0)
            except IncompatibleBrokerVersion:
                return None
            found: list[str] = []
            for broker in sorted(client.cluster.brokers(), key=lambda b: b.nodeId):
                response = self._call(broker.nodeId, ongoing_request())
                _raise_if_not_ready(response.error_code, what)
                _raise_for(response.error_code, what)
                found.extend(listed_ids(response, prefix))
            return found

        try:
            return self._retrying(what, list_once)
        except Retriable as err:
            raise ConnectorError(f"Kafka sink: {what} at {self.target.describe()} failed: {err}") from None

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def _raise_if_not_ready(error_code: int, what: str, also: tuple[type, ...] = ()) -> None:
    """``CoordinatorNotReady`` for the answers that say "ask again shortly", from a broker
    that did answer (a coordinator being created, loading or moving; ``also``: more)."""
    import kafka.errors as errors

    error = errors.for_code(error_code)
    not_ready = (errors.CoordinatorNotAvailableError, errors.CoordinatorLoadInProgressError, errors.NotCoordinatorError)
    if error in not_ready + also:
        raise CoordinatorNotReady(f"{what}: {error.__name__}")


def _raise_for(error_code: int, what: str) -> None:
    import kafka.errors as errors

    error = errors.for_code(error_code)
    if error is errors.NoError:
        return
    if error is errors.InvalidProducerIdMappingError:
        raise ForgottenTransaction(f"{what}: the broker no longer knows this transactional id")
    if getattr(error, "retriable", False):
        raise Retriable(f"{what}: {error.__name__}")
    if error in (errors.ProducerFencedError, errors.InvalidProducerEpochError, errors.InvalidTxnStateError):
        raise ConnectorError(
            f"Kafka sink: {what}: {error.__name__}: the broker no longer holds this transaction open; "
            f"it was aborted (its transaction.timeout.ms passed, or a newer producer claimed the id) "
            f"and its records are lost to read_committed readers"
        )
    raise ConnectorError(f"Kafka sink: {what}: {error.__name__}")


def commit_info(
    transactional_id: str,
    producer_id: int,
    producer_epoch: int,
    checkpoint_id: int | None = None,
    subtask: int | None = None,
) -> dict[str, Any]:
    """What a prepared transaction leaves in the checkpoint. ``checkpoint_id`` (the barrier
    that prepared it) lets the committer tell what it committed, ``subtask`` whose ids its
    end-of-job sweep probes; infos written by older releases lack both."""
    info: dict[str, Any] = {
        "transactional_id": transactional_id,
        "producer_id": producer_id,
        "producer_epoch": producer_epoch,
    }
    if checkpoint_id is not None:
        info["checkpoint_id"] = checkpoint_id
    if subtask is not None:
        info["subtask"] = subtask
    return info


def parse_commit_info(info: Mapping[str, Any]) -> tuple[str, int, int]:
    return str(info["transactional_id"]), int(info["producer_id"]), int(info["producer_epoch"])
