"""A permit handed on (``SparkAdmission.held``'s ``hand_off_s``): the task a finished one unblocks gets the permit
ahead of a leaf that was already waiting (bench (h): the chain's next level lost the permit to an exec model's
script that had queued first, by the ~40 ms a cascade takes)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from cbt.concurrency.admission import SparkAdmission
from tests.twins.memory_admission import MemoryPermitStore


def granted_order(hand_off_s: float) -> list[str]:
    store = MemoryPermitStore()
    worker, leaves = SparkAdmission(store, 1, "worker", poll_s=0.005), SparkAdmission(store, 1, "leaves", poll_s=0.005)
    order: list[str] = []

    async def run(admission: SparkAdmission, what: str, levels: int, hand_off: float = 0.0) -> None:
        async with admission.held("forward", what, levels, hand_off):
            order.append(what)
            await asyncio.sleep(0.05)

    async def scenario() -> None:
        first = asyncio.create_task(run(worker, "level-1", 2, hand_off_s))
        while not order:
            await asyncio.sleep(0.001)
        leaf = asyncio.create_task(run(leaves, "leaf", 0))  # queued while level 1 runs
        await first
        await asyncio.sleep(0.04)  # the cascade: completion recorded, published, planned, consumed
        await asyncio.gather(leaf, run(worker, "level-2", 1))

    asyncio.run(scenario())
    worker.close()
    leaves.close()
    return order


def test_a_handed_on_permit_goes_to_the_dependent_that_ranks_first() -> None:
    assert granted_order(hand_off_s=0.3) == ["level-1", "level-2", "leaf"]


def test_without_the_hand_off_the_waiting_leaf_takes_it() -> None:
    assert granted_order(hand_off_s=0.0) == ["level-1", "leaf", "level-2"]


def test_closing_gives_a_handed_on_permit_back_at_once() -> None:
    store = MemoryPermitStore()
    admission = SparkAdmission(store, 1, "worker")

    async def scenario() -> None:
        async with admission.held("forward", "task", 1, hand_off_s=60.0):
            pass
        assert store.status().executing == 1, "kept for the hand-off"
        admission.close()
        assert store.status().executing == 0

    asyncio.run(scenario())


@pytest.mark.parametrize("hand_off_s", [0.0, 0.3])
def test_a_body_that_fails_gives_the_permit_back_at_once(hand_off_s: float) -> None:
    store = MemoryPermitStore()
    admission = SparkAdmission(store, 1, "worker")

    async def scenario() -> None:
        with pytest.raises(RuntimeError):
            async with admission.held("forward", "task", 1, hand_off_s):
                raise RuntimeError("boom")
        assert store.status().executing == 0

    asyncio.run(scenario())
    admission.close()


def recorded(order: list[str]) -> Callable[..., Coroutine[Any, Any, None]]:
    """A forward request that holds its permit 50 ms and records when it got it (``held``'s other arguments by
    keyword)."""

    async def run(admission: SparkAdmission, what: str, levels: int, **hand_off: Any) -> None:
        async with admission.held("forward", what, levels, **hand_off):
            order.append(what)
            await asyncio.sleep(0.05)

    return run


def order_with_a_leaf_ranked_first(heir_of: frozenset[str]) -> list[str]:
    """Level 1 of a chain runs; a leaf that ranks ahead of anything after it is queued meanwhile; level 2 (a model
    that depends on level 1's) asks for a permit 40 ms after level 1 ended."""
    store = MemoryPermitStore()
    worker, leaves = SparkAdmission(store, 1, "worker", poll_s=0.005), SparkAdmission(store, 1, "leaves", poll_s=0.005)
    order: list[str] = []

    run = recorded(order)

    async def scenario() -> None:
        first = asyncio.create_task(run(worker, "level-1", 0, hand_off_s=0.3, origin="an.level_1"))
        while not order:
            await asyncio.sleep(0.001)
        leaf = asyncio.create_task(run(leaves, "leaf", 6))  # six levels of lead: it ranks before level 2
        await first
        await asyncio.sleep(0.04)
        await asyncio.gather(leaf, run(worker, "level-2", 0, heir_of=heir_of))

    asyncio.run(scenario())
    worker.close()
    leaves.close()
    return order


def test_a_handed_on_permit_goes_straight_to_a_dependent_of_the_model_that_held_it() -> None:
    assert order_with_a_leaf_ranked_first(frozenset({"an.level_1"})) == ["level-1", "level-2", "leaf"]


def test_a_handed_on_permit_goes_by_rank_to_a_task_of_another_model() -> None:
    assert order_with_a_leaf_ranked_first(frozenset({"an.unrelated"})) == ["level-1", "leaf", "level-2"]


def test_a_dependent_already_waiting_in_the_queue_takes_a_permit_handed_on_later() -> None:
    """bench (h): level 3 queued while a sibling of its parent held the permit; when the sibling handed it on, level 3
    had to be woken to take it, or the queue's leaves went first."""
    store = MemoryPermitStore()
    worker, leaves = SparkAdmission(store, 1, "worker", poll_s=0.005), SparkAdmission(store, 1, "leaves", poll_s=0.005)
    order: list[str] = []

    run = recorded(order)

    async def scenario() -> None:
        sibling = asyncio.create_task(run(worker, "sibling", 0, hand_off_s=0.3, origin="an.level_2"))
        while not order:
            await asyncio.sleep(0.001)
        leaf = asyncio.create_task(run(leaves, "leaf", 6))
        level_3 = asyncio.create_task(run(worker, "level-3", 0, heir_of=frozenset({"an.level_2"})))
        await asyncio.gather(sibling, leaf, level_3)

    asyncio.run(scenario())
    worker.close()
    leaves.close()
    assert order == ["sibling", "level-3", "leaf"]
