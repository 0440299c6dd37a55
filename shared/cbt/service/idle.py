"""When a service has nothing left to do, for ``--until-idle`` (arq's burst mode): its consumer groups have committed
everything on the topics they consume — nothing waits and nothing is in flight, since every service commits a message
only once handled — and it reports no other work, for a whole quiet period."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from cbt.adapters.kafka_consumers import GroupLag
from cbt.base.errors import InfraError
from cbt.config.settings import Config

log = logging.getLogger("cbt.service.idle")
POLL_S = 0.5


def consumed(subscribers: Sequence[Any]) -> list[tuple[str, str]]:
    """``(group, topic)`` of every topic the FastStream subscribers consume."""
    return sorted({(s.group_id, topic) for s in subscribers for topic in s.topics})


async def stop_when_idle(config: Config, subscribers: Sequence[Any], is_busy: Callable[[], bool], idle_s: float,
                         stop: asyncio.Event) -> None:
    """Set ``stop`` once the subscribers' groups have had no consumer lag, and ``is_busy`` said no, for ``idle_s``
    (lag that cannot be read counts as work)."""
    lag = GroupLag(config.kafka.bootstrap_servers, config.kafka.client)
    pairs = consumed(subscribers)

    def behind() -> int:
        return sum(lag.behind(group, topic) for group, topic in pairs)

    quiet_since: float | None = None
    try:
        while not stop.is_set():
            try:
                is_quiet = not is_busy() and await asyncio.to_thread(behind) == 0
            except InfraError as e:
                log.warning("consumer lag not read; not idle", extra={"error": str(e)[:300]})
                is_quiet = False
            now = time.monotonic()
            quiet_since = (quiet_since or now) if is_quiet else None
            if quiet_since is not None and now - quiet_since >= idle_s:
                log.info("idle: stopping", extra={"idle_s": idle_s, "topics": [topic for _, topic in pairs]})
                stop.set()
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), POLL_S)
    finally:
        await asyncio.to_thread(lag.close)
