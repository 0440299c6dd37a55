"""The worker process: consumes its pools' task topics with N consumers of one group.

Each consumer (``consumer.PipelinedConsumer``) starts every task as it arrives and goes on to the next message; the
executor bounds how many run at once (``worker.concurrency`` slots) and runs one task per model at a time, so a slow
or hung model holds one slot and its own queue, not the messages behind it. Offsets are committed per message, in
arrival order, only once the message's task is recorded (``cbt.concurrency.ordered_acks``): a crash at any moment leaves
every unrecorded task to be redelivered (at-least-once), and ``TaskRunner`` makes the redelivery harmless.
FastStream's own concurrent mode commits before handling, which would lose work on a crash. On SIGTERM the started
tasks get ``worker.shutdown_timeout`` to end and be recorded (the rest are stopped and left uncommitted); messages
not started stay for the next consumer.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from typing import Any, cast

from faststream import AckPolicy
from faststream.confluent import KafkaBroker, KafkaMessage

from cbt.adapters import runtime
from cbt.adapters.delta_admin import admin_from_config
from cbt.adapters.kafka_bus import (
    POLL_S,
    BrokerPublisher,
    commit_through,
    partition_of,
    process_span,
    rewind_to,
)
from cbt.adapters.spark import delta_write_warm_up
from cbt.concurrency.admission import SparkAdmission
from cbt.concurrency.ordered_acks import InOrderAcks
from cbt.config.settings import Config
from cbt.contract.messages import TaskRequested, rejected
from cbt.contract.topics import Topics
from cbt.models.builds import (
    Build,
    Pin,
    builds_from,
    deployed_pins,
    pinned,
    pins_from,
    running_versions,
    with_builds,
)
from cbt.models.dag import ModelSet
from cbt.models.deployment import DeployedVersion, VersionRecord, latest_versions
from cbt.models.spec import ModelId
from cbt.models.templates import RenderSettings
from cbt.models.versions import short_version
from cbt.observability import metrics
from cbt.service import skeleton
from cbt.service.model_changes import files_versions
from cbt.service.poison import PoisonGuard
from cbt.service.skeleton import Clients, Work
from cbt.state.admin_records import CheckedInterval
from cbt.worker.consumer import IN_FLIGHT, Delivered, PipelinedConsumer, Reject
from cbt.worker.executor import SHARED_SESSION, SparkExecutor
from cbt.worker.recorder import AdminRecorder
from cbt.worker.runner import RetryPolicy, TaskRunner, WorkerPorts

log = logging.getLogger("cbt.worker")


def consumed_pools(config: Config) -> list[str]:
    return config.worker.consume or ["default", *config.worker.pools]


def _rejecter(publisher: BrokerPublisher, topics: Topics, pool: str) -> Reject:
    """Publishes what the pool's consumers cannot use to ``message-rejected``."""

    async def reject(body: bytes, reason: str) -> None:
        message = rejected(topics.task_requested(pool), "worker", body, reason)
        await publisher.publish(topics.message_rejected, message, key="worker")
        metrics.count_rejected(topics.task_requested(pool), "worker", reason)

    return reject


def _task_span(message: Delivered, task: TaskRequested) -> AbstractContextManager[object]:
    return process_span(cast(KafkaMessage, message), **{"cbt.model": task.model, "cbt.task_id": task.task_id})


def subscribe(broker: KafkaBroker, config: Config, pool: str, consumer: PipelinedConsumer, index: int = 0) -> Any:
    """Register one consumer of the pool's task topic (manual commits, done by the consumer's chain), a static member
    of its group named after the worker's ``instance_id`` when it has one; returns the subscriber."""

    async def on_task(message: KafkaMessage) -> None:
        await consumer.on_message(message)

    topics = runtime.topics(config)
    subscriber = broker.subscriber(
        topics.task_requested(pool), group_id=topics.worker_group(pool),
        group_instance_id=static_member(config.worker.instance_id, pool, index),
        session_timeout_ms=STATIC_SESSION_TIMEOUT_MS if config.worker.instance_id else DYNAMIC_SESSION_TIMEOUT_MS,
        auto_offset_reset="earliest", ack_policy=AckPolicy.MANUAL, polling_interval=POLL_S,
        max_poll_interval_ms=max_poll_interval_ms(config),
    )
    subscriber(on_task)
    return subscriber


