"""Acknowledge consumed messages strictly in the order they arrived, while their work finishes out of order.

A worker's consumer starts each task as its message arrives and goes on to the next message while it runs, so tasks
end (work done and recorded) out of order. A Kafka offset commit covers every earlier message of the partition, so a
message may be committed only once it *and every message before it* are done: committing a later one first would
lose the earlier one on a crash.

``InOrderAcks`` keeps one chain per consumer. Each message is submitted with the awaitable of its remaining work;
it is committed after that work succeeds and after its predecessor settled. When the work fails, the consumer is
rewound to that message in its partition (it and everything after it there are delivered again — every task is
idempotent) and the commits of that partition's messages received before the rewind are dropped. Partitions are
independent: a failure on one neither hides a failure on another nor drops the other's commits (``partition_of``
says which partition a message is from; a rewind seeks only that one). At most ``max_pending`` messages wait
unsettled: ``submit`` returns only when the chain is short enough, so the consumer never runs far ahead.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

M = TypeVar("M")
log = logging.getLogger("cbt.acks")


class InOrderAcks(Generic[M]):
    def __init__(self, commit: Callable[[M], Awaitable[None]], rewind: Callable[[M], Awaitable[None]],
                 max_pending: int = 1, partition_of: Callable[[M], Hashable] = lambda _: None) -> None:
        self._commit = commit
        self._rewind = rewind
        self._max_pending = max_pending
        self._partition_of = partition_of
        self._chain: deque[asyncio.Task[None]] = deque()
        self._generations: dict[Hashable, int] = {}
        """Per partition, bumped by every rewind of it; a message carries the generation it was received in."""

    def generation_of(self, message: M) -> int:
        """The generation of ``message``'s partition: read it when the message arrives, before any await."""
        return self._generations.get(self._partition_of(message), 0)

    async def submit(self, message: M, work: Awaitable[object], generation: int) -> None:
        """Settle ``message`` once ``work`` finished and its predecessors settled; returns when fewer than
        ``max_pending`` messages are still unsettled. ``generation``: ``generation_of(message)`` read when the
        message arrived (before any await)."""
        previous = self._chain[-1] if self._chain else None
        self._chain.append(asyncio.create_task(self._settle(message, work, generation, previous)))
        while self._chain and (self._chain[0].done() or len(self._chain) > self._max_pending):
            await asyncio.shield(self._chain[0])
            self._chain.popleft()

    async def drain(self) -> None:
        """Wait until every submitted message settled (before the consumer closes)."""
        while self._chain:
            await asyncio.shield(self._chain.popleft())

    async def _settle(self, message: M, work: Awaitable[object], generation: int,
                      previous: asyncio.Task[None] | None) -> None:
        try:
            await work
            succeeded = True
        except Exception:
            log.exception("message handling failed; it will be delivered again")
            succeeded = False
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # this chain itself is being cancelled
            log.info("message handling was cancelled (shutdown); it will be delivered again")
            succeeded = False
        if previous is not None:
            await asyncio.shield(previous)
        partition = self._partition_of(message)
        if generation != self._generations.get(partition, 0):
            return  # a predecessor in its partition failed and rewound it: this message comes again
        try:
            if succeeded:
                await self._commit(message)
            else:
                self._generations[partition] = generation + 1
                await self._rewind(message)
        except Exception:  # e.g. the partition was revoked meanwhile: it will be delivered again, harmlessly
            log.warning("offset commit or rewind failed; the message may be delivered again", exc_info=True)
