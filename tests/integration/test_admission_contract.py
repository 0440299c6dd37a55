"""One contract for Spark admission's permits, run against the in-memory store and against real Redis.

Several ``SparkAdmission`` objects over one store stand for several processes sharing one Spark cluster. Only the
Redis cases are marked ``integration``; each gets a cluster name of its own, whose keys are removed afterwards.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Callable, Iterator

import pytest

from cbt.concurrency.admission import PermitStore, SparkAdmission, Ticket
from cbt.scheduling.admission import AdmissionStatus, PriorityClass
from tests.twins.memory_admission import MemoryPermitStore

TTL_S, WAITER_TTL_S = 0.6, 0.4
MakeAdmission = Callable[..., SparkAdmission]
"""``make(limit, owner=...)``: one more process on the test's cluster."""


@pytest.fixture(params=[pytest.param("memory", id="memory"),
                        pytest.param("redis", id="redis", marks=pytest.mark.integration)])
def store(request: pytest.FixtureRequest) -> Iterator[PermitStore]:
    if request.param == "memory":
        yield MemoryPermitStore()
        return
    from redis import Redis

    from cbt.adapters.admission import RedisPermitStore, admission_keys

    client: Redis = Redis.from_url(request.getfixturevalue("endpoints").redis_url)
    cluster = f"test-{uuid.uuid4().hex[:10]}:1"
    yield RedisPermitStore(client, cluster)
    client.delete(*admission_keys(cluster))
    client.close()


@pytest.fixture
def make(store: PermitStore) -> Iterator[MakeAdmission]:
    made: list[SparkAdmission] = []

    def admission(limit: int, owner: str | None = None) -> SparkAdmission:
        made.append(SparkAdmission(store, limit, owner or f"p{len(made)}", ttl_s=TTL_S, waiter_ttl_s=WAITER_TTL_S,
                                   poll_s=0.01))
        return made[-1]

    yield admission
    for each in made:
        each.close()


def queued(admission: SparkAdmission, priority: PriorityClass, what: str) -> Ticket:
    """A request that has entered the queue (and is not granted), a millisecond after the previous one: requests of
    two processes that arrive in the same millisecond may be served in either order."""
    time.sleep(0.002)
    ticket = admission.enqueue(priority, what)
    assert not admission.try_acquire(ticket)[0], f"{what} was granted at once"
    return ticket


