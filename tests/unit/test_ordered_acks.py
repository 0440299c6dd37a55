"""Offsets are committed in arrival order whatever order the work finishes in; a failure rewinds."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from cbt.concurrency.ordered_acks import InOrderAcks


@dataclass
class Consumer:
    """What the chain did, in order: ("commit", n) or ("rewind", n)."""

    actions: list[tuple[str, object]] = field(default_factory=list)

    async def commit(self, message: object) -> None:
        self.actions.append(("commit", message))

    async def rewind(self, message: object) -> None:
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
            await acks.submit(message, later(delay), acks.generation_of(message))
        await acks.drain()

    asyncio.run(scenario())
    assert consumer.actions == [("commit", 1), ("commit", 2), ("commit", 3)]


def test_a_failure_rewinds_to_it_and_drops_the_commits_received_before_the_rewind() -> None:
    consumer = Consumer()

    async def scenario() -> None:
        acks = InOrderAcks(consumer.commit, consumer.rewind, max_pending=3)
        await acks.submit(1, later(0.0), acks.generation_of(1))
        await acks.submit(2, later(0.05, fail=True), acks.generation_of(2))
        await acks.submit(3, later(0.0), acks.generation_of(3))  # received before the rewind: delivered again
        await acks.drain()
        await acks.submit(2, later(0.0), acks.generation_of(2))  # the redelivery
        await acks.submit(3, later(0.0), acks.generation_of(3))
        await acks.drain()

    asyncio.run(scenario())
    assert consumer.actions == [("commit", 1), ("rewind", 2), ("commit", 2), ("commit", 3)]


def test_submit_waits_while_too_many_messages_are_unsettled() -> None:
    consumer = Consumer()

    async def scenario() -> None:
        release = asyncio.Event()
        acks = InOrderAcks(consumer.commit, consumer.rewind, max_pending=1)
        await acks.submit(1, release.wait(), acks.generation_of(1))  # one pending is allowed: returns at once
        second = asyncio.create_task(acks.submit(2, later(0.0), acks.generation_of(2)))
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
            await acks.submit(message, later(0.0), acks.generation_of(message))
        await acks.drain()

    asyncio.run(scenario())
    assert committed == [2]


def test_failures_on_two_partitions_rewind_both() -> None:
    """One consumer, two partitions: each failed message is delivered again, whatever failed before it elsewhere."""
    consumer = Consumer()

    async def scenario() -> None:
        acks: InOrderAcks[tuple[str, int]] = InOrderAcks(consumer.commit, consumer.rewind, max_pending=4,
                                                         partition_of=lambda message: message[0])
        arrivals = ((("a", 1), True), (("b", 1), True), (("b", 2), False), (("a", 2), False))
        received = [(message, fail, acks.generation_of(message)) for message, fail in arrivals]
        for message, fail, generation in received:
            await acks.submit(message, later(0.01, fail=fail), generation)
        await acks.drain()
        await acks.submit(("b", 1), later(0.0), acks.generation_of(("b", 1)))  # the redeliveries
        await acks.submit(("a", 1), later(0.0), acks.generation_of(("a", 1)))
        await acks.drain()

    asyncio.run(scenario())
    assert consumer.actions == [("rewind", ("a", 1)), ("rewind", ("b", 1)), ("commit", ("b", 1)), ("commit", ("a", 1))]


def test_a_failure_on_one_partition_leaves_the_others_commits() -> None:
    consumer = Consumer()

    async def scenario() -> None:
        acks: InOrderAcks[tuple[str, int]] = InOrderAcks(consumer.commit, consumer.rewind, max_pending=4,
                                                         partition_of=lambda message: message[0])
        first, second = ("a", 1), ("b", 1)
        generations = acks.generation_of(first), acks.generation_of(second)
        await acks.submit(first, later(0.0, fail=True), generations[0])
        await acks.submit(second, later(0.0), generations[1])
        await acks.drain()

    asyncio.run(scenario())
    assert consumer.actions == [("rewind", ("a", 1)), ("commit", ("b", 1))]
