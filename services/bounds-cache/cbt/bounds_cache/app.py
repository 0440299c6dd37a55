"""The bounds-cache process: one elected scanner keeps every external model's bounds in Redis."""

from __future__ import annotations

import asyncio
import functools

from cbt.adapters.bounds_refresh import RedisRefreshRequests
from cbt.adapters.delta_log_bounds import DeltaLogBounds
from cbt.bounds_cache.query import SparkBoundsQuery
from cbt.bounds_cache.scanner import BoundsScanner
from cbt.config.settings import Config
from cbt.models.dag import ModelSet
from cbt.models.templates import RenderSettings
from cbt.service import skeleton
from cbt.service.skeleton import Clients, Loop, Work

LEADER_LEASE = "bounds-cache-leader"
POLL_S = 1.0


async def serve(config: Config, models: ModelSet, stop: asyncio.Event, health_addr: str | None = None,
                until_idle_s: float | None = None) -> None:
    await skeleton.run("bounds-cache", config, stop, functools.partial(wire, models), health_addr, until_idle_s)


async def wire(models: ModelSet, clients: Clients) -> Work:
    """Every ``POLL_S``: renew or take the leader lease; as leader, start the scans that are due."""
    config = clients.config
    scanner = BoundsScanner(
        externals=models.externals, store=clients.state.bounds,
        query=SparkBoundsQuery(clients.sessions, RenderSettings.from_config(config), workdir=str(config.base_dir),
                               admission=clients.admission, delta_log=delta_log_from_config(config)),
        publisher=clients.publisher, topics=clients.topics,
        refresh=RedisRefreshRequests(clients.redis, config.redis.key_prefix),
    )
    leadership = clients.lease(LEADER_LEASE, config.scheduler.leader_lease_ttl_s)

    async def step() -> None:
        if leadership.hold():
            scanner.start_due()

    return Work(loops=[Loop("scan", POLL_S, step)], started={"externals": len(models.externals)},
                wind_down=scanner.stop, is_busy=lambda: scanner.is_scanning)


def delta_log_from_config(config: Config) -> DeltaLogBounds | None:
    """Bounds from the Delta log of the tables under ``spark.warehouse`` (``None`` when it is unset)."""
    warehouse = config.warehouse()
    return None if warehouse is None else DeltaLogBounds(warehouse, dict(config.spark.storage_options))
