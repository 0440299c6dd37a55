"""The invalidator on real Kafka, Redis and Spark: bad events are rejected with a reason while the service keeps
running, good ones are applied once; and an invalidation wins over a task that is running when it arrives."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from pyspark.sql import SparkSession
from redis import Redis

from cbt.adapters.delta_admin import admin_from_config
from cbt.adapters.invalidation_publisher import publish_invalidation
from cbt.adapters.kafka_admin import delete_topics
from cbt.adapters.redis_state import RedisState
from cbt.config.settings import Config, admin_database_overrides, load_config
from cbt.contract.messages import InvalidationRejected, Message, TaskFailed, TaskRequested
from cbt.contract.topics import Topics
from cbt.invalidator import app
from cbt.invalidator.handler import InvalidationHandler
from cbt.models.dag import ModelSet
from cbt.models.loader import load_models
from cbt.models.spec import Transformation
from cbt.models.templates import TaskContext
from cbt.planning.live import LiveStateReader
from cbt.planning.planner import Planner
from cbt.scheduling.snapshot import RawBounds
from cbt.scheduling.task_runs import TaskRun
from cbt.state.admin_records import CompletedInterval, RetriedAttempt
from cbt.worker.runner import CompletionRow, TaskRunner, WorkerPorts
from tests.conftest import Endpoints
from tests.twins.memory_record import MemoryRecord
from tests.unit.scheduling.factories import ext, inc, models_of
from tests.unit.test_invalidation_handler import FakeSeen

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
CONFIG = Path(__file__).resolve().parents[2] / "config.yaml"
TOPICS = Topics("t.")


@pytest.fixture
def config(endpoints: Endpoints, topic_prefix: str, redis_prefix: str, spark_database: str) -> Iterator[Config]:
    overrides = {
        "CBT__KAFKA__BOOTSTRAP_SERVERS": endpoints.kafka_bootstrap, "CBT__KAFKA__TOPIC_PREFIX": topic_prefix,
        "CBT__REDIS__URL": endpoints.redis_url, "CBT__REDIS__KEY_PREFIX": redis_prefix,
        "CBT__SPARK__REMOTE": endpoints.spark_remote, **admin_database_overrides(spark_database),
        "CBT__INVALIDATOR__MAX_RANGE": "100000",
    }
    yield load_config(CONFIG, environ={**os.environ, **overrides})
    delete_topics(endpoints.kafka_bootstrap, [f"{topic_prefix}task-requested.python"])


def produce(config: Config, *bodies: bytes) -> None:
    producer = Producer({"bootstrap.servers": config.kafka.bootstrap_servers})
    for body in bodies:
        producer.produce(f"{config.kafka.topic_prefix}invalidation", body, key=b"k")
    assert producer.flush(30) == 0


def read_rejected(config: Config, count: int, timeout_s: float = 60.0) -> list[InvalidationRejected]:
    consumer = Consumer({"bootstrap.servers": config.kafka.bootstrap_servers,
                         "group.id": "reader-" + os.urandom(4).hex(), "auto.offset.reset": "earliest"})
    consumer.subscribe([f"{config.kafka.topic_prefix}invalidation-rejected"])
    out: list[InvalidationRejected] = []
    try:
        for _ in range(int(timeout_s / 0.2)):
            message = consumer.poll(0.2)
            if message is not None and not message.error():
                out.append(InvalidationRejected.model_validate_json(message.value()))
            if len(out) >= count:
                break
    finally:
        consumer.close()
    return out


def good_event(model: str, event_id: str) -> bytes:
    return json.dumps({"id": event_id, "model": model, "start": 1_000, "end": 1_010, "reason": "reorg",
                       "source": "test"}).encode()


BAD_EVENTS: dict[str, tuple[bytes, str]] = {
    "invalid-json": (b'{"id": "x", ', "Invalid JSON"),
    "unknown-model": (good_event("nowhere.nothing", "bad-model"), "no model 'nowhere.nothing'"),
    "end-before-start": (b'{"id":"bad-range","model":"beacon_blocks","start":9,"end":3,"reason":"r","source":"s"}',
                         "end must be greater than start"),
    "wrong-types": (b'{"id":"bad-types","model":"beacon_blocks","start":"1","end":[2],"reason":"r","source":"s"}',
                    "start: Input should be a valid integer"),
    "absurdly-large": (b'{"id":"huge","model":"beacon_blocks","start":0,"end":9000000000000,"reason":"r",'
                       b'"source":"s"}', "invalidator.max_range"),
}


async def run_until(config: Config, models: ModelSet, check: Callable[[], None]) -> None:
    stop = asyncio.Event()
    service = asyncio.create_task(app.serve(config, models, stop))
    try:
        await asyncio.to_thread(check)
        assert not service.done(), "the invalidator stopped"
    finally:
        stop.set()
        await asyncio.wait_for(service, 60)


def test_bad_events_are_rejected_with_reasons_and_a_good_one_is_applied_once(
    config: Config, redis_client: Redis, spark: SparkSession
) -> None:
    models = load_models(config)
    minute = models.resolve("block_propagation_minute")
    two = models.resolve("block_propagation_two_minute")
    state = RedisState(redis_client, config.redis.key_prefix)
    state.coverage.mark_built(0, state.coverage.generation())  # as after the coordinator's start-up rebuild
    admin = admin_from_config(spark, config)
    admin.ensure_tables()
    for model, step in ((minute, 60), (two, 120)):  # as the workers record: durable row, then the hot index
        admin.record_completed([CompletedInterval(model, 0, 3_000, f"{model}:0", task_interval=step)])
        state.coverage.record_completed(model, (0, 3_000), 0)

    def scenario() -> None:
        produce(config, *(body for body, _ in BAD_EVENTS.values()))
        rejected = read_rejected(config, len(BAD_EVENTS))
        by_body = {got.raw: got.reason for got in rejected}  # (rejections are keyed by id: any order)
        for name, (body, reason) in BAD_EVENTS.items():
            assert reason in by_body.get(body.decode(), ""), f"{name}: {by_body.get(body.decode())}"
        for _ in range(2):  # the same event twice: applied once
            publish_invalidation(config.kafka.bootstrap_servers, "beacon_blocks", 1_000, 1_010, reason="reorg",
                                 source="test", id="good-1", topic_prefix=config.kafka.topic_prefix)
        _wait_for(lambda: state.coverage.coverage(two) == ((0, 960), (1_080, 3_000)))

    asyncio.run(run_until(config, models, scenario))

    assert state.coverage.coverage(minute) == ((0, 960), (1_020, 3_000))
    assert state.coverage.invalidation_seq(minute) == 1, "a duplicate must not be applied again"
    (record,) = admin.invalidations()
    assert (record.id, record.model, record.start, record.end) == ("good-1", models.resolve("beacon_blocks"), 1_000,
                                                                   1_010)
    assert record.affected[minute] == (TaskRun(960, 1_020, 60),)
    assert record.affected[two] == (TaskRun(960, 1_080, 120),)


def _wait_for(condition: Callable[[], bool], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.1)


class CapturingPublisher:
    def __init__(self) -> None:
        self.sent: list[Message] = []

    async def publish(self, topic: str, message: Message, key: str) -> None:
        self.sent.append(message)


class GatedExecutor:
    """Runs nothing; the first run waits at the gate until the test opens it (a task in the middle of running)."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.gate = asyncio.Event()
        self.runs: list[tuple[int | None, int | None]] = []

    async def run(self, model: Transformation, task: TaskContext) -> None:
        self.runs.append((task.start, task.end))
        self.started.set()
        await self.gate.wait()


