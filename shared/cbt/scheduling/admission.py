"""Admission control for one Spark cluster, pure: who runs next when more statements want to run than it can hold.

Every process that runs statements on a Spark cluster (workers' tasks, the admin record's reads and writes) takes a
*permit* first; at most ``limit`` permits are held at once, across all processes. The others wait in one queue,
ordered by ``order_score``: the admin record first, then the rest by the time each entered the queue, a re-run
``HANDICAP_MS`` and backfill more behind forward fill (FIFO within a class, so a model's tasks keep the order they
reached the queue in). Freshness comes first, and history is never starved: a backfill that has waited longer than
its handicap goes ahead of forward work that arrived after that. Within a class, a task of a model in a chain of
transformations queues ``CRITICAL_PATH_LEAD_MS`` ahead per level of its longest chain (``ModelSet.chain_length``,
every level alike, the last one too): new rows reach the end of a chain before the leaves beside it take the
permits, and a leaf still waits at most that lead per level. A forward task of a model with dependents keeps its
permit ``HAND_OFF_S`` after its statements end: a forward task of a model depending on it that asks for a permit in
that process meanwhile takes it at once (the chain's levels run back to back, a leaf waiting at most the chain's
jobs); otherwise it goes to whoever ranks first.

Priority classes, most urgent first:

- ``admin``: the admin record (completion, failure and retry records; the coordinator's hot-index rebuild, recovery
  and consolidation reads; invalidations; the API's reads). Cascades and start-up wait on them.
- ``forward``: forward fill and scheduled fire times — freshness.
- ``rerun``: re-running invalidated ranges.
- ``backfill``: history.

A holder keeps its permit by renewing it before ``expires_ms``; a waiter keeps its place by polling before its own
expiry. A process that dies therefore gives its permits back, and stops blocking the queue, once they expire.
``Board`` and ``attempt`` are those rules over plain values: the Redis adapter (``cbt.adapters.admission``) runs
the same rules atomically in Lua; the in-memory twin (``tests.twins.memory_admission``) runs these.
"""

from __future__ import annotations

from collections.abc import Collection
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from dataclasses import dataclass, field
from typing import Literal, Protocol
from urllib.parse import urlsplit

PriorityClass = Literal["admin", "forward", "rerun", "backfill"]
PRIORITIES: tuple[PriorityClass, ...] = ("admin", "forward", "rerun", "backfill")
"""Most urgent first; a class's index is its rank in the queue."""
PRIORITY_SPAN_MS = 10**13
"""The admin record's band of scores is below everyone else's, this wide (about 300 years of milliseconds): every
score stays an integer below 2**53, exact as a Redis sorted-set score (a double)."""
HANDICAP_MS: dict[PriorityClass, int] = {"admin": 0, "forward": 0, "rerun": 10_000, "backfill": 30_000}
"""How far behind forward fill each class queues: a waiter goes ahead of forward work that entered the queue more
than its handicap after it (so a steady stream of forward tasks or bounds scans delays backfill by at most 30 s
per permit, never forever)."""
CRITICAL_PATH_LEAD_MS = 5_000
"""How far ahead a task queues per level of its model's longest chain (``order_score``'s ``lead_levels``)."""
HAND_OFF_S = 0.3
"""How long a forward task of a model with dependents keeps its permit after its statements end: its completion is
recorded and published meanwhile, and the dependent task it unblocks arrives (tens of milliseconds) and takes the
permit instead of a leaf that was already waiting (``hand_off_s``)."""
MAX_LEAD_LEVELS = 6
"""Levels beyond this many lead no further (a long chain cannot push leaves back without bound)."""
DEFAULT_PORT = 15002
"""Spark Connect's port when a remote names none."""

MaxStatements = int | Literal["auto", "off"]
"""``spark.max_concurrent_statements``: a number, ``auto`` (``auto_limit`` of the cluster's default parallelism) or
``off`` (no admission control)."""