DYNAMIC_SESSION_TIMEOUT_MS = 10_000
"""How long the group waits for a silent dynamic member (one that died: one that stops leaves at once)."""
STATIC_SESSION_TIMEOUT_MS = 45_000
"""How long the group keeps a named worker's partitions while it is away: long enough for a restart — a rollout's,
or a crash's — to find them still its own, with no rebalance (a stop does not leave the group)."""


def static_member(instance_id: str | None, pool: str, index: int) -> str | None:
    """The ``group.instance.id`` of the worker's ``index``-th consumer of ``pool``; None: a dynamic member."""
    return None if instance_id is None else f"{instance_id}-{pool}-{index}"


def max_poll_interval_ms(config: Config) -> int:
    """How long a consumer may go without polling before the group evicts it. A consumer stops polling while
    ``IN_FLIGHT`` messages wait behind its oldest unfinished one, which may queue behind its model's other tasks:
    up to the model's concurrency times its attempts times the task timeout (capped at the client's maximum, a day)."""
    worker = config.worker
    longest_s = worker.model_concurrency * worker.retry.max_attempts * worker.task_timeout_s + 120
    return int(min(longest_s * 1000, 86_400_000))


def warm_up_permit(admission: SparkAdmission | None) -> Callable[[], AbstractContextManager[object]]:
    """A permit for each of the warm-up's statements, at the lowest priority (backfill's): a task that is waiting
    goes first, so the warm-up never holds a first task back for longer than one small statement."""
    if admission is None:
        return contextlib.nullcontext
    return functools.partial(admission.held_sync, "backfill", "warm-up")


async def serve(config: Config, models: ModelSet, stop: asyncio.Event, health_addr: str | None = None,
                until_idle_s: float | None = None) -> None:
    await skeleton.run("worker", config, stop, functools.partial(wire, models, stop), health_addr, until_idle_s)


async def wire(models: ModelSet, stop: asyncio.Event, clients: Clients) -> Work | None:
    config = clients.config
    # Statements, scripts' waits and Delta commits run in threads; a statement stuck on an unreachable server holds
    # one until its timeout, so the pool is sized well past the slots (the default is only cores + 4).
    asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(4 * config.worker.concurrency + 16))
    # Every statement on the cluster holds one of its permits, shared with every other process that uses it: the
    # tasks' at their direction's priority, the admin records' (completions, failures, retries) at the highest.
    admission = clients.admission
    recorder = AdminRecorder(clients.admin_tables(admin_from_config), clients.owner)
    if admission is not None and not await runtime.until_it_works(admission.limit, "measure the Spark cluster's "
                                                                  "capacity for admission control", stop, log):
        return None
    if not await runtime.until_it_works(recorder.admin.ensure_tables, "create admin tables", stop, log):
        return None
    # (the admin database exists now)
    clients.sessions.warm(SHARED_SESSION, delta_write_warm_up(config.admin.incremental.database,
                                                              warm_up_permit(admission)))
    clients.on_close(recorder.close)
    runner = build_runner(config, models, clients, recorder)
    for model_id in [m.id for m in models.incrementals] + [m.id for m in models.scheduled]:
        metrics.tasks.add(0, {"model": model_id, "status": "failed"})  # so a first failure shows as an increase
    members = [(pool, index) for pool in consumed_pools(config) for index in range(config.worker.concurrency)]
    consumers = [PipelinedConsumer(runner, InOrderAcks(commit_through, rewind_to, IN_FLIGHT, partition_of), stop,
                                   _rejecter(clients.publisher, clients.topics, pool), _task_span,
                                   PoisonGuard("worker", config.kafka.max_handling_attempts,
                                               ambiguous_max_s=config.kafka.max_ambiguous_s))
                 for pool, _ in members]
    subscribers = [subscribe(clients.broker, config, pool, consumer, index)
                   for (pool, index), consumer in zip(members, consumers, strict=True)]

    async def finish_started_tasks() -> None:
        """Started tasks end and are recorded and committed before closing; past the shutdown timeout the rest stop."""
        log.info("worker stopping: finishing started tasks", extra={"timeout_s": config.worker.shutdown_timeout_s})
        await asyncio.gather(*(c.finish(config.worker.shutdown_timeout_s) for c in consumers))
        log.info("worker stopping: started tasks ended and committed; closing connections")

    return Work(subscribers=subscribers, started={"pools": consumed_pools(config)}, wind_down=finish_started_tasks,
                is_busy=lambda: any(c.is_running for c in consumers))


