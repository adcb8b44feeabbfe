"""The Kafka sink's producing: a record librdkafka could not deliver fails the barrier's
flush, naming the sink, through the one delivery callback every record shares. No broker:
the sink points at a port nobody listens on, and librdkafka gives up on the records after
``message.timeout.ms``."""

from __future__ import annotations

import gc

import pyarrow as pa
import pytest

from airflow_provider_seatunnel_ckpt.connectors import load_sink
from airflow_provider_seatunnel_ckpt.connectors.kafka.producing import Deliveries, Producing
from airflow_provider_seatunnel_ckpt.errors import ConnectorError
from tests.servers.jvm import free_ports


def unreachable_sink() -> object:
    (port,) = free_ports(1)
    return load_sink(
        {
            "plugin_name": "Kafka",
            "bootstrap.servers": f"127.0.0.1:{port}",
            "topic": "nowhere",
            "semantics": "AT_LEAST_ONCE",
            "kafka.config": {"message.timeout.ms": 300, "log_level": 0},
        },
        "sink[0]",
    )


@pytest.mark.timeout(60)
def test_an_undelivered_record_fails_the_barrier_once_and_names_the_sink() -> None:
    sink = unreachable_sink()
    writer = sink.create_writer("job", 0, 0)
    writer.write(pa.record_batch({"id": [1, 2, 3]}))
    with pytest.raises(ConnectorError, match=r"^Kafka sink: a record to topic 'nowhere' at .* was not delivered"):
        writer.prepare_commit(1)
    # reported once: the next epoch starts clean
    writer.write(pa.record_batch({"id": pa.array([], pa.int64())}))
    sink.close()  # nothing left to flush: no second report


def test_deliveries_keep_the_first_failure_until_taken() -> None:
    deliveries = Deliveries()
    deliveries.delivered(None, object())
    assert deliveries.take() is None
    deliveries.delivered("first", object())
    deliveries.delivered("second", object())
    assert deliveries.take() == "first"
    assert deliveries.take() is None


def test_a_dropped_producer_is_freed_without_the_garbage_collector() -> None:
    """The producer holds only the shared callback's ``Deliveries``, never the ``Producing``
    that holds it: dropping the ``Producing`` frees the producer (its librdkafka handle,
    threads and sockets) at once, not at some later collection."""
    import weakref

    sink = unreachable_sink()
    producing = Producing(sink, sink.producer_config())
    gone = weakref.ref(producing)
    gc.disable()
    try:
        del producing
        assert gone() is None
    finally:
        gc.enable()


def test_a_delivery_report_inside_another_never_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    """librdkafka calls the delivery callback inside poll and flush; a second report that
    arrives while the first one is being recorded (a signal handler's, or one left behind
    when a signal's exception escaped the first: a CI run hung so, forever, inside flush)
    must not wait on the first. With a lock held across the first report it deadlocked."""
    import threading

    from airflow_provider_seatunnel_ckpt.connectors.kafka import producing

    deliveries = Deliveries()
    nested = []

    def reason_reporting_again(err: object) -> str:
        if not nested:
            nested.append(err)
            deliveries.delivered("second", None)  # re-entered, on the same thread
        return str(err)

    monkeypatch.setattr(producing, "reason", reason_reporting_again)
    reporter = threading.Thread(target=deliveries.delivered, args=("first", None), daemon=True)
    reporter.start()
    reporter.join(5)
    assert not reporter.is_alive(), "the nested delivery report waited forever"
    assert deliveries.take() in ("first", "second") and deliveries.take() is None
