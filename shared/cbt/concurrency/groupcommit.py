"""Group commit: callers wait until their item is durable; items arriving during a flush share the next one.

Each Delta commit costs a few hundred milliseconds whatever its size, so a worker running several tasks at once
records their completions in one commit instead of one each, without any caller returning before its row is
durable.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class GroupCommitter(Generic[T]):
    def __init__(self, flush: Callable[[list[T]], Awaitable[None]], max_batch: int = 500) -> None:
        self._flush = flush
        self._max_batch = max_batch
        self._pending: asyncio.Queue[tuple[T, asyncio.Future[None]]] = asyncio.Queue()
        self._runner: asyncio.Task[None] | None = None

    async def submit(self, item: T) -> None:
        """Returns once ``item`` is durable; raises what the flush raised."""
        if self._runner is None or self._runner.done():
            self._runner = asyncio.create_task(self._run(), name="group-commit")
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        await self._pending.put((item, done))
        await done

    async def close(self) -> None:
        if self._runner is not None:
            self._runner.cancel()
            await asyncio.gather(self._runner, return_exceptions=True)

    async def _run(self) -> None:
        while True:
            batch = [await self._pending.get()]
            while not self._pending.empty() and len(batch) < self._max_batch:
                batch.append(self._pending.get_nowait())
            try:
                await self._flush([item for item, _ in batch])
            except Exception as e:
                for _, done in batch:
                    if not done.done():
                        done.set_exception(e)
            else:
                for _, done in batch:
                    if not done.done():
                        done.set_result(None)
