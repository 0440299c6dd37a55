"""``kafka.client`` reaches the services' Kafka client as Kafka's documentation writes it: ``security.protocol:
SASL_SSL`` (librdkafka takes any case) passes FastStream's own check, which takes lower case only and would
otherwise fail every service's connection at start."""

from __future__ import annotations

import pytest
from faststream.confluent.helpers.config import ConfluentFastConfig

from cbt.adapters.kafka_bus import make_broker
from cbt.config.settings import KafkaConfig


@pytest.mark.parametrize("written", ["SASL_SSL", "sasl_ssl", "Sasl_Ssl"])
def test_security_protocol_in_any_case_reaches_the_producer_and_consumers(written: str) -> None:
    client: dict[str, str | int | float | bool] = {
        "security.protocol": written,
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "cbt",
        "sasl.password": "secret",
    }
    connection: ConfluentFastConfig = make_broker(
        KafkaConfig(client=client), "test"
    ).config.broker_config.connection_config
    assert connection.producer_config["security.protocol"] == "sasl_ssl"
    assert connection.consumer_config["sasl.password"] == "secret"
