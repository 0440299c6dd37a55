"""The worker's consumer: tasks run concurrently, commits stay in arrival order, and a stop that loses nothing."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from cbt.concurrency.ordered_acks import InOrderAcks
from cbt.contract.messages import IntervalCompleted, TaskRequested
from cbt.worker.consumer import PipelinedConsumer
from cbt.worker.runner import Outcome

MODEL = "out.minute"


@dataclass(frozen=True)
class Message:
    name: str
    body: bytes


def message(name: str, position: int = 0) -> Message:
    task = TaskRequested(task_id=f"{MODEL}:{position}:60", model=MODEL, position=position, interval=60)
    return Message(name, task.encode())


@dataclass
class Runner:
    gate: asyncio.Event | None = None
    fail: bool = False
    gated: set[int | None] | None = None
    """Positions that wait for ``gate`` (all, when None)."""
    begun: list[int | None] = field(default_factory=list)
    ended: list[int | None] = field(default_factory=list)

    def why_unusable(self, task: TaskRequested) -> str | None:
        return "step 1 is outside the model's interval" if task.step == 1 else None

    async def handle(self, task: TaskRequested) -> Outcome:
        self.begun.append(task.position)
        if self.gate is not None and (self.gated is None or task.position in self.gated):
            await self.gate.wait()
        if self.fail:
            raise RuntimeError("redis unavailable")
        self.ended.append(task.position)
        return "completed"


@dataclass
class Broker:
    actions: list[tuple[str, str]] = field(default_factory=list)
    rejected: list[tuple[bytes, str]] = field(default_factory=list)
    is_down: bool = False

    async def commit(self, m: Message) -> None:
        self.actions.append(("commit", m.name))

    async def rewind(self, m: Message) -> None:
        self.actions.append(("rewind", m.name))

    async def reject(self, body: bytes, reason: str) -> None:
        if self.is_down:
            raise RuntimeError("broker unavailable")
        self.rejected.append((body, reason))


def consumer_for(runner: Runner, broker: Broker, stopping: asyncio.Event) -> PipelinedConsumer:
    return PipelinedConsumer(runner, InOrderAcks(broker.commit, broker.rewind, max_pending=8), stopping, broker.reject)


def test_stopping_lets_the_running_task_finish_commits_it_and_starts_nothing_new() -> None:
    broker = Broker()

    async def scenario() -> None:
        runner, stopping = Runner(gate=asyncio.Event()), asyncio.Event()
        consumer = consumer_for(runner, broker, stopping)
        running = asyncio.create_task(consumer.on_message(message("m1")))
        await asyncio.sleep(0.02)
        stopping.set()  # SIGTERM while m1's SQL runs
        finishing = asyncio.create_task(consumer.finish())
        await consumer.on_message(message("m2", position=60))  # delivered after the stop: left for another consumer
        await asyncio.sleep(0.02)
        assert not finishing.done(), "must wait for the task being worked on"
        assert runner.gate is not None
        runner.gate.set()
        await asyncio.wait_for(asyncio.gather(running, finishing), 1)
        assert runner.begun == [0]

    asyncio.run(scenario())
    assert broker.actions == [("commit", "m1")]


def test_a_hung_task_does_not_hold_the_messages_behind_it_and_commits_stay_in_order() -> None:
    broker = Broker()

    async def scenario() -> None:
        runner = Runner(gate=asyncio.Event(), gated={0})
        consumer = consumer_for(runner, broker, asyncio.Event())
        for i in range(5):
            await asyncio.wait_for(consumer.on_message(message(f"m{i}", position=60 * i)), 1)
        await asyncio.sleep(0.02)
        assert runner.ended == [60, 120, 180, 240], "the tasks behind the hung one ran meanwhile"
        assert broker.actions == [], "nothing is committed past an unfinished message"
        assert runner.gate is not None
        runner.gate.set()
        await asyncio.wait_for(consumer.finish(), 1)

    asyncio.run(scenario())
    assert broker.actions == [("commit", f"m{i}") for i in range(5)]


def test_past_the_shutdown_timeout_a_hung_task_is_cancelled_and_left_for_redelivery() -> None:
    broker = Broker()
    cancelled: list[int | None] = []

    class HungRunner(Runner):
        async def handle(self, task: TaskRequested) -> Outcome:
            try:
                return await super().handle(task)
            except asyncio.CancelledError:
                cancelled.append(task.position)
                raise

    async def scenario() -> None:
        stopping = asyncio.Event()
        consumer = consumer_for(HungRunner(gate=asyncio.Event(), gated={0}), broker, stopping)
        await consumer.on_message(message("m0", position=0))
        await consumer.on_message(message("m1", position=60))
        stopping.set()
        await asyncio.wait_for(consumer.finish(timeout_s=0.05), 1)

    asyncio.run(scenario())
    assert cancelled == [0]
    assert broker.actions == [("rewind", "m0")], "the hung one and everything after it are delivered again"


def test_a_failing_runner_rewinds_to_the_message_and_a_malformed_one_is_rejected_then_committed() -> None:
    broker = Broker()

    async def scenario() -> None:
        consumer = consumer_for(Runner(fail=True), broker, asyncio.Event())
        await consumer.on_message(Message("junk", b"{not json"))
        await consumer.on_message(message("m1"))
        await consumer.finish()

    asyncio.run(scenario())
    assert broker.actions == [("commit", "junk"), ("rewind", "m1")]
    ((body, reason),) = broker.rejected
    assert body == b"{not json" and "Invalid JSON" in reason


def test_a_message_of_another_kind_is_rejected_with_the_reason() -> None:
    broker = Broker()
    other = IntervalCompleted(task_id=f"{MODEL}:0:60", model=MODEL, position=0, interval=60)

    async def scenario() -> None:
        consumer = consumer_for(Runner(), broker, asyncio.Event())
        await consumer.on_message(Message("other", other.encode()))
        await consumer.finish()

    asyncio.run(scenario())
    assert broker.actions == [("commit", "other")]
    assert broker.rejected == [(other.encode(), "kind: expected 'task-requested' on a task topic, got "
                                                "'interval-completed'")]


def test_a_task_the_runner_finds_unusable_is_rejected_with_its_reason_and_never_run() -> None:
    """A year of one-position steps of a 60-position model: refused before any work, not rendered on the loop."""
    broker = Broker()
    year = TaskRequested(task_id=f"{MODEL}:0:31536000", model=MODEL, position=0, interval=31_536_000, step=1)
    runner = Runner()

    async def scenario() -> None:
        consumer = consumer_for(runner, broker, asyncio.Event())
        await consumer.on_message(Message("year", year.encode()))
        await consumer.on_message(message("next", position=60))
        await consumer.finish()

    asyncio.run(scenario())
    assert broker.rejected == [(year.encode(), "step 1 is outside the model's interval")]
    assert runner.begun == [60] and broker.actions == [("commit", "year"), ("commit", "next")]


def test_a_rejection_that_cannot_be_published_is_not_committed() -> None:
    broker = Broker(is_down=True)

    async def scenario() -> None:
        consumer = consumer_for(Runner(), broker, asyncio.Event())
        await consumer.on_message(Message("junk", b"{not json"))
        await consumer.finish()

    asyncio.run(scenario())
    assert broker.actions == [("rewind", "junk")], "redelivered, so the rejection is not lost"
