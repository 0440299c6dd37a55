"""FastStream on confluent-kafka: the broker every service builds from config, and the publisher port."""

from __future__ import annotations

from typing import Any

from faststream.confluent import KafkaBroker

from cbt.config import KafkaConfig
from cbt.messages import Message

JSON_HEADERS = {"content-type": "application/json"}


def make_broker(config: KafkaConfig, client_id: str) -> KafkaBroker:
    """A broker for one service process; ``kafka.client`` settings (security, SASL…) pass through unchanged."""
    extra: Any = dict(config.client)  # ConfluentConfig is a TypedDict of librdkafka keys; ours are user-given
    return KafkaBroker(
        config.bootstrap_servers, client_id=client_id, acks="all", linger_ms=0, enable_idempotence=True,
        config=extra or None, logger=None,
    )


class BrokerPublisher:
    """``Publisher`` port over a started FastStream broker; returns after the broker acknowledged the write."""

    def __init__(self, broker: KafkaBroker) -> None:
        self.broker = broker

    async def publish(self, topic: str, message: Message, key: str) -> None:
        await self.broker.publish(message.encode(), topic, key=key.encode(), headers=JSON_HEADERS)
