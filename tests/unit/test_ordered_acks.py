"""Offsets are committed in arrival order whatever order the work finishes in; a failure rewinds."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from cbt.concurrency.ordered_acks import InOrderAcks


@dataclass
class Consumer:
    """What the chain did, in order: ("commit", n) or ("rewind", n)."""

    actions: list[tuple[str, int]] = field(default_factory=list)

    async def commit(self, message: int) -> None:
        self.actions.append(("commit", message))

    async def rewind(self, message: int) -> None:
        self.actions.append(("rewind", message))


async def later(delay_s: float, fail: bool = False) -> None:
    await asyncio.sleep(delay_s)
    if fail:
        raise RuntimeError("recording failed")


def test_commits_follow_arrival_order_when_work_finishes_out_of_order() -> None:
    consumer = Consumer()

    async def scenario() -> None:
        acks = InOrderAcks(consumer.commit, consumer.rewind, max_pending=3)
        for message, delay in ((1, 0.06), (2, 0.0), (3, 0.03)):
            await acks.submit(message, later(delay), acks.generation)
        await acks.drain()

    asyncio.run(scenario())
    assert consumer.actions == [("commit", 1), ("commit", 2), ("commit", 3)]


def test_a_failure_rewinds_to_it_and_drops_the_commits_received_before_the_rewind() -> None:
    consumer = Consumer()

    async def scenario() -> None:
        acks = InOrderAcks(consumer.commit, consumer.rewind, max_pending=3)
        await acks.submit(1, later(0.0), acks.generation)
        await acks.submit(2, later(0.05, fail=True), acks.generation)
        await acks.submit(3, later(0.0), acks.generation)  # received before the rewind: delivered again
        await acks.drain()
        await acks.submit(2, later(0.0), acks.generation)  # the redelivery
        await acks.submit(3, later(0.0), acks.generation)
        await acks.drain()

    asyncio.run(scenario())
    assert consumer.actions == [("commit", 1), ("rewind", 2), ("commit", 2), ("commit", 3)]


def test_submit_waits_while_too_many_messages_are_unsettled() -> None:
    consumer = Consumer()

    async def scenario() -> None:
        release = asyncio.Event()
        acks = InOrderAcks(consumer.commit, consumer.rewind, max_pending=1)
        await acks.submit(1, release.wait(), acks.generation)  # one pending is allowed: returns at once
        second = asyncio.create_task(acks.submit(2, later(0.0), acks.generation))
        await asyncio.sleep(0.05)
        assert not second.done(), "ran ahead of an unsettled message"
        release.set()
        await asyncio.wait_for(second, 1)
        await acks.drain()

    asyncio.run(scenario())
    assert consumer.actions == [("commit", 1), ("commit", 2)]


def test_a_failed_commit_does_not_stop_the_chain() -> None:
    committed: list[int] = []

    async def flaky_commit(message: int) -> None:
        if message == 1:
            raise RuntimeError("partition revoked")
        committed.append(message)

    async def rewind(message: int) -> None:
        raise AssertionError("nothing failed")

    async def scenario() -> None:
        acks = InOrderAcks(flaky_commit, rewind, max_pending=2)
        for message in (1, 2):
            await acks.submit(message, later(0.0), acks.generation)
        await acks.drain()

    asyncio.run(scenario())
    assert committed == [2]
