"""The api process (``cbt run api``): the REST API and web UI on uvicorn at ``api.addr``, live events from Kafka.

Several replicas may run side by side: none leads, each reads the shared state, and each streams events from a
Kafka consumer group of its own (from the latest offset). ``/healthz`` and ``/readyz`` answer on ``health_addr``
like every service; readiness asks Redis, Kafka (and that the event consumer joined its group) and Spark Connect.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Generator

import uvicorn
from faststream import AckPolicy
from faststream.confluent import KafkaBroker, KafkaMessage

from cbt.adapters import runtime
from cbt.adapters.admission import admission_from_config
from cbt.adapters.bounds_refresh import RedisRefreshRequests
from cbt.adapters.invalidation_publisher import publish_event
from cbt.adapters.kafka_bus import BrokerPublisher, make_broker, partition_of
from cbt.adapters.redis_state import RedisState
from cbt.adapters.spark import connect
from cbt.api.context import ApiContext
from cbt.api.events import EventHub, decode_event, event_names
from cbt.api.records import ApiRecords, records_from_config
from cbt.api.web import create_app
from cbt.config.settings import Config
from cbt.contract.messages import Invalidation
from cbt.models.dag import ModelSet
from cbt.models.spec import ScheduledModel
from cbt.planning.live import LiveStateReader
from cbt.planning.planner import Planner

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


class _Server(uvicorn.Server):
    """uvicorn inside the service's own loop: the service handles SIGTERM/SIGINT (``stop``), not uvicorn."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def build_context(config: Config, models: ModelSet, broker: KafkaBroker, events: EventHub,
                  admin: ApiRecords) -> ApiContext:
    """The context over real adapters: Redis, the admin tables over Spark Connect, Kafka."""
    client = runtime.redis_client(config)
    state = RedisState(client, config.redis.key_prefix)
    planner = Planner.from_config(config, models, LiveStateReader.of(models, state),
                                  state.ledger, BrokerPublisher(broker))
    return ApiContext(config=config, models=models, hot=state,
                      refresh=RedisRefreshRequests(client, config.redis.key_prefix),
                      admin=admin, commands=KafkaCommands(config, planner), events=events)


def http_server(config: Config, ctx: ApiContext) -> uvicorn.Server:
    host, _, port = config.api.addr.rpartition(":")
    return _Server(uvicorn.Config(create_app(ctx), host=host or "127.0.0.1", port=int(port), lifespan="off",
                                  log_config=None, access_log=False, timeout_graceful_shutdown=SHUTDOWN_GRACE_S))


async def serve(config: Config, models: ModelSet, stop: asyncio.Event, health_addr: str | None = None) -> None:
    if not await runtime.until_it_works(lambda: runtime.ensure_topics(config), "create topics", stop, log):
        return
    owner = runtime.instance_id("api")
    broker = make_broker(config.kafka, owner)
    hub = EventHub()
    spark = connect(config.spark.remote or "")
    redis = runtime.redis_client(config)
    # The pages' reads of the admin tables take their turn on a shared Spark, at the admin record's priority.
    admission = admission_from_config(config, redis, owner, lambda: connect(config.spark.remote or ""))
    admin = records_from_config(spark, config, permit=admission.admin_permit if admission else None)
    if not await runtime.until_it_works(admin.ensure_tables, "create admin tables", stop, log):
        return
    ctx = build_context(config, models, broker, hub, admin)
    names = event_names(runtime.topics(config), ("default", *config.worker.pools))

    async def on_message(message: KafkaMessage) -> None:
        event = decode_event(names, partition_of(message)[0], message.body)
        if event is not None:
            hub.publish(event)

    stream = broker.subscriber(*names, group_id=f"{config.kafka.topic_prefix}api-events-{owner}",
                               auto_offset_reset="latest", ack_policy=AckPolicy.ACK, polling_interval=0.05)
    stream(on_message)
    async with broker:
        await broker.start()
        health = await runtime.serve_health(health_addr, runtime.dependency_checks(config, redis, broker, [stream]),
                                            runtime.loop_probes([stream]))
        server = http_server(config, ctx)
        serving = asyncio.create_task(server.serve())
        log.info("api started", extra={"owner": owner, "addr": config.api.addr,
                                       "mutations": "enabled" if config.api.auth.tokens else "disabled (no token)"})
        await asyncio.wait([serving, asyncio.create_task(stop.wait())], return_when=asyncio.FIRST_COMPLETED)
        hub.close()
        server.should_exit = True
        await serving
        if health:
            await health.stop()
    spark.stop()
    log.info("api stopped")
