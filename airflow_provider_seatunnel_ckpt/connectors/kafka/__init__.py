"""Kafka connectors (librdkafka through confluent-kafka): the ``Kafka`` source."""
