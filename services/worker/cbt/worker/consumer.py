"""One consumer of task messages: it starts each task as it arrives and goes on to its next message at once, while
the task runs; an ``InOrderAcks`` chain commits each message's offset once its task is recorded and every earlier
message of this consumer is committed. A failure anywhere rewinds the consumer to the message (at-least-once).

So a slow, hung or retrying task never holds its partition: the messages behind it run meanwhile (the executor's
slots bound how many run at once; a model's own tasks queue behind each other there, not in the consumer). Only
when ``IN_FLIGHT`` messages wait behind an unfinished one does the consumer pause.

Stopping: ``stopping`` makes the consumer leave new messages uncommitted (the next consumer of the group gets them);
``finish`` lets the started tasks end (for at most the shutdown timeout: a hung one is then cancelled — its statement
interrupted or script killed, its lease released, its message left uncommitted for the next consumer) and waits until
what ended is recorded and committed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import ValidationError

from cbt.concurrency.ordered_acks import InOrderAcks
from cbt.contract.messages import TaskRequested, decode, describe
from cbt.observability.tracing import logged_as
from cbt.service.poison import PoisonGuard
from cbt.worker.runner import Outcome

log = logging.getLogger("cbt.worker")


IN_FLIGHT = 32
"""Messages per consumer started but not yet committed (the chain's length) before the consumer waits."""


class Runner(Protocol):
    def why_unusable(self, task: TaskRequested) -> str | None: ...
    async def handle(self, task: TaskRequested) -> Outcome: ...


class Delivered(Protocol):
    @property
    def body(self) -> bytes: ...


Span = Callable[[Delivered, TaskRequested], AbstractContextManager[object]]
"""Opens the trace span a task's handling runs in (``kafka_bus.process_span``)."""


def no_span(message: Delivered, task: TaskRequested) -> AbstractContextManager[object]:
    return nullcontext()


Reject = Callable[[bytes, str], Awaitable[None]]
"""Publishes a body this consumer cannot use, with the reason (``message-rejected``); returns once published."""


@dataclass
class PipelinedConsumer:
    runner: Runner
    chain: InOrderAcks[Any]
    stopping: asyncio.Event
    reject: Reject
    span: Span = no_span
    guard: PoisonGuard = field(default_factory=lambda: PoisonGuard("worker"))
    """Sets a task aside once its handling failed ``max_attempts`` times (not for the infrastructure's failures)."""
    _running: set[asyncio.Future[None]] = field(default_factory=set)

    async def on_message(self, message: Delivered) -> None:
        if self.stopping.is_set():
            return
        generation = self.chain.generation_of(message)
        running = asyncio.ensure_future(_handle(self.runner, self.reject, message, self.span, self.guard))
        self._running.add(running)
        running.add_done_callback(self._running.discard)
        await self.chain.submit(message, running, generation)  # enters the chain before anything else runs

    @property
    def is_running(self) -> bool:
        """Whether a task it started has not ended yet."""
        return bool(self._running)

    async def finish(self, timeout_s: float | None = None) -> None:
        """After ``stopping`` was set: wait up to ``timeout_s`` for the started tasks, cancel those still running,
        then wait until everything that ended is recorded and committed."""
        if self._running:
            await asyncio.wait(set(self._running), timeout=timeout_s)
        for running in list(self._running):
            log.warning("shutdown timeout: stopping a task that is still running; it will be delivered again")
            running.cancel()
        await self.chain.drain()


async def _handle(runner: Runner, reject: Reject, message: Delivered, span: Span, guard: PoisonGuard) -> None:
    """Run the task to its end (a failure surfaces to the chain, which rewinds; the guard sets a task aside that keeps
    failing). A body that is not a task is rejected with the reason — its offset is committed once the rejection is
    published."""
    body = message.body
    try:
        task = decode(body)
    except ValidationError as e:
        log.error("rejecting a malformed task message", extra={"error": str(e)[:500]})
        return await reject(body, describe(e))
    if not isinstance(task, TaskRequested):
        log.error("rejecting a message of another kind on a task topic", extra={"kind": task.kind})
        return await reject(body, f"kind: expected 'task-requested' on a task topic, got {task.kind!r}")
    why = runner.why_unusable(task)
    if why is not None:
        log.error("rejecting a task the planner could not have made", extra={"reason": why[:500]})
        return await reject(body, why)
    with span(message, task), logged_as(model=task.model, task_id=task.task_id):

        async def run() -> None:
            outcome = await runner.handle(task)
            log.info("task handled", extra={"outcome": outcome, "version": task.version})

        await guard.handle(task.task_id, body, run, reject)
