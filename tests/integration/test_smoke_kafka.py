"""Kafka behaves as the services rely on: a FastStream consumer group commits only after handling."""

from __future__ import annotations

import asyncio
import json

import pytest
from confluent_kafka import Consumer, Producer
from faststream import AckPolicy
from faststream.confluent import KafkaBroker

from cbt.contract.topics import Topics
from tests.conftest import Endpoints
from tests.integration.kafka_checks import committed_offset

pytestmark = pytest.mark.integration


def _produce(bootstrap: str, topic: str, body: dict[str, object]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(topic, json.dumps(body).encode(), key=b"k")
    assert producer.flush(10) == 0


async def _consume_until(broker: KafkaBroker, seen: list[int], count: int, timeout_s: float = 30.0) -> None:
    async with broker:
        await broker.start()
        async with asyncio.timeout(timeout_s):
            while len(seen) < count:
                await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)  # let the commit after the last handling reach the broker


def test_failed_handler_gets_the_message_again_and_offset_is_committed_only_after(
    endpoints: Endpoints, topic_prefix: str
) -> None:
    topic = Topics(topic_prefix).interval_completed
    group = topic_prefix + "smoke"
    _produce(endpoints.kafka_bootstrap, topic, {"n": 1})
    attempts: list[int] = []
    broker = KafkaBroker(endpoints.kafka_bootstrap)

    @broker.subscriber(topic, group_id=group, auto_offset_reset="earliest", ack_policy=AckPolicy.NACK_ON_ERROR)
    async def handle(body: dict[str, int]) -> None:
        attempts.append(body["n"])
        if len(attempts) == 1:
            raise RuntimeError("first attempt fails")

    asyncio.run(_consume_until(broker, attempts, 2))

    assert attempts == [1, 1]
    assert committed_offset(endpoints.kafka_bootstrap, group, topic) == 1


def test_uncommitted_message_is_redelivered_to_the_next_consumer_of_the_group(
    endpoints: Endpoints, topic_prefix: str
) -> None:
    topic = Topics(topic_prefix).interval_completed
    group = topic_prefix + "crash"
    _produce(endpoints.kafka_bootstrap, topic, {"n": 7})
    first = Consumer({"bootstrap.servers": endpoints.kafka_bootstrap, "group.id": group,
                      "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    first.subscribe([topic])
    message = None
    for _ in range(100):
        message = first.poll(0.2)
        if message is not None and not message.error():
            break
    assert message is not None and json.loads(message.value()) == {"n": 7}
    first.close()  # "crashes" before handling completes: nothing committed

    seen: list[int] = []
    broker = KafkaBroker(endpoints.kafka_bootstrap)

    @broker.subscriber(topic, group_id=group, auto_offset_reset="earliest", ack_policy=AckPolicy.NACK_ON_ERROR)
    async def handle(body: dict[str, int]) -> None:
        seen.append(body["n"])

    asyncio.run(_consume_until(broker, seen, 1))
    assert seen == [7]
