"""The bounds-cache process: one elected scanner keeps every external model's bounds in Redis."""

from __future__ import annotations

import asyncio
import logging

from cbt.adapters import runtime
from cbt.adapters.admission import admission_from_config
from cbt.adapters.bounds_refresh import RedisRefreshRequests
from cbt.adapters.kafka_bus import BrokerPublisher, make_broker
from cbt.adapters.redis_state import RedisState
from cbt.adapters.spark import SessionPool, connect
from cbt.bounds_cache.query import SparkBoundsQuery
from cbt.bounds_cache.scanner import BoundsScanner
from cbt.config.settings import Config
from cbt.models.dag import ModelSet
from cbt.models.templates import RenderSettings

log = logging.getLogger("cbt.bounds_cache")
LEADER_LEASE = "bounds-cache-leader"
POLL_S = 1.0


async def serve(config: Config, models: ModelSet, stop: asyncio.Event, health_addr: str | None = None) -> None:
    if not await runtime.until_it_works(lambda: runtime.ensure_topics(config), "create topics", stop, log):
        return
    owner = runtime.instance_id("bounds-cache")
    sessions = SessionPool(config.spark.remote or "")
    broker = make_broker(config.kafka, owner)
    redis = runtime.redis_client(config)
    state = RedisState(redis, config.redis.key_prefix)
    scanner = BoundsScanner(
        externals=models.externals, store=state.bounds,
        query=SparkBoundsQuery(sessions, RenderSettings.from_config(config), workdir=str(config.base_dir),
                               admission=admission_from_config(config, redis, owner,
                                                               lambda: connect(config.spark.remote or ""))),
        publisher=BrokerPublisher(broker), topics=runtime.topics(config),
        refresh=RedisRefreshRequests(redis, config.redis.key_prefix),
    )
    ttl_ms = int(config.scheduler.leader_lease_ttl_s * 1000)
    leading = False

    async def step() -> None:
        nonlocal leading
        leading = (leading and state.leases.renew(LEADER_LEASE, owner, ttl_ms)) or (
            state.leases.acquire(LEADER_LEASE, owner, ttl_ms) is not None)
        if leading:
            scanner.start_due()

    async with broker:
        await broker.start()
        scans = runtime.loop_heartbeat(POLL_S)
        health = await runtime.serve_health(health_addr, runtime.dependency_checks(config, redis, broker),
                                            runtime.loop_probes(scan=scans))
        log.info("bounds-cache started", extra={"owner": owner, "externals": len(models.externals)})
        await runtime.every(POLL_S, stop, step, log, scans)
        await scanner.stop()
        if health:
            await health.stop()
    state.leases.release(LEADER_LEASE, owner)
    sessions.close()
