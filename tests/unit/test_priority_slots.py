"""A worker's task slots go to the most urgent waiter first, in arrival order within a class
(``cbt.concurrency.slots``)."""

from __future__ import annotations

import asyncio

import pytest

from cbt.concurrency.slots import PrioritySlots


async def _take(slots: PrioritySlots, key: int, name: str, order: list[str], release: asyncio.Event) -> None:
    async with slots.held(key):
        order.append(name)
        await release.wait()


def test_waiters_get_slots_by_key_then_by_arrival() -> None:
    async def main() -> list[str]:
        slots, order, release = PrioritySlots(1), list[str](), asyncio.Event()
        first = asyncio.create_task(_take(slots, 3, "running", order, release))
        await asyncio.sleep(0)
        waiters = [asyncio.create_task(_take(slots, key, name, order, release))
                   for key, name in ((3, "backfill-1"), (1, "forward-1"), (2, "rerun"), (1, "forward-2"))]
        await asyncio.sleep(0.01)
        assert order == ["running"] and slots.waiting == 4
        release.set()
        await asyncio.gather(first, *waiters)
        return order

    assert asyncio.run(main()) == ["running", "forward-1", "forward-2", "rerun", "backfill-1"]


def test_a_cancelled_waiter_neither_takes_nor_loses_a_slot() -> None:
    async def main() -> None:
        slots, order, release = PrioritySlots(1), list[str](), asyncio.Event()
        first = asyncio.create_task(_take(slots, 1, "running", order, release))
        await asyncio.sleep(0)
        cancelled = asyncio.create_task(_take(slots, 0, "cancelled", order, release))
        later = asyncio.create_task(_take(slots, 2, "later", order, release))
        await asyncio.sleep(0.01)
        cancelled.cancel()
        release.set()
        await asyncio.gather(first, later)
        with pytest.raises(asyncio.CancelledError):
            await cancelled
        assert order == ["running", "later"]
        async with slots.held(0):  # the slot came back
            pass

    asyncio.run(main())


def test_a_waiter_cancelled_just_after_its_turn_passes_the_slot_on() -> None:
    async def main() -> None:
        slots, order, release = PrioritySlots(1), list[str](), asyncio.Event()
        holding = slots.held(1)
        await holding.__aenter__()
        handed = asyncio.create_task(_take(slots, 0, "handed", order, release))
        later = asyncio.create_task(_take(slots, 2, "later", order, release))
        await asyncio.sleep(0.01)
        await holding.__aexit__(None, None, None)  # hands the slot to "handed", which has not resumed yet
        handed.cancel()
        release.set()
        await asyncio.wait_for(later, 1)
        assert order == ["later"]
        with pytest.raises(asyncio.CancelledError):
            await handed

    asyncio.run(main())


def test_a_holder_learns_when_a_more_urgent_waiter_joins() -> None:
    async def main() -> None:
        slots, order, release = PrioritySlots(1), list[str](), asyncio.Event()
        holder = asyncio.create_task(_take(slots, 3, "backfill", order, release))
        await asyncio.sleep(0)
        overtaken = asyncio.create_task(slots.overtaken(3))
        as_urgent = asyncio.create_task(_take(slots, 3, "another backfill", order, release))
        await asyncio.sleep(0.01)
        assert not overtaken.done(), "a waiter of the same key does not overtake"
        more_urgent = asyncio.create_task(_take(slots, 1, "forward", order, release))
        await asyncio.wait_for(overtaken, 1.0)
        release.set()
        await asyncio.gather(holder, as_urgent, more_urgent)

    asyncio.run(main())