def test_the_limit_holds_under_many_concurrent_acquirers_across_processes(make: MakeAdmission) -> None:
    processes = [make(3) for _ in range(3)]
    running, most, lock = 0, 0, threading.Lock()

    def work(admission: SparkAdmission, priority: PriorityClass) -> None:
        nonlocal running, most
        for _ in range(3):
            with admission.held_sync(priority, "work"):
                with lock:
                    running += 1
                    most = max(most, running)
                time.sleep(0.02)
                with lock:
                    running -= 1

    threads = [threading.Thread(target=work, args=(admission, priority))
               for admission in processes for priority in ("admin", "forward", "backfill", "rerun")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert most == 3, f"at most {most} held at once; expected the limit, 3"
    assert processes[0].status() == AdmissionStatus(3, executing=0, waiting=0)


def test_async_holders_share_the_limit_with_threads(make: MakeAdmission) -> None:
    first, second = make(2), make(2)
    running, most = 0, 0

    async def task(admission: SparkAdmission) -> None:
        nonlocal running, most
        async with admission.held("forward", "task"):
            running += 1
            most = max(most, running)
            await asyncio.sleep(0.03)
            running -= 1

    async def main() -> None:
        blocker = threading.Thread(target=lambda: _hold_for(second, 0.3))
        blocker.start()
        await asyncio.sleep(0.05)
        began = time.monotonic()
        await asyncio.gather(*(task(first) for _ in range(8)))
        assert time.monotonic() - began >= 8 * 0.03 * 0.9  # one permit left for them: they ran one at a time
        await asyncio.to_thread(blocker.join)

    asyncio.run(main())
    assert most == 1


def _hold_for(admission: SparkAdmission, seconds: float) -> None:
    with admission.held_sync("forward", "blocker"):
        time.sleep(seconds)


def test_waiters_are_served_admin_first_then_freshness_then_reruns_then_backfill(make: MakeAdmission) -> None:
    worker_a, worker_b = make(1), make(1)
    holder = worker_a.enqueue("backfill", "holder")
    assert worker_a.try_acquire(holder)[0]
    waiting = [(worker_a, queued(worker_a, "backfill", "b1")), (worker_b, queued(worker_b, "forward", "f1")),
               (worker_a, queued(worker_a, "rerun", "r1")), (worker_b, queued(worker_b, "admin", "a1")),
               (worker_a, queued(worker_a, "forward", "f2"))]
    served, releasing = [], holder
    owner_of = {ticket.member: admission for admission, ticket in waiting}
    owner_of[holder.member] = worker_a
    while waiting:
        owner_of[releasing.member].release(releasing)
        granted = [(a, t) for a, t in reversed(waiting) if a.try_acquire(t)[0]]
        assert len(granted) == 1, [t.member for _, t in granted]
        (_, releasing), = granted
        waiting.remove(granted[0])
        served.append(releasing.member.rsplit("/", 1)[1])
    assert served == ["a1", "f1", "f2", "r1", "b1"]


def test_a_process_s_requests_of_one_class_keep_their_order(make: MakeAdmission) -> None:
    worker = make(1)
    holder = worker.enqueue("admin", "holder")
    assert worker.try_acquire(holder)[0]
    tickets = [worker.enqueue("forward", f"model-a-{n}") for n in range(5)]  # within one millisecond, mostly
    assert not any(worker.try_acquire(t)[0] for t in tickets)
    worker.release(holder)
    for ticket in tickets:
        assert not any(worker.try_acquire(t)[0] for t in tickets[tickets.index(ticket) + 1:])
        assert worker.try_acquire(ticket)[0]
        worker.release(ticket)


def test_a_dead_process_s_permit_comes_back_when_it_expires(make: MakeAdmission) -> None:
    crashed, alive = make(1), make(1)
    assert crashed.try_acquire(crashed.enqueue("admin", "crashed"))[0]
    crashed.close()  # no more renewals, no release: a killed process
    ticket = alive.enqueue("forward", "after")
    began = time.monotonic()
    assert not alive.try_acquire(ticket)[0]
    while not alive.try_acquire(ticket)[0]:
        assert time.monotonic() - began < TTL_S + 2, "the dead process's permit never came back"
        time.sleep(0.02)
    assert time.monotonic() - began >= TTL_S * 0.5


def test_a_living_process_keeps_its_permit_past_the_ttl(make: MakeAdmission) -> None:
    holder, other = make(1), make(1)
    with holder.held_sync("backfill", "long statement"):
        time.sleep(TTL_S * 2.5)
        assert not other.try_acquire(other.enqueue("admin", "urgent"))[0]


def test_a_waiter_that_died_stops_blocking_the_queue(make: MakeAdmission) -> None:
    holder, dead, alive = make(1), make(1), make(1)
    held = holder.enqueue("forward", "holder")
    assert holder.try_acquire(held)[0]
    queued(dead, "admin", "dead waiter")  # first in line, then never polls again
    ticket = queued(alive, "backfill", "alive waiter")
    holder.release(held)
    assert not alive.try_acquire(ticket)[0], "overtook a waiter ahead of it that is still alive"
    began = time.monotonic()
    while not alive.try_acquire(ticket)[0]:
        assert time.monotonic() - began < WAITER_TTL_S + 2, "the dead waiter kept blocking the queue"
        time.sleep(0.02)


def test_a_cancelled_waiter_leaves_the_queue_at_once(make: MakeAdmission) -> None:
    holder, waiter = make(1), make(1)

    async def main() -> None:
        async with holder.held("forward", "holder"):
            waiting = asyncio.create_task(_enter(waiter))
            await asyncio.sleep(0.1)
            assert holder.status().waiting == 1
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            assert holder.status() == AdmissionStatus(1, executing=1, waiting=0)
        assert holder.status() == AdmissionStatus(1, executing=0, waiting=0)

    asyncio.run(main())


async def _enter(admission: SparkAdmission) -> None:
    async with admission.held("backfill", "cancelled"):
        raise AssertionError("granted while the only permit was held")


def test_the_limit_is_measured_once_on_first_use(store: PermitStore) -> None:
    calls: list[int] = []

    def measure() -> int:
        calls.append(1)
        return 2

    admission = SparkAdmission(store, measure, "p", ttl_s=TTL_S, waiter_ttl_s=WAITER_TTL_S)
    assert admission.status().limit is None
    for _ in range(3):
        with admission.held_sync("admin", "read"):
            pass
    assert calls == [1]
    assert admission.status() == AdmissionStatus(2, executing=0, waiting=0)
    admission.close()
