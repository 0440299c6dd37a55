"""Live events for ``GET /api/v1/events``: the messages of the services' topics, fanned out to every open stream.

The api process consumes ``interval-completed``, ``task-failed``, ``invalidation``, ``bounds-updated`` and every
``task-requested.<pool>`` topic in a consumer group of its own (one per replica, from the latest offset: a stream
shows what happens from now on) and hands each message to ``EventHub.publish``. A slow client never slows the
consumer: each stream has a bounded queue that drops its oldest event when full.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator, Mapping
from typing import Any

from cbt.contract.topics import Topics

QUEUE_SIZE = 1000
Event = tuple[str, dict[str, Any]]
"""An event name (``interval-completed``…) and the message's JSON object."""


def event_names(topics: Topics, pools: tuple[str, ...]) -> dict[str, str]:
    """Topic → SSE event name, for every topic the stream carries."""
    names = {topics.interval_completed: "interval-completed", topics.task_failed: "task-failed",
             topics.invalidation: "invalidation", topics.bounds_updated: "bounds-updated"}
    names.update({topics.task_requested(pool): "task-requested" for pool in pools})
    return names


def decode_event(names: Mapping[str, str], topic: str, body: bytes) -> Event | None:
    """The event for one message, or ``None`` for a topic not streamed or a body that is not a JSON object with a
    ``model`` (other systems may publish anything on the invalidation topic)."""
    name = names.get(topic)
    if name is None:
        return None
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("model"), str):
        return None
    return name, data


class EventHub:
    """Fans events out to the open streams; ``close`` ends them (the server is stopping)."""

    def __init__(self, queue_size: int = QUEUE_SIZE) -> None:
        self._queue_size = queue_size
        self._streams: set[asyncio.Queue[Event | None]] = set()

    @property
    def streams(self) -> int:
        return len(self._streams)

    @contextlib.contextmanager
    def subscribe(self) -> Iterator[asyncio.Queue[Event | None]]:
        """A queue of the events published while it is open; ``None`` in it means the hub closed."""
        queue: asyncio.Queue[Event | None] = asyncio.Queue(self._queue_size)
        self._streams.add(queue)
        try:
            yield queue
        finally:
            self._streams.discard(queue)

    def publish(self, event: Event) -> None:
        for queue in list(self._streams):
            if queue.full():
                queue.get_nowait()
            queue.put_nowait(event)

    def close(self) -> None:
        for queue in list(self._streams):
            if queue.full():
                queue.get_nowait()
            queue.put_nowait(None)
