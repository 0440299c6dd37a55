"""What every service process shares: logging, topic creation, start-up retries, the health endpoint's checks and
probes, periodic loops and the connections.

Services are built in functions from settings (never at import time) and run until ``stop`` is set, or — for
deterministic tests — until idle (``--until-idle``): the skeleton that runs them is ``cbt.service``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import socket
import sys
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from faststream.confluent import KafkaBroker
from pyspark.sql.connect.client.core import DefaultChannelBuilder
from redis import Redis

from cbt.adapters import admission, kafka_admin, kafka_consumers
from cbt.adapters.health import CHECK_TIMEOUT_S, Check, HealthServer, Heartbeat, Probe
from cbt.adapters.redis_client import redis_client as redis_client  # (re-exported: every service builds its own)
from cbt.adapters.redis_client import redis_state as redis_state
from cbt.config.settings import Config
from cbt.contract.topics import Topics
from cbt.observability.tracing import current_ids, log_fields

_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """One JSON object per line, with the record's extra fields (model, task_id, …) as keys."""

    def format(self, record: logging.LogRecord) -> str:
        body = {"ts": round(record.created, 3), "level": record.levelname.lower(), "logger": record.name,
                "msg": record.getMessage()}
        body.update({k: v for k, v in vars(record).items() if k not in _STANDARD})
        if record.exc_info:
            body["exc"] = self.formatException(record.exc_info)
        return json.dumps(body, default=str)


class ConsoleFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        extra = " ".join(f"{k}={v}" for k, v in vars(record).items() if k not in _STANDARD)
        return f"{self.formatTime(record, '%H:%M:%S')} {record.levelname:<7} {record.name}: {record.getMessage()}" + (
            f"  {extra}" if extra else "") + (f"\n{self.formatException(record.exc_info)}" if record.exc_info else "")


class LogContext(logging.Filter):
    """Adds ``trace_id`` and ``span_id`` to a line logged inside a recorded span (a task's handling, an event's),
    and ``model`` and ``task_id`` to a line logged while a task is handled (``tracing.logged_as``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, value in log_fields.get():
            if not hasattr(record, name):
                setattr(record, name, value)
        ids = current_ids()
        if ids is not None:
            record.trace_id, record.span_id = ids
        return True


def setup_logging(config: Config) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(LogContext())
    handler.setFormatter(JsonFormatter() if config.logging.format == "json" else ConsoleFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(config.logging.level.upper())
    for noisy in ("faststream", "py4j", "grpc", "urllib3"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def instance_id(service: str) -> str:
    """A unique name for this process: lease owner, Kafka client id, log field."""
    return f"{service}-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"



def topics(config: Config) -> Topics:
    return Topics(config.kafka.topic_prefix)


def ensure_topics(config: Config) -> None:
    """Create every topic of this installation (one task topic per configured pool) if missing."""
    pools = ("default", *config.worker.pools)
    names = topics(config).all(pools)
    kafka_admin.ensure_topics(config.kafka.bootstrap_servers, names, extra=dict(config.kafka.client),
                              task_partitions=config.kafka.task_topic_partitions,
                              replication_factor=config.kafka.replication_factor)


LOOP_ALLOWANCE_S = 300.0
"""How long past its interval a periodic loop may go without finishing a round before ``/healthz`` reports it stuck:
well past a slow round (a leader's first tick reads the admin tables; Redis and Kafka calls time out far sooner)."""


def loop_heartbeat(interval_s: float) -> Heartbeat:
    """The heartbeat of a loop that runs every ``interval_s``."""
    return Heartbeat(interval_s + LOOP_ALLOWANCE_S)


STARTUP_BACKOFF_S = (1.0, 2.0, 4.0, 8.0, 15.0, 30.0)
"""Pauses between start-up attempts while Kafka, Redis or Spark Connect is not there yet (then every 30 s)."""


async def until_it_works(call: Callable[[], object], what: str, stop: asyncio.Event, log: logging.Logger) -> bool:
    """Run the blocking ``call`` (creating topics or tables) in a thread until it succeeds: a dependency that is still
    starting or restarting makes the service wait with backoff — reported not ready — rather than exit into a crash
    loop. False when ``stop`` was set first."""
    for attempt in itertools.count():
        try:
            await asyncio.to_thread(call)
            return True
        except Exception as e:
            pause = STARTUP_BACKOFF_S[min(attempt, len(STARTUP_BACKOFF_S) - 1)]
            log.warning("start-up step failed; retrying", extra={"step": what, "in_s": pause, "error": str(e)[:300]})
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), pause)
        if stop.is_set():
            return False
    return False


