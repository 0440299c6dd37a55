"""Kafka consumers seen from the services, on the real broker: a process is ready once its consumers joined their
group and alive while their consume loops run; a group's lag is the messages it has not committed yet, read with an
admin client (so also while none of its consumers runs)."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from confluent_kafka import Producer
from faststream import AckPolicy
from faststream.confluent import KafkaMessage

from cbt.adapters import kafka_admin
from cbt.adapters.kafka_bus import commit_through, make_broker
from cbt.adapters.kafka_consumers import consume_loops_alive, group_lag, joined_group
from cbt.config.settings import KafkaConfig
from tests.conftest import Endpoints

pytestmark = pytest.mark.integration


async def until(condition: object, timeout_s: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not condition():  # type: ignore[operator]
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.2)


def test_group_membership_liveness_and_lag_follow_the_real_consumer(endpoints: Endpoints) -> None:
    topic = f"probe-test.task-requested.{uuid.uuid4().hex[:8]}"
    kafka_admin.ensure_topics(endpoints.kafka_bootstrap, [topic])
    producer = Producer({"bootstrap.servers": endpoints.kafka_bootstrap})
    for i in range(10):
        producer.produce(topic, f"m{i}".encode(), partition=i % 8)
    assert producer.flush(30) == 0

    async def scenario() -> None:
        received: list[KafkaMessage] = []
        broker = make_broker(KafkaConfig(bootstrap_servers=endpoints.kafka_bootstrap), "probe-test")
        admin = kafka_admin.admin_client(endpoints.kafka_bootstrap)
        group = f"probe-test-{uuid.uuid4().hex[:8]}"

        def lag() -> int:
            return group_lag(admin, group, topic)

        assert await asyncio.to_thread(lag) == 10, "a group that never committed is behind by every message"
        subscriber = broker.subscriber(topic, group_id=group,
                                       auto_offset_reset="earliest", ack_policy=AckPolicy.MANUAL,
                                       polling_interval=0.01)

        async def keep(message: KafkaMessage) -> None:
            received.append(message)

        subscriber(keep)
        ready, alive = joined_group([subscriber]), consume_loops_alive([subscriber])
        with pytest.raises(ConnectionError, match="not yet in its consumer group"):
            await ready()
        async with broker:
            await broker.start()
            await until(lambda: len(received) == 10)
            await ready()  # joined: no error
            assert alive() is None
            assert await asyncio.to_thread(lag) == 10, "received is not committed"
            for message in received[:4]:
                await commit_through(message)
            assert await asyncio.to_thread(lag) == 6
            subscriber.tasks[0].cancel()  # the consume loop ends
            await asyncio.sleep(0.1)
            assert alive() == f"consume loop ended: {topic}"
        assert await asyncio.to_thread(lag) == 6, "the group's lag is known with no consumer running"

    try:
        asyncio.run(scenario())
    finally:
        kafka_admin.delete_topics(endpoints.kafka_bootstrap, [topic])
