"""The worker process: consumes its pools' task topics with N consumers of one group, each pipelined.

Each consumer runs one task's work at a time; while it runs the next one, the previous task is recorded (admin
table, hot index, completion event) in the background, so the recording's Delta commit is off the critical path.
Offsets are committed per message, in arrival order, only once the message's recording is durable
(``cbt.ordered_acks``): a crash at any moment leaves every unrecorded task to be redelivered (at-least-once), and
``TaskRunner`` makes the redelivery harmless. Concurrency comes from several consumers over the topic's partitions
(FastStream's own concurrent mode commits before handling, which would lose work on a crash).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from faststream import AckPolicy
from faststream.confluent import KafkaMessage
from pydantic import ValidationError

from cbt.adapters.delta_admin import admin_from_config
from cbt.adapters.kafka_bus import BrokerPublisher, commit_through, make_broker, rewind_to
from cbt.adapters.redis_state import RedisState
from cbt.adapters.spark import connect
from cbt.config import Config
from cbt.messages import TaskRequested, decode
from cbt.models.dag import ModelSet
from cbt.models.templates import RenderSettings
from cbt.ordered_acks import InOrderAcks
from cbt.services import runtime
from cbt.services.worker.executor import SparkExecutor
from cbt.services.worker.recorder import AdminRecorder
from cbt.services.worker.runner import Outcome, RetryPolicy, TaskRunner, WorkerPorts

log = logging.getLogger("cbt.worker")


PIPELINE_DEPTH = 1
"""Tasks per consumer whose recording may still run while the consumer runs its next task."""


def consumed_pools(config: Config) -> list[str]:
    return config.worker.consume or ["default", *config.worker.pools]


def consumer_handler(runner: TaskRunner, chain: InOrderAcks[KafkaMessage],
                     stopping: asyncio.Event) -> Callable[[KafkaMessage], Awaitable[None]]:
    """One consumer's handler: run the task's work, then hand its recording to ``chain``, which commits the offset
    once the recording is durable and every earlier message of this consumer is committed; the consumer goes on
    to its next task meanwhile. A failure anywhere rewinds the consumer to the message (at-least-once). Once the
    worker is stopping, messages are left uncommitted for the next consumer of the group."""

    async def on_task(message: KafkaMessage) -> None:
        if stopping.is_set():
            return
        generation = chain.generation
        await chain.submit(message, await _work(runner, message.body), generation)

    return on_task


async def _work(runner: TaskRunner, body: bytes) -> Awaitable[object]:
    """Run the task's work now; returns the awaitable of what remains (a failure surfaces when it is awaited)."""
    try:
        task = decode(body)
    except ValidationError as e:
        log.error("ignoring a malformed task message", extra={"error": str(e)[:500]})
        return asyncio.sleep(0)
    if not isinstance(task, TaskRequested):
        return asyncio.sleep(0)
    try:
        remaining = await runner.begin(task)
    except Exception as e:
        remaining = asyncio.get_running_loop().create_future()
        remaining.set_exception(e)
    return _logged(task.task_id, remaining)


async def _logged(task_id: str, remaining: asyncio.Future[Outcome]) -> None:
    outcome = await remaining
    log.info("task handled", extra={"task_id": task_id, "outcome": outcome})


async def serve(config: Config, models: ModelSet, stop: asyncio.Event, health_addr: str | None = None) -> None:
    runtime.ensure_topics(config)
    owner = runtime.instance_id("worker")
    spark = connect(config.spark.remote or "")
    broker = make_broker(config.kafka, owner)
    redis = runtime.redis_client(config)
    state = RedisState(redis, config.redis.key_prefix)
    recorder = AdminRecorder(admin_from_config(spark, config), owner)
    await asyncio.to_thread(recorder.admin.ensure_tables)
    retry = config.worker.retry
    topics = runtime.topics(config)
    runner = TaskRunner(
        models=models,
        ports=WorkerPorts(state.coverage, state.bounds, state.ledger, state.leases, BrokerPublisher(broker), recorder),
        executor=SparkExecutor(spark, RenderSettings.from_config(config), config.worker.task_timeout_s,
                               str(config.base_dir)),
        topics=topics, worker_id=owner,
        retry=RetryPolicy(retry.max_attempts, retry.backoff_initial_s, retry.backoff_max_s, retry.backoff_multiplier),
    )
    chains: list[InOrderAcks[KafkaMessage]] = []
    for pool in consumed_pools(config):
        for _ in range(config.worker.concurrency):
            chain = InOrderAcks(commit_through, rewind_to, max_pending=PIPELINE_DEPTH)
            chains.append(chain)
            broker.subscriber(
                topics.task_requested(pool), group_id=f"{config.kafka.topic_prefix}worker.{pool}",
                auto_offset_reset="earliest", ack_policy=AckPolicy.MANUAL, polling_interval=0.01,
                max_poll_interval_ms=int((config.worker.task_timeout_s + 120) * 1000),
            )(consumer_handler(runner, chain, stop))
    async with broker:
        await broker.start()
        health = await runtime.serve_health(health_addr, runtime.redis_answers(redis))
        log.info("worker started", extra={"owner": owner, "pools": consumed_pools(config)})
        await stop.wait()
        for chain in chains:
            await chain.drain()  # record what already ran, and commit it, before the consumers close
        if health:
            await health.stop()
    await recorder.close()
    spark.stop()