def redis_answers(client: Redis) -> Check:
    """Redis (hot state, leases) answers a PING."""

    async def check() -> None:
        if not await asyncio.to_thread(client.ping):
            raise ConnectionError("PING was not answered")

    return check


def kafka_answers(broker: KafkaBroker) -> Check:
    """A Kafka broker answers a metadata request."""

    async def check() -> None:
        if not await broker.ping(timeout=CHECK_TIMEOUT_S):
            raise ConnectionError("no broker answered a metadata request")

    return check


def spark_answers(remote: str) -> Check:
    """The Spark Connect server accepts connections (a session call would wait out the retry policy, ~35 s)."""
    endpoint = DefaultChannelBuilder(remote).endpoint

    async def check() -> None:
        host, _, port = endpoint.rpartition(":")
        _, writer = await asyncio.open_connection(host, int(port))
        writer.close()

    return check


def spark_admission(config: Config, redis: Redis) -> Check:
    """Notes the Spark cluster's admission control (``limit 2, 2 executing, 5 waiting``): its state is in Redis,
    so it fails only when Redis does."""

    async def check() -> str:
        status = await asyncio.to_thread(admission.read_status, config, redis)
        return "off" if status is None else status.describe()

    return check


def dependency_checks(config: Config, redis: Redis, broker: KafkaBroker,
                      subscribers: Sequence[Any] = ()) -> dict[str, Check]:
    """What ``/readyz`` asks of a service: every service uses Redis, Kafka and (the admin record) Spark Connect; a
    service that consumes is ready once its consumers joined their groups. ``spark_admission`` notes how busy the
    Spark cluster is (in the body's ``notes``)."""
    checks = {"redis": redis_answers(redis), "kafka": kafka_answers(broker)}
    if subscribers:
        checks["kafka_group"] = kafka_consumers.joined_group(subscribers)
    if config.spark.remote:
        checks["spark"] = spark_answers(config.spark.remote)
        checks["spark_admission"] = spark_admission(config, redis)
    return checks


def loop_probes(subscribers: Sequence[Any] = (), **heartbeats: Heartbeat) -> dict[str, Probe]:
    """What ``/healthz`` asks of a service: its consume loops run and each periodic loop beats."""
    probes: dict[str, Probe] = dict(heartbeats)
    if subscribers:
        probes["consume"] = kafka_consumers.consume_loops_alive(subscribers)
    return probes


async def serve_health(addr: str | None, checks: Mapping[str, Check], probes: Mapping[str, Probe] | None = None,
                       startup: Callable[[], dict[str, object]] | None = None) -> HealthServer | None:
    """``/readyz`` asks ``checks`` and ``/healthz`` asks ``probes`` (none: answering at all is alive); both show
    ``startup``'s report."""
    if not addr:
        return None
    server = HealthServer(addr, checks, probes, startup)
    await server.start()
    return server


STEP_STOP_GRACE_S = 2.0
"""Once the service stops, how long a periodic step still running may take to end before it is cancelled."""


async def _until_stopped(work: Awaitable[object], stop: asyncio.Event) -> None:
    """Await ``work``; once ``stop`` is set, give it ``STEP_STOP_GRACE_S`` to end, then cancel it (a step reading the
    admin tables on a busy Spark would otherwise hold the stop for minutes)."""
    running = asyncio.ensure_future(work)
    stopping = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({running, stopping}, return_when=asyncio.FIRST_COMPLETED)
        if not running.done():
            await asyncio.wait({running}, timeout=STEP_STOP_GRACE_S)
        if not running.done():
            running.cancel()
        await running
    finally:
        stopping.cancel()
        running.cancel()


async def every(interval_s: float, stop: asyncio.Event, step: Callable[[], Awaitable[object]],
                log: logging.Logger, heartbeat: Heartbeat | None = None) -> None:
    """Run ``step`` every ``interval_s`` until ``stop``; a failing step is logged and retried next time. Each round
    that ends (well or not) beats ``heartbeat``: only a round that never returns leaves it silent."""
    while not stop.is_set():
        try:
            await _until_stopped(step(), stop)
        except asyncio.CancelledError:
            if not stop.is_set():
                raise
            log.info("periodic step abandoned on stop; it runs again at the next start")
            return
        except Exception:
            log.exception("periodic step failed")
        if heartbeat is not None:
            heartbeat.beat()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), interval_s)
