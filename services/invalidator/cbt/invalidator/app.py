"""The invalidator process: consumes ``invalidation`` events one at a time and applies them (``handler``).

The offset is committed only after the handler returned: an event whose effects were not all durable is
redelivered, and every step is safe to repeat. Re-planning reuses the coordinator's ``Planner`` (planning is pure
and ledger claims deduplicate tasks across processes), so the gaps an event leaves are enqueued at once.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Collection

from faststream import AckPolicy
from faststream.confluent import KafkaMessage
from redis import Redis

from cbt.adapters import runtime
from cbt.adapters.delta_admin import DeltaAdmin, admin_from_config
from cbt.adapters.kafka_bus import POLL_S, BrokerPublisher, delivery_of, process_span
from cbt.adapters.redis_state import RedisState
from cbt.config.settings import Config
from cbt.invalidator.handler import InvalidationHandler
from cbt.invalidator.history import prune_step
from cbt.models.builds import VERSIONS_READ_S, running_models
from cbt.models.dag import ModelSet
from cbt.models.deployment import DeployedVersion
from cbt.models.spec import ModelId
from cbt.planning.live import LiveStateReader
from cbt.planning.override_sync import LiveOverrides, ModelView, follow
from cbt.planning.planner import Planner
from cbt.service import skeleton
from cbt.service.poison import PoisonGuard
from cbt.service.skeleton import Clients, Loop, Work
from cbt.state.override_ports import OverrideRecord
from cbt.state.ports import DurableRecord, StatePorts

log = logging.getLogger("cbt.invalidator")
SEEN_TTL_S = 30 * 24 * 3600
"""How long an applied event id is remembered as a duplicate (its admin-table record is kept for good)."""


class RedisSeenEvents:
    """``SeenEvents``: one key per applied event id, ``{prefix}invalidation:{id}``, expiring after ``ttl_s``."""

    def __init__(self, client: Redis, prefix: str, ttl_s: int = SEEN_TTL_S) -> None:
        self._client = client
        self._prefix = f"{prefix}invalidation:"
        self._ttl_s = ttl_s

    def is_seen(self, event_id: str) -> bool:
        return bool(self._client.exists(self._prefix + event_id))

    def mark_seen(self, event_id: str) -> None:
        self._client.set(self._prefix + event_id, 1, ex=self._ttl_s)


def build(config: Config, models: ModelSet, publisher: BrokerPublisher, client: Redis,
          admin: DurableRecord) -> InvalidationHandler:
    state = RedisState(client, config.redis.key_prefix)
    planner = Planner.from_config(config, models, LiveStateReader.of(models, state),
                                  state.ledger, publisher)
    return handler_with(config, models, state, client, admin, publisher, planner)


def handler_with(config: Config, models: ModelSet, state: RedisState, client: Redis, admin: DurableRecord,
                 publisher: BrokerPublisher, planner: Planner) -> InvalidationHandler:
    topics = runtime.topics(config)

    async def replan(model_ids: Collection[ModelId]) -> int:
        """Plan with the versions the coordinator announced (a task carries the version it must be computed with;
        the announcement precedes the invalidations a change publishes)."""
        planner.versions = await asyncio.to_thread(state.coverage.deployed_versions, list(planner.models.models))
        return await planner.replan(model_ids)

    return InvalidationHandler(
        models=models, coverage=state.coverage, ledger=state.ledger, admin=admin,
        seen=RedisSeenEvents(client, config.redis.key_prefix), publisher=publisher, topics=topics,
        replan=replan, max_range=config.invalidator.max_range, max_tasks=config.invalidator.max_tasks,
        holds=state.holds,
    )


async def follow_builds(files: ModelSet, read: Callable[[], list[DeployedVersion]], handler: InvalidationHandler,
                        planner: Planner, state: StatePorts) -> None:
    """An invalidation during a build reaches the build too (its parents' or its sources' ranges changed): the
    handler maps invalidations over the models with the builds in progress (``cbt.models.builds``), read from the
    versions record every ``VERSIONS_READ_S``. Its re-plan of a build may fail while the overrides' refresh gave
    the planner the models without builds: the coordinator's fill ticks plan the build's gaps anyway."""
    running = running_models(files, await asyncio.to_thread(read))
    if running != handler.models:
        log.info("model versions: the record changed; invalidations follow it", extra={
            "builds": sorted(set(running.models) - set(files.models)),
            "kept_definitions": sorted(m for m in files.models if running.models.get(m) != files.models[m])})
        handler.models = running
        planner.models, planner.reader = running, LiveStateReader.of(running, state)


def _override_record(admin: DeltaAdmin) -> OverrideRecord:
    """The live config overrides' admin table, beside the others (read when Redis lost the overrides)."""
    return admin.overrides_record()


async def serve(config: Config, models: ModelSet, stop: asyncio.Event, health_addr: str | None = None,
                until_idle_s: float | None = None) -> None:
    await skeleton.run("invalidator", config, stop, functools.partial(wire, models, stop), health_addr, until_idle_s)


async def wire(models: ModelSet, stop: asyncio.Event, clients: Clients) -> Work | None:
    config = clients.config
    # Recording an invalidation reads and rewrites the admin table: at the highest priority on a shared Spark.
    admin = clients.admin_tables(admin_from_config)
    # (safe when other services create them at the same moment)
    if not await runtime.until_it_works(admin.ensure_tables, "create admin tables", stop, log):
        return None
    state = RedisState(clients.redis, config.redis.key_prefix)
    planner = Planner.from_config(config, models, LiveStateReader.of(models, state), state.ledger, clients.publisher)
    handler = handler_with(config, models, state, clients.redis, admin, clients.publisher, planner)
    # Live config overrides (limits, tags, paused models) reach the re-plans at the next tick, as in the coordinator.
    overrides = functools.cache(lambda: _override_record(admin))
    view = ModelView(models, LiveOverrides(state.overrides, overrides))
    guard = PoisonGuard("invalidator", config.kafka.max_handling_attempts,
                        ambiguous_max_s=config.kafka.max_ambiguous_s)

    async def on_event(message: KafkaMessage) -> None:
        with process_span(message):
            await guard.handle(delivery_of(message), message.body, lambda: handler.handle(message.body),
                               lambda body, reason: handler.reject(body, reason, None))

    events = clients.broker.subscriber(
        clients.topics.invalidation, group_id=f"{config.kafka.topic_prefix}invalidator",
        auto_offset_reset="earliest", ack_policy=AckPolicy.NACK_ON_ERROR, polling_interval=POLL_S)
    events(on_event)

    async def wind_down() -> None:
        log.info("invalidations handled", extra={"counts": dict(handler.counts)})

    versions = functools.cache(lambda: admin.versions_record())

    async def follow_versions() -> None:
        await follow_builds(models, lambda: versions().all_versions(), handler, planner, state)

    loops = [Loop("overrides", config.scheduler.tick_s, lambda: follow(view, planner)),
             Loop("versions", VERSIONS_READ_S, follow_versions)]
    retention_s = config.invalidator.history_retention_s
    if retention_s is not None:
        coverage = handler.coverage
        loops.append(Loop("prune-history", config.invalidator.history_prune_every_s,
                          lambda: prune_step(admin, coverage, retention_s)))
    return Work(subscribers=[events], loops=loops, wind_down=wind_down)
