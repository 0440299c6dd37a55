"""The one skeleton of the five services (``docs/design/services.md#the-service-skeleton``).

A service's ``serve`` builds its own handler from ``Clients`` and hands the skeleton its ``Work``: the subscribers
it registered on the broker, its periodic loops, and how its work winds down. ``run`` does the rest, the same way
for every service: create the topics, open the broker, answer ``/healthz`` and ``/readyz``, log "<name> started",
run until stop (or until idle), wind the work down, stop answering health, close the broker, then close the clients
in order and log "<name> stopped".
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from cbt.adapters import runtime
from cbt.adapters.admission import admission_from_config
from cbt.adapters.health import Check, HealthServer, Heartbeat
from cbt.adapters.kafka_bus import BrokerPublisher, make_broker
from cbt.adapters.redis_state import RedisState
from cbt.config.settings import Config
from cbt.service.idle import stop_when_idle
from cbt.service.lease import LeaseHolder
from cbt.service.startup import Startup

if TYPE_CHECKING:
    from pyspark.sql import SparkSession  # noqa: TID251 (a type only: Spark is opened by cbt.adapters.spark)

    from cbt.adapters.spark import SessionPool
    from cbt.concurrency.admission import SparkAdmission

T = TypeVar("T")
Closer = Callable[[], object]
"""Closes something at the end (a coroutine function is awaited)."""


class Clients:
    """The connections of one service process, each built once, on first use for Spark (only the services that ask
    for it open it). ``close`` closes them in order: the leases first (another process may take over at once), then
    what the service added with ``on_close``, the Spark admission, the session pool, the Spark session."""

    def __init__(self, name: str, config: Config, startup: Startup | None = None) -> None:
        self.name = name
        self.config = config
        self.startup = startup or Startup()
        """Where the start-up is; services add their own milestones (``leader``, ``first task started``)."""
        self.owner = runtime.instance_id(name)
        """This process: lease owner, Kafka client id, log field."""
        self.broker = make_broker(config.kafka, self.owner)
        self.publisher = BrokerPublisher(self.broker)
        self.topics = runtime.topics(config)
        self.redis = runtime.redis_client(config)
        self.state = RedisState(self.redis, config.redis.key_prefix)
        self._leases: list[LeaseHolder] = []
        self._closers: list[Closer] = []

    def connect_spark(self) -> SparkSession:
        """A new Spark Connect session on ``spark.remote`` (not closed here: the caller owns it)."""
        from cbt.adapters.spark import connect

        return connect(self.config.spark.remote or "")

    @functools.cached_property
    def spark(self) -> SparkSession:
        """The process's own Spark Connect session (the admin tables', the Spark checks')."""
        return self.connect_spark()

    @functools.cached_property
    def sessions(self) -> SessionPool:
        """The pool of Spark sessions the models' statements run in (one per model)."""
        from cbt.adapters.spark import SessionPool

        return SessionPool(self.config.spark.remote or "")

    @functools.cached_property
    def admission(self) -> SparkAdmission | None:
        """This process's admission to the Spark cluster: every statement holds one of its permits (``None``: off)."""
        return admission_from_config(self.config, self.redis, self.owner, self.connect_spark)

    def admin_tables(self, open_tables: Callable[..., T]) -> T:
        """The admin tables over this process's Spark session (``admin_from_config``, ``records_from_config``), each
        statement holding a permit at the admin record's priority, the highest: it unblocks every worker's tasks."""
        admission = self.admission
        return open_tables(self.spark, self.config, permit=admission.admin_permit if admission else None)

    def lease(self, name: str, ttl_s: float) -> LeaseHolder:
        """A lease this process holds as ``owner`` (a leader's), released first on ``close``."""
        holder = LeaseHolder(self.state.leases, name, self.owner, ttl_s)
        self._leases.append(holder)
        return holder

    def on_close(self, closer: Closer) -> None:
        """Close something of the service's after the leases and before the Spark connections."""
        self._closers.append(closer)

    async def close(self) -> None:
        for holder in self._leases:
            holder.release()
        for closer in self._closers:
            if inspect.isawaitable(done := closer()):
                await done
        opened = vars(self)  # (the cached properties opened so far)
        if opened.get("admission") is not None:
            opened["admission"].close()
        if "sessions" in opened:
            opened["sessions"].close()
        if "spark" in opened:
            opened["spark"].stop()


