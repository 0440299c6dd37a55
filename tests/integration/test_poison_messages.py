"""Poison messages on real Kafka: a message whose handling keeps failing is set aside after its attempts — through
the coordinator's and invalidator's kind of consumer (FastStream, NACK on error: the broker delivers it again) and
through the worker's pipelined consumer (its chain rewinds) — and the messages after it are handled and committed."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import pytest
from confluent_kafka import Producer
from faststream import AckPolicy
from faststream.confluent import KafkaBroker, KafkaMessage

from cbt.adapters.kafka_bus import commit_through, delivery_of, partition_of, rewind_to
from cbt.concurrency.ordered_acks import InOrderAcks
from cbt.contract.messages import TaskRequested
from cbt.contract.topics import Topics
from cbt.service.poison import PoisonGuard
from cbt.worker.consumer import IN_FLIGHT, PipelinedConsumer
from cbt.worker.runner import Outcome
from tests.conftest import Endpoints
from tests.integration.kafka_checks import committed_offset

pytestmark = pytest.mark.integration
POISON = 1
MESSAGES = 4


def _produce(bootstrap: str, topic: str, bodies: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for body in bodies:
        producer.produce(topic, body, key=b"one-partition", partition=0)
    assert producer.flush(10) == 0


async def _until(condition: Callable[[], bool], timeout_s: float = 60) -> None:
    async with asyncio.timeout(timeout_s):
        while not condition():
            await asyncio.sleep(0.05)


def test_a_failing_event_is_set_aside_and_the_events_after_it_are_handled(endpoints: Endpoints,
                                                                            topic_prefix: str) -> None:
    kafka, topic = endpoints.kafka_bootstrap, Topics(topic_prefix).invalidation
    group = f"{topic}.poison"
    _produce(kafka, topic, [json.dumps({"n": n}).encode() for n in range(MESSAGES)])
    guard = PoisonGuard("invalidator", max_attempts=3, backoff_initial_s=0.05)
    attempts: list[int] = []
    handled: list[int] = []
    aside: list[tuple[int, str]] = []

    async def handle(body: bytes) -> None:
        n = json.loads(body)["n"]
        attempts.append(n)
        if n == POISON:
            raise KeyError("a field the handler did not expect")
        handled.append(n)

    async def set_aside(body: bytes, reason: str) -> None:
        aside.append((json.loads(body)["n"], reason))

    async def scenario() -> None:
        broker = KafkaBroker(kafka, logger=None)

        @broker.subscriber(topic, group_id=group, auto_offset_reset="earliest", ack_policy=AckPolicy.NACK_ON_ERROR,
                           polling_interval=0.01)
        async def on_event(message: KafkaMessage) -> None:
            await guard.handle(delivery_of(message), message.body, lambda: handle(message.body), set_aside)

        async with broker:
            await broker.start()
            await _until(lambda: handled[-1:] == [MESSAGES - 1])
            await _until(lambda: committed_offset(kafka, group, topic) == MESSAGES)

    asyncio.run(scenario())
    assert attempts.count(POISON) == 3 and [n for n, _ in aside] == [POISON]
    assert "invalidator: handling failed 3 times (the last: KeyError" in aside[0][1]
    assert handled == [n for n in range(MESSAGES) if n != POISON]


class FailingRunner:
    """Raises for the poison task (not a model's failure: those become task-failed), handles the others."""

    def __init__(self) -> None:
        self.attempts: list[int | None] = []
        self.handled: list[int | None] = []

    def why_unusable(self, task: TaskRequested) -> str | None:
        return None

    async def handle(self, task: TaskRequested) -> Outcome:
        self.attempts.append(task.position)
        if task.position == POISON * 60:
            raise TypeError("an unforeseen shape")
        self.handled.append(task.position)
        return "completed"


def test_a_task_whose_handling_keeps_failing_is_set_aside_and_the_pool_goes_on(endpoints: Endpoints,
                                                                                 topic_prefix: str) -> None:
    kafka, topic = endpoints.kafka_bootstrap, Topics(topic_prefix).task_requested("default")
    group = f"{topic}.poison"
    tasks = [TaskRequested(task_id=f"an.minute:{60 * n}:60", model="an.minute", position=60 * n, interval=60)
             for n in range(MESSAGES)]
    _produce(kafka, topic, [t.encode() for t in tasks])
    runner, aside = FailingRunner(), []

    async def reject(body: bytes, reason: str) -> None:
        aside.append((TaskRequested.model_validate_json(body).position, reason))

    async def scenario() -> None:
        broker = KafkaBroker(kafka, logger=None)
        consumer = PipelinedConsumer(runner, InOrderAcks(commit_through, rewind_to, IN_FLIGHT, partition_of),
                                     asyncio.Event(), reject, guard=PoisonGuard("worker", 3, backoff_initial_s=0.05))

        @broker.subscriber(topic, group_id=group, auto_offset_reset="earliest", ack_policy=AckPolicy.MANUAL,
                           polling_interval=0.01)
        async def on_task(message: KafkaMessage) -> None:
            await consumer.on_message(message)

        async with broker:
            await broker.start()
            await _until(lambda: bool(aside) and set(runner.handled) >= {60 * n for n in range(MESSAGES)} - {60})
            await _until(lambda: committed_offset(kafka, group, topic) == MESSAGES)

    asyncio.run(scenario())
    assert runner.attempts.count(POISON * 60) == 3
    assert [position for position, _ in aside] == [POISON * 60] and "worker: handling failed 3 times" in aside[0][1]
