"""FastStream on confluent-kafka: the broker every service builds from config, and the publisher port."""

from __future__ import annotations

import asyncio
from contextlib import AbstractContextManager
from typing import Any

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka import Message as RawMessage
from faststream.confluent import KafkaBroker, KafkaMessage
from opentelemetry.trace import Span

from cbt.config.settings import KafkaConfig
from cbt.contract.messages import Message
from cbt.observability.tracing import processing, sending

JSON_HEADERS = {"content-type": "application/json"}
POLL_S = 0.1
"""How long one poll of a service's consumer waits for a message; it returns as soon as one arrives, so this is no
delay. At 0.01 s a worker's eight idle consumers took 7 % of a core in polling, on machines where Spark's jobs want
every core; what queues behind a poll on the consumer's one thread (a commit, a seek) waits at most this long."""


def make_broker(config: KafkaConfig, client_id: str) -> KafkaBroker:
    """A broker for one service process; ``kafka.client`` settings (security, SASL…) pass through unchanged, but
    ``security.protocol`` in lower case: librdkafka takes any case (Kafka's docs write ``SASL_SSL``), FastStream's
    check of it only lower case, and would fail the connection."""
    extra: Any = dict(config.client)  # ConfluentConfig is a TypedDict of librdkafka keys; ours are user-given
    if isinstance(extra.get("security.protocol"), str):
        extra["security.protocol"] = extra["security.protocol"].lower()
    return KafkaBroker(
        config.bootstrap_servers, client_id=client_id, acks="all", linger_ms=0, enable_idempotence=True,
        config=extra or None, logger=None,
    )


class BrokerPublisher:
    """``Publisher`` port over a started FastStream broker; returns after the broker acknowledged the write."""

    def __init__(self, broker: KafkaBroker) -> None:
        self.broker = broker

    async def publish(self, topic: str, message: Message, key: str) -> None:
        """Inside a ``send <topic>`` span whose W3C trace context travels in the message's headers."""
        with sending(topic, key) as trace_headers:
            await self.broker.publish(message.encode(), topic, key=key.encode(),
                                      headers={**JSON_HEADERS, **trace_headers})


async def commit_through(message: KafkaMessage) -> None:
    """Commit ``message``'s partition up to and including it — not the consumer's whole position, which may
    already include later messages still being worked on (``cbt.concurrency.ordered_acks``). Synchronous: returns
    once the broker stored the offset."""
    raw = _single(message)
    offsets = [TopicPartition(raw.topic(), raw.partition(), raw.offset() + 1)]
    consumer: Consumer = message.consumer.consumer  # type: ignore[attr-defined]  # the confluent consumer inside
    await asyncio.to_thread(consumer.commit, offsets=offsets, asynchronous=False)


async def rewind_to(message: KafkaMessage) -> None:
    """Make the consumer deliver ``message`` (and everything after it in its partition) again."""
    raw = _single(message)
    await message.consumer.seek(topic=raw.topic(), partition=raw.partition(), offset=raw.offset())


def process_span(message: KafkaMessage, **attributes: str | int) -> AbstractContextManager[Span]:
    """The ``process <topic>`` span of a consumed message, child of the span that published it."""
    raw = _single(message)
    key = raw.key()
    return processing(raw.topic(), dict(raw.headers() or ()),
                      key.decode("utf-8", errors="replace") if isinstance(key, bytes) else None, **attributes)


def partition_of(message: KafkaMessage) -> tuple[str, int]:
    """The topic partition a message came from: the unit of ordering, commits and rewinds."""
    raw = _single(message)
    return raw.topic(), raw.partition()


def delivery_of(message: KafkaMessage) -> tuple[str, int, int]:
    """Where a message was read: its topic, partition and offset (a redelivery has the same)."""
    raw = _single(message)
    return raw.topic(), raw.partition(), raw.offset()


def _single(message: KafkaMessage) -> RawMessage:
    raw = message.raw_message
    assert isinstance(raw, RawMessage), "batch subscribers are not used for tasks"
    return raw