def published_row_counts(results: Sequence[CheckedInterval]) -> list[int]:
    """The row counts of the published intervals among ``results`` (newest first): each interval's newest verdict,
    when it passed or warned (a failed one was not published) and its rows were counted."""
    seen: dict[tuple[int, int], CheckedInterval] = {}
    for result in results:
        seen.setdefault((result.position, result.end), result)
    return [r.rows for r in seen.values() if r.status in ("passed", "warned", "accepted") and r.rows is not None]


def build_runner(config: Config, models: ModelSet, clients: Clients, recorder: AdminRecorder) -> TaskRunner:
    retry = config.worker.retry
    state = clients.state
    mine = {model_id: print_.short for model_id, print_ in files_versions(config, models)[0].items()}
    deployed = DeployedVersions(recorder.admin.versions_record, mine)
    return TaskRunner(
        models=models,
        ports=WorkerPorts(state.coverage, state.bounds, state.ledger, state.leases, clients.publisher, recorder,
                          state.holds),
        executor=SparkExecutor(clients.sessions, RenderSettings.from_config(config), config.worker.task_timeout_s,
                               str(config.base_dir), config.spark.query_timeout_s, config.worker.concurrency,
                               clients.admission, lead_levels={m.id: models.chain_length(m.id) for m in models},
                               feeding=frozenset(m.id for m in models if models.dependents(m.id)),
                               parents={m.id: frozenset(models.dependencies(m.id)) for m in models},
                               published_rows=lambda model_id: published_row_counts(
                                   recorder.admin.check_results_record().check_results([model_id], limit=1000)),
                               failed_retention_s=config.checks.retention_s),
        topics=clients.topics, worker_id=clients.owner,
        retry=RetryPolicy(retry.max_attempts, retry.backoff_initial_s, retry.backoff_max_s, retry.backoff_multiplier),
        pools=("default", *config.worker.pools), max_batch_intervals=config.scheduler.batch.max_intervals,
        milestone=clients.startup.reached,
        versions=mine,
        deployed_version=deployed.short,
        running=lambda: deployed.running(models, mine),
    )


class DeployedVersions:
    """The deployed versions as the versions record holds them, read again at most every ``max_age_s`` for a model's
    deployed version, and at most every ``unknown_age_s`` for the models to run (asked only when a task names a model
    or a version this worker does not run yet: a deployment recorded its builds just before it planned their tasks,
    so a read older than that task may not know them — and a task of a model unknown after the read fails)."""

    def __init__(self, record: Callable[[], VersionRecord], files: Mapping[ModelId, str],
                 max_age_s: float = 5.0, unknown_age_s: float = 0.5) -> None:
        self._record, self._files = record, files
        self._max_age_s, self._unknown_age_s = max_age_s, unknown_age_s
        self._read_at = -math.inf
        self._latest: dict[ModelId, DeployedVersion] = {}
        self._builds: dict[ModelId, Build] = {}
        self._pins: dict[ModelId, Pin] = {}

    def _read(self, max_age_s: float | None = None) -> None:
        if time.monotonic() - self._read_at > (self._max_age_s if max_age_s is None else max_age_s):
            versions = self._record().all_versions()
            self._latest, self._builds = latest_versions(versions), builds_from(versions)
            self._pins = {**deployed_pins(self._files, versions), **pins_from(versions)}
            self._read_at = time.monotonic()

    def short(self, model_id: ModelId) -> str | None:
        self._read()
        deployed = self._latest.get(model_id)
        return None if deployed is None else short_version(deployed.data_hash)

    def running(self, files: ModelSet, versions: Mapping[ModelId, str]) -> tuple[ModelSet, dict[ModelId, str]]:
        """The models to run now — the files' with the builds in progress beside them — and their versions."""
        self._read(self._unknown_age_s)
        return (with_builds(pinned(files, self._pins), self._builds),
                running_versions(versions, self._builds, self._pins))
