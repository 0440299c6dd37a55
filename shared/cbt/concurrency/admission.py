"""Holding a Spark cluster's permits from a process: wait your turn, keep the permit alive, give it back.

``SparkAdmission`` drives a ``PermitStore`` (Redis in the services: ``cbt.adapters.admission``; in memory for
tests: ``tests.twins.memory_admission``) under the rules of ``cbt.scheduling.admission``. A waiter polls the store:
every ``poll_s`` while it is near the head of the queue, less often further back (each poll also keeps its place
alive). A thread renews every permit the process holds every third of ``ttl_s``, so a permit outlives a statement
of any length while its process lives, and comes back ``ttl_s`` after the process died.

Never fail open: while the store cannot be reached, a waiter keeps waiting (a worker's task lease stops the task if
that lasts), and a held permit stays held.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable, Collection, Iterator
from dataclasses import dataclass, replace
from typing import Protocol

from cbt.observability import metrics
from cbt.scheduling.admission import AdmissionStatus, PriorityClass, order_score

log = logging.getLogger("cbt.admission")
MAX_POLL_S = 0.5
"""The slowest a waiter far back in the queue polls."""
ERROR_PAUSE_S = 1.0
"""Pause after the store failed to answer."""


class PermitStore(Protocol):
    """Where one cluster's holders and waiters live (shared by every process that uses the cluster)."""

    def attempt(self, member: str, score: int, ttl_ms: int, waiter_ttl_ms: int, limit: int) -> tuple[bool, int]:
        """``cbt.scheduling.admission.attempt``, atomically: ``(True, 0)`` when ``member`` holds a permit now,
        else ``(False, its rank in the queue)``."""
        ...

    def renew(self, members: list[str], ttl_ms: int, add_missing: bool = False) -> list[str]:
        """Extend the permits; returns those that had expired (added again when ``add_missing``)."""
        ...

    def release(self, member: str) -> None:
        ...

    def status(self) -> AdmissionStatus:
        ...


@dataclass(frozen=True)
class Ticket:
    """One request for a permit: its member name in the store and its place in the queue."""

    member: str
    priority: PriorityClass
    score: int
    began: float
    """``time.monotonic()`` when it entered the queue."""