class NoRecorder:
    async def record(self, row: CompletionRow) -> None:
        return None

    async def record_failure(self, failed: TaskFailed) -> None:
        return None

    async def record_retry(self, retried: RetriedAttempt) -> None:
        return None


def test_invalidation_wins_over_a_task_running_when_it_arrives(redis_client: Redis, redis_prefix: str) -> None:
    """Invariant "invalidation wins" (docs/design/index.md#invalidation-wins) on the real Redis adapter: the running
    task's completion is refused, and the task is requeued at once and runs again on the new data."""
    models = ModelSet(models_of(ext("ext.blocks"), inc("an.minute", ["ext.blocks"], imax=60)))
    state = RedisState(redis_client, redis_prefix)
    state.coverage.mark_built(0, state.coverage.generation())  # as after the start-up rebuild (empty admin tables)
    state.bounds.put_bounds("ext.blocks", RawBounds(0, 240))
    for done in ((0, 120), (180, 240)):
        state.coverage.record_completed("an.minute", done, 0)
    publisher = CapturingPublisher()
    planner = Planner(models, LiveStateReader.of(models, state), state.ledger,
                      publisher, TOPICS, lambda tags: "default", model_concurrency=4, task_deadline_ms=60_000)
    executor = GatedExecutor()
    runner = TaskRunner(models, WorkerPorts(state.coverage, state.bounds, state.ledger, state.leases, publisher,
                                            NoRecorder()), executor, TOPICS, "w1")
    handler = InvalidationHandler(models, state.coverage, state.ledger, MemoryRecord(), FakeSeen(), publisher, TOPICS,
                                  planner.replan, max_range=10_000, max_tasks=100_000)
    reorg = json.dumps({"id": "reorg-1", "model": "ext.blocks", "start": 130, "end": 140, "reason": "reorg",
                        "source": "test"}).encode()

    async def scenario() -> None:
        assert await planner.replan(["an.minute"]) == 1  # the gap [120, 180) is enqueued ...
        (task,) = [m for m in publisher.sent if isinstance(m, TaskRequested)]
        running = asyncio.create_task(runner.handle(task))  # ... and a worker is running it
        await asyncio.wait_for(executor.started.wait(), 30)
        assert await handler.handle(reorg) == "applied"  # the invalidation arrives mid-task
        publisher.sent.clear()
        executor.gate.set()
        assert await asyncio.wait_for(running, 30) == "superseded"
        assert state.coverage.coverage("an.minute") == ((0, 120), (180, 240)), "the stale run covered nothing"

        (again,) = [m for m in publisher.sent if isinstance(m, TaskRequested)]  # requeued by the worker at once
        assert (again.position, again.end) == (120, 180)
        assert await planner.replan(["an.minute"]) == 0, "still claimed: no second copy from the coordinator"
        assert await runner.handle(again) == "completed"

    asyncio.run(scenario())
    assert state.coverage.coverage("an.minute") == ((0, 240),)
    assert executor.runs == [(120, 180), (120, 180)]
