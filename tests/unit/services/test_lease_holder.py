"""``LeaseHolder``: one owner's hold on one lease, over the in-memory twin of ``Leases`` with a clock the test moves."""

from __future__ import annotations

import asyncio

import pytest

from cbt.service.lease import LeaseHolder
from tests.twins.memory_state import MemoryLeases

TTL_S = 0.3


class Clock:
    def __init__(self) -> None:
        self.now_ms = 0

    def __call__(self) -> int:
        return self.now_ms


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def leases(clock: Clock) -> MemoryLeases:
    return MemoryLeases(clock)


def holder(leases: MemoryLeases, owner: str = "a") -> LeaseHolder:
    return LeaseHolder(leases, "leader", owner, TTL_S)


def test_hold_takes_a_free_lease_then_keeps_it(leases: MemoryLeases) -> None:
    a = holder(leases)
    assert a.hold() == "taken"
    assert a.hold() == "kept"
    assert a.is_held and leases.holds(a.fence)


def test_hold_does_not_take_a_lease_another_owner_holds(leases: MemoryLeases) -> None:
    a, b = holder(leases, "a"), holder(leases, "b")
    assert a.hold() == "taken"
    assert b.hold() is None and not b.is_held


def test_a_lease_that_expired_and_was_taken_over_is_not_kept(leases: MemoryLeases, clock: Clock) -> None:
    a, b = holder(leases, "a"), holder(leases, "b")
    a.hold()
    clock.now_ms += 1000  # past the ttl
    assert b.hold() == "taken"
    assert a.hold() is None and not a.is_held
    assert b.token is not None and b.token > 1, "a new acquisition has a newer fencing token"


def test_a_lease_that_expired_untaken_is_taken_again_with_a_new_token(leases: MemoryLeases, clock: Clock) -> None:
    a = holder(leases)
    a.hold()
    first = a.token
    clock.now_ms += 1000
    assert a.hold() == "taken"
    assert a.token is not None and first is not None and a.token > first


def test_release_frees_the_lease_for_another_owner(leases: MemoryLeases) -> None:
    a, b = holder(leases, "a"), holder(leases, "b")
    a.hold()
    a.release()
    assert not a.is_held
    assert b.acquire() is not None


def test_release_leaves_another_owners_lease_alone(leases: MemoryLeases, clock: Clock) -> None:
    a, b = holder(leases, "a"), holder(leases, "b")
    a.hold()
    clock.now_ms += 1000
    b.hold()
    a.release()
    assert leases.holds(b.fence)


def test_keep_renews_until_cancelled(leases: MemoryLeases, clock: Clock) -> None:
    a = holder(leases)
    a.acquire()

    async def scenario() -> None:
        keeping = asyncio.create_task(a.keep(0.01))
        for _ in range(5):
            clock.now_ms += 200  # each step within the ttl of the last renewal
            await asyncio.sleep(0.03)
        keeping.cancel()
        await asyncio.wait({keeping})

    asyncio.run(scenario())
    assert a.is_held and leases.holds(a.fence)


def test_keep_reports_a_lost_lease_once_and_stops(leases: MemoryLeases, clock: Clock) -> None:
    a, b = holder(leases, "a"), holder(leases, "b")
    a.acquire()
    lost: list[str] = []

    async def scenario() -> None:
        keeping = asyncio.create_task(a.keep(0.01, on_lost=lambda: lost.append("lost")))
        clock.now_ms += 1000
        b.acquire()
        await asyncio.wait_for(keeping, 2)

    asyncio.run(scenario())
    assert lost == ["lost"]
    assert a.is_lost and not a.is_held and not a.renew(), "a lost lease is not renewed by this holder"


class FailingLeases(MemoryLeases):
    """Renewals raise (the lease store unreachable)."""

    def renew(self, name: str, owner: str, ttl_ms: int) -> bool:
        raise ConnectionError("Redis unreachable")


def test_keep_retries_renewal_errors_until_the_ttl_has_passed() -> None:
    leases = FailingLeases()
    a = LeaseHolder(leases, "task:x", "a", ttl_s=0.2)
    a.acquire()
    lost: list[float] = []

    async def scenario() -> float:
        loop = asyncio.get_running_loop()
        began = loop.time()
        await asyncio.wait_for(a.keep(0.05, on_lost=lambda: lost.append(loop.time() - began)), 2)
        return loop.time() - began

    took_s = asyncio.run(scenario())
    assert a.is_lost and len(lost) == 1
    assert took_s >= 0.2, "errors within the ttl are retried, not taken for a loss"


def test_hold_raises_a_store_error_and_renews_at_the_next_round(leases: MemoryLeases) -> None:
    a = holder(leases)
    a.hold()
    broken = LeaseHolder(FailingLeases(), "leader", "a", TTL_S)
    broken.token = a.token
    with pytest.raises(ConnectionError):
        broken.hold()
    assert broken.is_held, "an error is not a loss: the next round renews if it can"


def test_fence_names_the_lease_owner_and_token(leases: MemoryLeases) -> None:
    a = holder(leases)
    with pytest.raises(RuntimeError):
        _ = a.fence
    token = a.acquire()
    assert (a.fence.lease, a.fence.owner, a.fence.token) == ("leader", "a", token)
