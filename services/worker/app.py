"""The worker process: consumes its pools' task topics with N sequential consumers of one group.

Each consumer handles one message at a time and commits its offset only after the handler returned, so a crash
at any moment leaves the task to be redelivered (at-least-once); ``TaskRunner`` makes the redelivery harmless.
Concurrency comes from several consumers over the topic's partitions (FastStream's own concurrent mode commits
before handling, which would lose work on a crash).
"""

from __future__ import annotations

import asyncio
import logging

from faststream import AckPolicy
from faststream.confluent import KafkaMessage
from pydantic import ValidationError

from cbt.adapters.delta_admin import admin_from_config
from cbt.adapters.kafka_bus import BrokerPublisher, make_broker
from cbt.adapters.redis_state import RedisState
from cbt.adapters.spark import connect
from cbt.config import Config
from cbt.messages import TaskRequested, decode
from cbt.models.dag import ModelSet
from cbt.models.templates import RenderSettings
from cbt.services import runtime
from cbt.services.worker.executor import SparkExecutor
from cbt.services.worker.recorder import AdminRecorder
from cbt.services.worker.runner import RetryPolicy, TaskRunner, WorkerPorts

log = logging.getLogger("cbt.worker")


def consumed_pools(config: Config) -> list[str]:
    return config.worker.consume or ["default", *config.worker.pools]


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
    runner = TaskRunner(
        models=models,
        ports=WorkerPorts(state.coverage, state.bounds, state.ledger, state.leases, BrokerPublisher(broker), recorder),
        executor=SparkExecutor(spark, RenderSettings.from_config(config), config.worker.task_timeout_s,
                               str(config.base_dir)),
        topics=runtime.topics(config), worker_id=owner,
        retry=RetryPolicy(retry.max_attempts, retry.backoff_initial_s, retry.backoff_max_s, retry.backoff_multiplier),
    )

    async def on_task(message: KafkaMessage) -> None:
        try:
            task = decode(message.body)
        except ValidationError as e:
            log.error("ignoring a malformed task message", extra={"error": str(e)[:500]})
            return
        if isinstance(task, TaskRequested):
            outcome = await runner.handle(task)
            log.info("task handled", extra={"task_id": task.task_id, "outcome": outcome})

    topics = runtime.topics(config)
    for pool in consumed_pools(config):
        for _ in range(config.worker.concurrency):
            broker.subscriber(
                topics.task_requested(pool), group_id=f"{config.kafka.topic_prefix}worker.{pool}",
                auto_offset_reset="earliest", ack_policy=AckPolicy.NACK_ON_ERROR, polling_interval=0.01,
                max_poll_interval_ms=int((config.worker.task_timeout_s + 120) * 1000),
            )(on_task)
    async with broker:
        await broker.start()
        health = await runtime.serve_health(health_addr, runtime.redis_answers(redis))
        log.info("worker started", extra={"owner": owner, "pools": consumed_pools(config)})
        await stop.wait()
        if health:
            await health.stop()
    await recorder.close()
    spark.stop()