class SparkAdmission:
    """A process's handle on one cluster's permits (implements ``cbt.scheduling.admission.Admission``).

    ``limit`` is a number, or a function that measures one (called once, on first use, in the caller's thread).
    ``owner`` names the process (unique among the cluster's users): a request's member name is the owner and a
    sequence number, so requests of one process that enter the queue in the same millisecond keep their order.
    """

    def __init__(self, store: PermitStore, limit: int | Callable[[], int], owner: str, *, ttl_s: float = 15.0,
                 waiter_ttl_s: float = 3.0, poll_s: float = 0.025) -> None:
        self.store = store
        self.owner = owner
        self.ttl_s, self.waiter_ttl_s, self.poll_s = ttl_s, waiter_ttl_s, poll_s
        self._limit: int | None = limit if isinstance(limit, int) else None
        self._measure = limit if callable(limit) else None
        self._lock = threading.Lock()
        """Guards ``_held`` (and orders a restore of expired permits before a release)."""
        self._measuring = threading.Lock()
        self._held: dict[str, PriorityClass] = {}
        self._handing_off: dict[Ticket, tuple[asyncio.TimerHandle, str | None]] = {}
        """Permits kept a moment after their body ended (``held``'s ``hand_off_s``), with the timer that gives them
        back and the body's ``origin``."""
        self._heirs_waiting: set[asyncio.Future[None]] = set()
        """Waiters that may take a handed-on permit: each is woken when one starts being handed on."""
        self._beating: threading.Thread | None = None
        self._stop = threading.Event()
        self._sequence = itertools.count()

    def limit(self) -> int:
        """The most permits held at once, decided once per process (measured on first call when ``auto``)."""
        with self._measuring:
            if self._limit is None:
                assert self._measure is not None
                measured = self._measure()
                if measured < 1:
                    raise ValueError(f"spark admission: measured a limit of {measured}; expected at least 1")
                self._limit = measured
                log.info("spark admission: limit decided", extra={"limit": measured})
            return self._limit

    def status(self) -> AdmissionStatus:
        seen = self.store.status()
        return AdmissionStatus(self._limit if self._limit is not None else seen.limit, seen.executing, seen.waiting)

    # -- one request, step by step (the context managers below are built from these) ------------------------------

    def enqueue(self, priority: PriorityClass, what: str, lead_levels: int = 0) -> Ticket:
        """A new request (``lead_levels``: its model's chain length); it enters the queue on its first
        ``try_acquire``."""
        member = f"{self.owner}/{next(self._sequence):010d}/{what}"  # (ties of one millisecond: in order)
        score = order_score(priority, time.time_ns() // 1_000_000, lead_levels)
        return Ticket(member, priority, score, time.monotonic())

    def try_acquire(self, ticket: Ticket) -> tuple[bool, int]:
        """One poll: ``(True, 0)`` once the ticket holds a permit (renewed by this process until released), else
        ``(False, rank)``."""
        is_granted, rank = self.store.attempt(ticket.member, ticket.score, int(self.ttl_s * 1000),
                                              int(self.waiter_ttl_s * 1000), self.limit())
        if is_granted:
            with self._lock:
                self._held[ticket.member] = ticket.priority
                self._start_heartbeat()
        return is_granted, rank

    def release(self, ticket: Ticket) -> None:
        """Give the permit back (or leave the queue). When the store cannot be reached, the permit comes back when
        it expires."""
        with self._lock:
            self._held.pop(ticket.member, None)
        try:
            self.store.release(ticket.member)
        except Exception as e:
            log.warning("spark admission: releasing a permit failed; it expires instead",
                        extra={"member": ticket.member, "error": str(e)[:300]})

    def close(self) -> None:
        """Give back the permits being handed off, and stop renewing (held permits then expire, as a crashed
        process's would)."""
        for ticket, (timer, _) in list(self._handing_off.items()):
            timer.cancel()
            self._give_back(ticket)
        self._stop.set()

    # -- context managers -------------------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def held(self, priority: PriorityClass, what: str, lead_levels: int = 0, hand_off_s: float = 0.0,
                   origin: str | None = None, heir_of: Collection[str] = ()) -> AsyncIterator[None]:
        """Hold a permit for the body (waiting for it without blocking the event loop). With ``hand_off_s``, a body
        that ended well keeps the permit that long before giving it back, while the caller goes on: time for a task
        it unblocks to arrive. A request whose ``heir_of`` names the ``origin`` of a permit being handed on (the task
        of a model that depends on the finished one's) takes that permit at once, ahead of the queue — so a chain's
        levels run back to back; any other request takes it when it ranks first."""
        if self._limit is None:
            await asyncio.to_thread(self.limit)
        ticket = self._inherit(priority, heir_of) or await self._wait_for_permit(priority, what, lead_levels, heir_of)
        if hand_off_s <= 0:
            with self._holding(ticket):
                yield
            return
        self._granted(ticket)
        try:
            yield
        except BaseException:
            self._give_back(ticket)
            raise
        timer = asyncio.get_running_loop().call_later(hand_off_s, self._give_back, ticket)
        self._handing_off[ticket] = (timer, origin)
        for woken in self._heirs_waiting:
            if not woken.done():
                woken.set_result(None)

    async def _wait_for_permit(self, priority: PriorityClass, what: str, lead_levels: int,
                               heir_of: Collection[str]) -> Ticket:
        """Wait in the queue — or, while waiting, take a permit handed on to ``heir_of`` (woken when one is)."""
        ticket = self.enqueue(priority, what, lead_levels)
        labels = {"priority": priority}
        metrics.admission_waiting.add(1, labels)
        try:
            while (pause := self._poll(ticket)) is not None:
                if not heir_of:
                    await asyncio.sleep(pause)
                    continue
                woken = asyncio.get_running_loop().create_future()
                self._heirs_waiting.add(woken)
                try:
                    await asyncio.wait_for(woken, pause)
                except TimeoutError:
                    pass
                finally:
                    self._heirs_waiting.discard(woken)
                if (inherited := self._inherit(priority, heir_of)) is not None:
                    self.release(ticket)  # (leaves the queue)
                    return inherited
        except BaseException:
            self.release(ticket)
            raise
        finally:
            metrics.admission_waiting.add(-1, labels)
        return ticket

    def handing_on(self, priority: PriorityClass, heir_of: Collection[str]) -> bool:
        """Whether a request of ``priority`` and ``heir_of`` made now would take a permit being handed on."""
        return any(origin is not None and origin in heir_of and ticket.priority == priority
                   for ticket, (_, origin) in self._handing_off.items())

    def _inherit(self, priority: PriorityClass, heir_of: Collection[str]) -> Ticket | None:
        """A permit being handed on by a body whose origin is in ``heir_of``, taken over (its timer stopped), as a
        ticket of ``priority`` that has just been granted; ``None`` when there is none."""
        for ticket, (timer, origin) in self._handing_off.items():
            if origin is not None and origin in heir_of and ticket.priority == priority:
                timer.cancel()
                del self._handing_off[ticket]
                metrics.admission_permits.add(-1, {"priority": ticket.priority})  # (counted again when granted)
                return replace(ticket, began=time.monotonic())
        return None

    @contextlib.contextmanager
    def held_sync(self, priority: PriorityClass, what: str, lead_levels: int = 0) -> Iterator[None]:
        """Hold a permit for the body, from a thread (the admin record's calls)."""
        self.limit()  # (measuring it may fail: the caller's call fails with it)
        ticket = self.enqueue(priority, what, lead_levels)
        labels = {"priority": priority}
        metrics.admission_waiting.add(1, labels)
        try:
            while (pause := self._poll(ticket)) is not None:
                time.sleep(pause)
        except BaseException:
            self.release(ticket)
            raise
        finally:
            metrics.admission_waiting.add(-1, labels)
        with self._holding(ticket):
            yield

    def admin_permit(self) -> contextlib.AbstractContextManager[None]:
        """A permit at the admin record's priority (``DeltaAdmin``'s ``permit`` hook)."""
        return self.held_sync("admin", "admin record")

    @contextlib.contextmanager
    def _holding(self, ticket: Ticket) -> Iterator[None]:
        self._granted(ticket)
        try:
            yield
        finally:
            self._give_back(ticket)

    def _granted(self, ticket: Ticket) -> None:
        labels = {"priority": ticket.priority}
        metrics.admission_wait.record(time.monotonic() - ticket.began, labels)
        metrics.admission_permits.add(1, labels)

    def _give_back(self, ticket: Ticket) -> None:
        if self._handing_off.pop(ticket, None) is None and ticket.member not in self._held:
            return  # (already given back: ``close`` ran before the hand-off's timer)
        metrics.admission_permits.add(-1, {"priority": ticket.priority})
        self.release(ticket)

    def _poll(self, ticket: Ticket) -> float | None:
        """``None`` once granted, else how long to wait before polling again."""
        try:
            is_granted, rank = self.try_acquire(ticket)
        except Exception as e:  # the store is unreachable: wait (never run unadmitted)
            log.warning("spark admission: the permit store did not answer; waiting",
                        extra={"member": ticket.member, "error": str(e)[:300]})
            return min(ERROR_PAUSE_S, self.waiter_ttl_s / 3)
        if is_granted:
            return None
        limit = self.limit()
        far_s = self.poll_s * rank / limit if rank >= 2 * limit else self.poll_s
        return min(max(far_s, self.poll_s), MAX_POLL_S, self.waiter_ttl_s / 3)

    # -- heartbeat ------------------------------------------------------------------------------------------------

    def _start_heartbeat(self) -> None:
        if self._beating is None or not self._beating.is_alive():
            self._stop.clear()
            self._beating = threading.Thread(target=self._beat, name="cbt-spark-admission", daemon=True)
            self._beating.start()

    def _beat(self) -> None:
        pause = self.ttl_s / 3
        while not self._stop.wait(pause):
            with self._lock:
                members = list(self._held)
            if not members:
                continue
            try:
                lost = self.store.renew(members, int(self.ttl_s * 1000))
            except Exception as e:
                log.warning("spark admission: renewing permits failed; retrying", extra={"error": str(e)[:300]})
                pause = min(1.0, self.ttl_s / 10)
                continue
            pause = self.ttl_s / 3
            if lost:
                self._restore(lost)

    def _restore(self, lost: list[str]) -> None:
        """Count again the permits that expired while their statements still run (the process stalled past their
        ttl): those released meanwhile stay released (the check and the write hold the lock ``release`` takes)."""
        with self._lock:
            still = [member for member in lost if member in self._held]
            try:
                if still:
                    self.store.renew(still, int(self.ttl_s * 1000), add_missing=True)
            except Exception as e:
                log.warning("spark admission: restoring expired permits failed", extra={"error": str(e)[:300]})
                return
        if still:
            log.warning("spark admission: permits had expired while their statements ran (this process stalled "
                        "past their ttl); counted again", extra={"permits": len(still)})
