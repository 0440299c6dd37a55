"""The worker's pipelined consumer on real Kafka: offsets are committed per message, in arrival order, only once
each message's remaining work is done; a failure rewinds; a crash redelivers everything not yet committed."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable

import pytest
from confluent_kafka import Producer
from faststream import AckPolicy
from faststream.confluent import KafkaBroker, KafkaMessage

from cbt.adapters.kafka_bus import commit_through, partition_of, rewind_to
from cbt.concurrency.ordered_acks import InOrderAcks
from cbt.contract.topics import Topics
from tests.conftest import Endpoints
from tests.integration.kafka_checks import committed_offset

pytestmark = pytest.mark.integration
MESSAGES = 4

Work = Callable[[int, int], Awaitable[None]]
"""The remaining work of message ``n`` on its ``k``-th delivery."""


def _produce(bootstrap: str, topic: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for n in range(MESSAGES):
        producer.produce(topic, json.dumps({"n": n}).encode(), key=b"one-partition")
    assert producer.flush(10) == 0


async def _consume(bootstrap: str, topic: str, group: str, work: Work, until: Callable[[list[int]], bool],
                   drain: bool) -> list[int]:
    """Deliveries in order; stops when ``until`` holds — draining the chain first, or not (a crash)."""
    delivered: list[int] = []
    broker = KafkaBroker(bootstrap, logger=None)
    chain: InOrderAcks[KafkaMessage] = InOrderAcks(commit_through, rewind_to, 2, partition_of)

    @broker.subscriber(topic, group_id=group, auto_offset_reset="earliest", ack_policy=AckPolicy.MANUAL,
                       polling_interval=0.01)
    async def handle(message: KafkaMessage) -> None:
        generation = chain.generation_of(message)
        n = json.loads(message.body)["n"]
        delivered.append(n)
        await chain.submit(message, work(n, delivered.count(n)), generation)

    async with broker:
        await broker.start()
        async with asyncio.timeout(60):
            while not until(delivered):
                await asyncio.sleep(0.05)
        if drain:
            await chain.drain()
    return delivered


@pytest.fixture
def topic(endpoints: Endpoints, topic_prefix: str) -> str:
    name = Topics(topic_prefix).interval_completed  # one partition, created by the fixture
    _produce(endpoints.kafka_bootstrap, name)
    return name


def test_slow_first_message_is_committed_before_the_later_ones(endpoints: Endpoints, topic: str) -> None:
    kafka, group = endpoints.kafka_bootstrap, f"{topic}.g1"

    async def work(n: int, delivery: int) -> None:
        await asyncio.sleep(0.5 if n == 0 else 0.0)

    delivered = asyncio.run(_consume(kafka, topic, group, work, lambda d: len(d) == MESSAGES,
                                     drain=True))
    assert delivered == [0, 1, 2, 3]
    assert committed_offset(kafka, group, topic) == MESSAGES


def test_a_crash_redelivers_from_the_first_message_not_recorded(endpoints: Endpoints, topic: str) -> None:
    kafka, group = endpoints.kafka_bootstrap, f"{topic}.g2"
    never = asyncio.Event()

    async def stuck_on_one(n: int, delivery: int) -> None:
        if n == 1:
            await never.wait()  # its recording never finishes: the process dies first

    asyncio.run(_consume(kafka, topic, group, stuck_on_one, lambda d: len(d) >= 3, drain=False))
    assert committed_offset(kafka, group, topic) == 1, "2 finished, but 1 before it did not"

    async def fine(n: int, delivery: int) -> None:
        return None

    again = asyncio.run(_consume(kafka, topic, group, fine, lambda d: len(d) == 3, drain=True))
    assert again == [1, 2, 3]
    assert committed_offset(kafka, group, topic) == MESSAGES


def test_a_failed_recording_rewinds_and_the_message_comes_again(endpoints: Endpoints, topic: str) -> None:
    kafka, group = endpoints.kafka_bootstrap, f"{topic}.g3"

    async def first_try_of_one_fails(n: int, delivery: int) -> None:
        if n == 1 and delivery == 1:
            raise RuntimeError("admin table unavailable")

    delivered = asyncio.run(_consume(kafka, topic, group, first_try_of_one_fails,
                                     lambda d: d.count(1) == 2 and d[-1] == MESSAGES - 1, drain=True))
    assert delivered[:2] == [0, 1] and delivered.count(1) == 2
    assert committed_offset(kafka, group, topic) == MESSAGES


def test_failures_on_two_partitions_are_both_delivered_again(endpoints: Endpoints, topic_prefix: str) -> None:
    """One consumer owns both partitions; the first delivery of one message on each fails. Both come again and
    every offset ends committed (before: only the first partition was rewound, the other message was skipped)."""
    kafka = endpoints.kafka_bootstrap
    topic = Topics(topic_prefix).task_requested()  # several partitions
    group = f"{topic}.g4"
    producer = Producer({"bootstrap.servers": kafka})
    for partition, numbers in ((0, (0, 1)), (1, (10, 11))):
        for n in numbers:
            producer.produce(topic, json.dumps({"n": n}).encode(), partition=partition)
    assert producer.flush(10) == 0

    async def first_try_of_each_head_fails(n: int, delivery: int) -> None:
        if n in (0, 10) and delivery == 1:
            await asyncio.sleep(0.5)  # both partitions' messages arrive before either failure settles
            raise RuntimeError("admin table unavailable")

    def again_with_its_successor(delivered: list[int], head: int) -> bool:
        deliveries = [i for i, n in enumerate(delivered) if n == head]
        return len(deliveries) == 2 and head + 1 in delivered[deliveries[1]:]

    delivered = asyncio.run(_consume(kafka, topic, group, first_try_of_each_head_fails,
                                     lambda d: again_with_its_successor(d, 0) and again_with_its_successor(d, 10),
                                     drain=True))
    assert delivered.count(0) == delivered.count(10) == 2
    assert committed_offset(kafka, group, topic, 0) == 2
    assert committed_offset(kafka, group, topic, 1) == 2