@dataclass(frozen=True)
class Loop:
    """A periodic step, run every ``interval_s`` until stop; ``/healthz`` reports it stuck as the probe ``name``."""

    name: str
    interval_s: float
    step: Callable[[], Awaitable[object]]


@dataclass(frozen=True)
class Work:
    """What a service runs between "started" and "stopped"."""

    subscribers: Sequence[Any] = ()
    """The broker's subscribers (FastStream) this service registered: ``/readyz`` waits for their groups and
    ``/healthz`` watches their consume loops."""
    loops: Sequence[Loop] = ()
    checks: Mapping[str, Check] = field(default_factory=dict)
    """``/readyz`` checks of its own, beyond Redis, Kafka, Spark and the consumer groups."""
    started: Mapping[str, object] = field(default_factory=dict)
    """Fields of the "<name> started" log line."""
    main: Callable[[asyncio.Event], Awaitable[object]] | None = None
    """What runs until stop, instead of only waiting for it (the api's HTTP server); its end also ends the run."""
    wind_down: Callable[[], Awaitable[object]] | None = None
    """Once stopped, before health and Kafka close: end the work still running (the worker's started tasks)."""
    drained: Sequence[Any] | None = None
    """The subscribers whose topics must be drained for ``--until-idle`` (default: all of them)."""
    is_busy: Callable[[], bool] = lambda: False
    """Work in flight that consumer lag does not show (``--until-idle``)."""


Wire = Callable[[Clients], Awaitable[Work | None]]
"""Builds the service's handler over the clients and registers its subscribers; ``None`` when ``stop`` came during
a start-up step (the run then ends without starting)."""


async def run(name: str, config: Config, stop: asyncio.Event, wire: Wire, health_addr: str | None = None,
              until_idle_s: float | None = None) -> None:
    """Run the service ``name`` until ``stop`` is set — or, with ``until_idle_s``, until idle that long."""
    log = logging.getLogger(f"cbt.{name.replace('-', '_')}")
    startup = Startup()
    # Answered from the first moment: /readyz says which start-up step the service is in until it is ready.
    health = await runtime.serve_health(health_addr, {"startup": startup.check}, startup=startup.report)
    startup.doing("creating topics")
    if not await runtime.until_it_works(lambda: runtime.ensure_topics(config), "create topics", stop, log):
        await _stop_health(health)
        return
    startup.reached("topics created")
    startup.doing("preparing (admin tables, admission control, the service's own)")
    clients = Clients(name, config, startup)
    work = await wire(clients)
    if work is None:
        await clients.close()
        await _stop_health(health)
        return
    startup.reached("wired")
    heartbeats = {loop.name: runtime.loop_heartbeat(loop.interval_s) for loop in work.loops}
    async with clients.broker:
        startup.doing("joining the broker")
        await clients.broker.start()
        startup.reached("broker joined")
        checks = {**runtime.dependency_checks(config, clients.redis, clients.broker, work.subscribers), **work.checks}
        if health is not None:
            health.checks, health.probes = checks, dict(runtime.loop_probes(work.subscribers, **heartbeats))
        startup.ready()
        log.info(f"{name} started", extra={"owner": clients.owner, "startup_s": startup.milestones["ready"],
                                           **work.started})
        await _until_stopped(config, work, heartbeats, stop, log, until_idle_s)
        if work.wind_down is not None:
            await work.wind_down()
        await _stop_health(health)
    await clients.close()
    log.info(f"{name} stopped")


async def _stop_health(health: HealthServer | None) -> None:
    if health is not None:
        await health.stop()


async def _until_stopped(config: Config, work: Work, heartbeats: Mapping[str, Heartbeat],
                         stop: asyncio.Event, log: logging.Logger, until_idle_s: float | None) -> None:
    """Run the loops and ``main`` (or wait) until stop, with the idle watch setting it when asked."""
    idle = None if until_idle_s is None else asyncio.create_task(stop_when_idle(
        config, work.subscribers if work.drained is None else work.drained, work.is_busy, until_idle_s, stop))
    loops = [runtime.every(loop.interval_s, stop, loop.step, log, heartbeats[loop.name]) for loop in work.loops]
    try:
        await asyncio.gather(work.main(stop) if work.main is not None else stop.wait(), *loops)
    finally:
        if idle is not None:
            idle.cancel()
            await asyncio.wait({idle})
