"""One pipelined consumer of task messages: it runs a task's work, hands the recording to an ``InOrderAcks``
chain, and goes on to its next message while that recording (admin row, hot index, completion event) runs.

The chain commits each message's offset once its recording is durable and every earlier message of this consumer
is committed; a failure anywhere rewinds the consumer to the message (at-least-once). Stopping: ``stopping`` makes
the consumer leave new messages uncommitted (the next consumer of the group gets them); ``finish`` lets the task
being worked on end and waits until everything already run is recorded and committed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import ValidationError

from cbt.concurrency.ordered_acks import InOrderAcks
from cbt.contract.messages import TaskRequested, decode, describe
from cbt.worker.runner import Outcome

log = logging.getLogger("cbt.worker")


class Runner(Protocol):
    async def begin(self, task: TaskRequested) -> asyncio.Future[Outcome]: ...


class Delivered(Protocol):
    @property
    def body(self) -> bytes: ...


Reject = Callable[[bytes, str], Awaitable[None]]
"""Publishes a body this consumer cannot use, with the reason (``message-rejected``); returns once published."""


@dataclass
class PipelinedConsumer:
    runner: Runner
    chain: InOrderAcks[Any]
    stopping: asyncio.Event
    reject: Reject
    _working: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def on_message(self, message: Delivered) -> None:
        if self.stopping.is_set():
            return
        async with self._working:
            generation = self.chain.generation_of(message)
            recording = await _work(self.runner, self.reject, message.body)
        await self.chain.submit(message, recording, generation)  # enters the chain before anything else runs

    async def finish(self) -> None:
        """After ``stopping`` was set: wait for the task being worked on, then for every recording and commit."""
        async with self._working:
            pass
        await self.chain.drain()


async def _work(runner: Runner, reject: Reject, body: bytes) -> Awaitable[object]:
    """Run the task's work now; returns the awaitable of what remains (a failure surfaces when it is awaited). A body
    that is not a task is rejected with the reason — its offset is committed once the rejection is published."""
    try:
        task = decode(body)
    except ValidationError as e:
        log.error("rejecting a malformed task message", extra={"error": str(e)[:500]})
        return reject(body, describe(e))
    if not isinstance(task, TaskRequested):
        log.error("rejecting a message of another kind on a task topic", extra={"kind": task.kind})
        return reject(body, f"kind: expected 'task-requested' on a task topic, got {task.kind!r}")
    try:
        remaining = await runner.begin(task)
    except Exception as e:
        remaining = asyncio.get_running_loop().create_future()
        remaining.set_exception(e)
    return _logged(task.task_id, remaining)


async def _logged(task_id: str, remaining: asyncio.Future[Outcome]) -> None:
    outcome = await remaining
    log.info("task handled", extra={"task_id": task_id, "outcome": outcome})