def auto_limit(parallelism: int) -> int:
    """The limit ``auto`` gives a cluster of ``parallelism`` (its default parallelism, usually its executor cores):
    half of it, at least 1. A statement keeps more than its tasks busy: the driver plans it, generates and compiles
    its code, reads the Delta log and commits, so one small statement alone used about 1.4 cores of a 2-core local
    server; two at once each ran 2-4x slower than alone and finished the mixed bench (h) later than one at a time."""
    return max(1, parallelism // 2)


def task_priority(direction: str, is_scheduled: bool) -> PriorityClass:
    """A task's class: a scheduled fire time or forward fill before re-runs before backfill."""
    if is_scheduled or direction == "forward":
        return "forward"
    return "rerun" if direction == "rerun" else "backfill"


def order_score(priority: PriorityClass, enqueued_ms: int, lead_levels: int = 0) -> int:
    """The queue's sort key: the admin record's band first; then the time the waiter entered the queue plus its
    class's handicap (``HANDICAP_MS``), less ``CRITICAL_PATH_LEAD_MS`` per lead level (its model's chain length)."""
    if priority == "admin":
        return enqueued_ms
    lead = min(max(lead_levels, 0), MAX_LEAD_LEVELS) * CRITICAL_PATH_LEAD_MS
    return PRIORITY_SPAN_MS + enqueued_ms + HANDICAP_MS[priority] - lead


def hand_off_s(priority: PriorityClass, feeds_others: bool) -> float:
    """How long a task keeps its permit after its statements end: ``HAND_OFF_S`` for forward work of a model others
    depend on (the freshness of its chain), nothing otherwise (a backfill or re-run gives its permit straight back:
    throughput, not latency, is what history needs)."""
    return HAND_OFF_S if priority == "forward" and feeds_others else 0.0


def cluster_of(remote: str) -> str:
    """The Spark cluster a Connect URL names, as ``host:port`` (lower-case host, default port filled in, path and
    parameters such as a token or user id dropped): every process and every deployment that reaches the same server
    by the same name shares one limit, whatever its Redis key prefix."""
    parts = urlsplit(remote)
    host = (parts.hostname or "").lower()
    if not host:
        raise ValueError(f"expected a Spark Connect URL such as sc://host:15002, got {remote!r}")
    return f"{host}:{parts.port or DEFAULT_PORT}"


def is_granted(holders: int, limit: int, rank: int) -> bool:
    """A waiter at ``rank`` (0 = head of the queue) may take a permit: there are free permits, and fewer waiters
    ahead of it than free permits — so no later waiter overtakes an earlier one that is still alive."""
    return rank < limit - holders


@dataclass(frozen=True)
class AdmissionStatus:
    """What a cluster's admission looks like now: ``limit`` is ``None`` until some process decided one."""

    limit: int | None
    executing: int
    waiting: int

    def describe(self) -> str:
        limit = "not decided yet" if self.limit is None else str(self.limit)
        return f"limit {limit}, {self.executing} executing, {self.waiting} waiting"


@dataclass
class Board:
    """One cluster's permits: holders and waiters by member name. Times are milliseconds of one clock."""

    holders: dict[str, int] = field(default_factory=dict)
    """member -> when its permit expires unless renewed."""
    queue: dict[str, int] = field(default_factory=dict)
    """member -> its ``order_score``."""
    alive: dict[str, int] = field(default_factory=dict)
    """member -> when its place in the queue expires unless it polls again."""
    limit: int | None = None
    """The limit the latest attempt applied (shown by the status)."""

    def purge(self, now_ms: int) -> None:
        """Forget expired permits and waiters that stopped polling."""
        for member in [m for m, until in self.holders.items() if until <= now_ms]:
            del self.holders[member]
        for member in [m for m, until in self.alive.items() if until <= now_ms]:
            del self.alive[member]
            self.queue.pop(member, None)

    def rank(self, member: str) -> int:
        score = self.queue[member]
        return sum(1 for m, s in self.queue.items() if (s, m) < (score, member))

    def status(self, now_ms: int) -> AdmissionStatus:
        executing = sum(1 for until in self.holders.values() if until > now_ms)
        waiting = sum(1 for until in self.alive.values() if until > now_ms)
        return AdmissionStatus(self.limit, executing, waiting)


def attempt(board: Board, member: str, score: int, now_ms: int, ttl_ms: int, waiter_ttl_ms: int,
            limit: int) -> tuple[bool, int]:
    """One try at a permit: ``(True, 0)`` when ``member`` holds one now (also when it already did: renewed), else
    ``(False, its rank)`` with its place in the queue kept (taken at ``score`` on its first try)."""
    board.purge(now_ms)
    board.limit = limit
    if member in board.holders:
        board.holders[member] = now_ms + ttl_ms
        return True, 0
    board.queue.setdefault(member, score)
    board.alive[member] = now_ms + waiter_ttl_ms
    rank = board.rank(member)
    if not is_granted(len(board.holders), limit, rank):
        return False, rank
    del board.queue[member], board.alive[member]
    board.holders[member] = now_ms + ttl_ms
    return True, 0


def renew(board: Board, members: list[str], now_ms: int, ttl_ms: int, add_missing: bool = False) -> list[str]:
    """Extend the permits ``members`` hold; returns those that had expired — held again when ``add_missing`` (their
    statements still run, so they count)."""
    board.purge(now_ms)
    lost = [m for m in members if m not in board.holders]
    kept = members if add_missing else [m for m in members if m in board.holders]
    board.holders.update(dict.fromkeys(kept, now_ms + ttl_ms))
    return lost


def release(board: Board, member: str) -> None:
    """Give the permit back, or leave the queue."""
    board.holders.pop(member, None)
    board.queue.pop(member, None)
    board.alive.pop(member, None)


class Admission(Protocol):
    """The port: hold one of the cluster's permits while statements run (``async with admission.held(...)``, or
    ``with admission.held_sync(...)`` from a thread)."""

    def held(self, priority: PriorityClass, what: str, lead_levels: int = 0, hand_off_s: float = 0.0,
             origin: str | None = None, heir_of: Collection[str] = ()) -> AbstractAsyncContextManager[None]:
        ...

    def held_sync(self, priority: PriorityClass, what: str, lead_levels: int = 0) -> AbstractContextManager[None]:
        ...

    def handing_on(self, priority: PriorityClass, heir_of: Collection[str]) -> bool:
        """Whether ``held(priority, …, heir_of=heir_of)`` entered now would take a permit being handed on."""
        ...

