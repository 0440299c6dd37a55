"""A process's task slots, handed out most urgent first: an asyncio semaphore whose waiters are served by the lowest
key (a priority class's rank, ``cbt.scheduling.admission``), first come first served among equal keys. A holder
can learn that a more urgent waiter has joined (``overtaken``), to give its slot up while it has not begun."""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
from collections.abc import AsyncIterator


class PrioritySlots:
    def __init__(self, slots: int) -> None:
        self._free = slots
        self._waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        self._arrivals = itertools.count()
        self._joined = asyncio.Event()
        """Set (and replaced) whenever a waiter joins."""

    @contextlib.asynccontextmanager
    async def held(self, key: int) -> AsyncIterator[None]:
        """Hold a slot for the body; while none is free, wait behind every waiter with a lower key or the same key
        and an earlier arrival."""
        await self._acquire(key)
        try:
            yield
        finally:
            self._release()

    async def overtaken(self, key: int) -> None:
        """Return once a waiter with a lower key than ``key`` is waiting."""
        while not any(k < key and not future.done() for k, _, future in self._waiters):
            await self._joined.wait()

    @property
    def waiting(self) -> int:
        return sum(1 for _, _, future in self._waiters if not future.done())

    async def _acquire(self, key: int) -> None:
        if self._free > 0 and not self.waiting:
            self._free -= 1
            return
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (key, next(self._arrivals), granted))
        self._joined.set()
        self._joined = asyncio.Event()
        try:
            await granted
        except asyncio.CancelledError:
            if granted.done() and not granted.cancelled():  # handed a slot, then cancelled: pass it on
                self._release()
            raise

    def _release(self) -> None:
        while self._waiters:
            _, _, future = heapq.heappop(self._waiters)
            if not future.done():  # (a waiter cancelled before its turn is skipped)
                future.set_result(None)
                return
        self._free += 1
