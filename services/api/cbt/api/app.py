"""The api process (``cbt run api``): the REST API and web UI on uvicorn at ``api.addr``, live events from Kafka.

Several replicas may run side by side: none leads, each reads the shared state, and each streams events from a
Kafka consumer group of its own (from the latest offset). ``/healthz`` and ``/readyz`` answer on ``health_addr``
like every service; readiness asks Redis, Kafka (and that the event consumer joined its group) and Spark Connect.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Generator

import uvicorn
from faststream import AckPolicy
from faststream.confluent import KafkaMessage

from cbt.adapters import runtime
from cbt.adapters.bounds_refresh import RedisRefreshRequests
from cbt.adapters.invalidation_publisher import publish_event
from cbt.adapters.kafka_bus import partition_of
from cbt.adapters.session_revocations import RedisSessionRevocations
from cbt.api.context import ApiContext
from cbt.api.events import EventHub, decode_event, event_names
from cbt.api.records import ApiRecords, records_from_config
from cbt.api.web import create_app
from cbt.config.addresses import bind_address
from cbt.config.settings import Config
from cbt.contract.messages import BoundsUpdated, Invalidation
from cbt.models.dag import ModelSet
from cbt.models.spec import ScheduledModel
from cbt.planning.live import LiveStateReader
from cbt.planning.override_sync import LiveOverrides
from cbt.planning.planner import Planner
from cbt.service import skeleton
from cbt.service.skeleton import Clients, Work

log = logging.getLogger("cbt.api")
SHUTDOWN_GRACE_S = 3


class KafkaCommands:
    """``Commands``: an invalidation as ``cbt rerun`` publishes it; a scheduled run as the coordinator enqueues it
    (the same planner: claim in the ledger, publish, extend the claim)."""

    def __init__(self, config: Config, planner: Planner) -> None:
        self._config = config
        self._planner = planner

    async def publish_invalidation(self, event: Invalidation) -> None:
        kafka = self._config.kafka
        await asyncio.to_thread(publish_event, kafka.bootstrap_servers, event, topic_prefix=kafka.topic_prefix,
                                kafka_config=kafka.client)

    async def run_scheduled(self, model: ScheduledModel, fire_unix: int) -> bool:
        return await self._planner.run_scheduled(model, fire_unix)

    async def announce_bounds(self, event: BoundsUpdated) -> None:
        await self._planner.publisher.publish(self._planner.topics.bounds_updated, event, key=event.model)


class _Server(uvicorn.Server):
    """uvicorn inside the service's own loop: the service handles SIGTERM/SIGINT (``stop``), not uvicorn."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def build_context(config: Config, models: ModelSet, clients: Clients, events: EventHub,
                  admin: ApiRecords) -> ApiContext:
    """The context over real adapters: Redis, the admin tables over Spark Connect, Kafka."""
    state = clients.state
    planner = Planner.from_config(config, models, LiveStateReader.of(models, state), state.ledger, clients.publisher)
    return ApiContext(config=config, models=models, hot=state,
                      refresh=RedisRefreshRequests(clients.redis, config.redis.key_prefix),
                      admin=admin, commands=KafkaCommands(config, planner), events=events,
                      overrides=LiveOverrides(state.overrides, lambda: admin.overrides),
                      sessions=RedisSessionRevocations(clients.redis, config.redis.key_prefix))


def http_server(config: Config, ctx: ApiContext) -> uvicorn.Server:
    host, port = bind_address(config.api.addr)  # (":PORT": every interface, as in CBT)
    return _Server(uvicorn.Config(create_app(ctx), host=host, port=port, lifespan="off",
                                  log_config=None, access_log=False, timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
                                  forwarded_allow_ips=config.api.forwarded_allow_ips))


async def serve(config: Config, models: ModelSet, stop: asyncio.Event, health_addr: str | None = None,
                until_idle_s: float | None = None) -> None:
    await skeleton.run("api", config, stop, functools.partial(wire, models, stop), health_addr, until_idle_s)


async def wire(models: ModelSet, stop: asyncio.Event, clients: Clients) -> Work | None:
    """The HTTP server runs until stop; the live events stream in from a consumer group of this process's own."""
    config = clients.config
    # The pages' reads of the admin tables take their turn on a shared Spark, at the admin record's priority.
    admin = clients.admin_tables(records_from_config)
    if not await runtime.until_it_works(admin.ensure_tables, "create admin tables", stop, log):
        return None
    hub = EventHub()
    ctx = build_context(config, models, clients, hub, admin)
    names = event_names(clients.topics, ("default", *config.worker.pools))

    async def on_message(message: KafkaMessage) -> None:
        event = decode_event(names, partition_of(message)[0], message.body)
        if event is not None:
            hub.publish(event)

    stream = clients.broker.subscriber(*names, group_id=f"{config.kafka.topic_prefix}api-events-{clients.owner}",
                                       auto_offset_reset="latest", ack_policy=AckPolicy.ACK, polling_interval=0.05)
    stream(on_message)

    async def serve_http(stop: asyncio.Event) -> None:
        server = http_server(config, ctx)
        serving = asyncio.create_task(server.serve())
        await asyncio.wait([serving, asyncio.create_task(stop.wait())], return_when=asyncio.FIRST_COMPLETED)
        hub.close()
        server.should_exit = True
        await serving

    # (the event stream is a live view from the latest offset, not work to drain: idle means no HTTP server to wait
    # for, so `--until-idle` stops the api after the quiet period)
    return Work(subscribers=[stream], main=serve_http, drained=(),
                started={"addr": config.api.addr,
                         "mutations": "enabled" if config.api.auth.tokens else "disabled (no token)",
                "reads": "need a token" if config.api.auth.read_tokens else "open"})
