"""The EXACTLY_ONCE committer's connection: the security settings of ``kafka.config``
reach kafka-python under its names; librdkafka's tuning properties stay behind."""

from __future__ import annotations

from airflow_provider_seatunnel_ckpt.connectors.kafka.client import CONNECTION_OPTIONS, KafkaTarget
from airflow_provider_seatunnel_ckpt.connectors.kafka.transactions import (
    kafka_python_config,
)
from airflow_provider_seatunnel_ckpt.connectors.options import OptionTable


def target(**config: object) -> KafkaTarget:
    return KafkaTarget(
        OptionTable(*CONNECTION_OPTIONS).parse(
            "Kafka",
            {"bootstrap.servers": "b1:9092,b2:9093", "kafka.config": config},
        )
    )


def test_security_settings_are_translated_and_tuning_is_left_to_librdkafka() -> None:
    config = kafka_python_config(
        target(
            **{
                "security.protocol": "sasl_ssl",
                "sasl.mechanisms": "SCRAM-SHA-512",
                "sasl.username": "etl",
                "sasl.password": "s3cret",
                "ssl.ca.location": "/etc/ca.pem",
                "client.id": "orders",
                "linger.ms": 20,
                "queue.buffering.max.messages": 10,
            }
        )
    )
    assert config["bootstrap_servers"] == ["b1:9092", "b2:9093"]
    assert {
        k: config[k]
        for k in (
            "security_protocol",
            "sasl_mechanism",
            "sasl_plain_username",
            "sasl_plain_password",
            "ssl_cafile",
            "client_id",
        )
    } == {
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "etl",
        "sasl_plain_password": "s3cret",
        "ssl_cafile": "/etc/ca.pem",
        "client_id": "orders",
    }
    assert not {"linger.ms", "linger_ms", "queue.buffering.max.messages"} & set(config)


def test_without_kafka_config_only_the_servers_and_timeouts_are_set() -> None:
    assert set(kafka_python_config(target())) == {
        "bootstrap_servers",
        "request_timeout_ms",
        "api_version_auto_timeout_ms",
    }


def test_broker_answers_are_sorted_into_retry_forgotten_and_lost() -> None:
    import kafka.errors as errors
    import pytest

    from airflow_provider_seatunnel_ckpt.connectors.kafka.transactions import (
        ForgottenTransaction,
        Retriable,
        _raise_for,
    )
    from airflow_provider_seatunnel_ckpt.errors import ConnectorError

    _raise_for(errors.NoError.errno, "committing")
    for retry in (
        errors.ConcurrentTransactionsError,
        errors.CoordinatorLoadInProgressError,
        errors.NotCoordinatorError,
    ):
        with pytest.raises(Retriable):
            _raise_for(retry.errno, "committing")
    with pytest.raises(ForgottenTransaction):
        _raise_for(errors.InvalidProducerIdMappingError.errno, "committing")
    for lost in (errors.ProducerFencedError, errors.InvalidProducerEpochError, errors.InvalidTxnStateError):
        with pytest.raises(ConnectorError, match="^Kafka sink: committing: .*aborted"):
            _raise_for(lost.errno, "committing")
