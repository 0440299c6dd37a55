"""In-process implementations of the state ports (``cbt.state.ports``), for tests only: no service uses them.

They follow the same contract as the Redis adapter (``cbt.adapters.redis_state``), checked by one contract test
suite run against both, so a service tested against these behaves the same against Redis.

Invalidation bookkeeping (shared with the Redis adapter): every model keeps its sequence, its coverage, the log of
applied invalidations ``(seq, range)`` and a *floor*: the log holds every invalidation with ``seq > floor``. The log
is pruned to the last ``keep_invalidations`` sequences (the floor rises with it) and cleared by
``replace_coverage`` (the floor becomes the restored sequence). ``record_completed`` fails closed: it refuses when
the observed sequence is below the floor (newer invalidations may have been forgotten) or above the current
sequence (the state was reset since the worker read it), as well as when a logged newer invalidation overlaps.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from cbt.models.spec import ModelId
from cbt.scheduling import coverage as cov
from cbt.scheduling.coverage import EMPTY, Coverage, Range
from cbt.scheduling.state import RawBounds
from cbt.state.ports import DEFAULT_KEEP_INVALIDATIONS, InFlightTask


def _monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


def overlaps(a: Range, b: Range) -> bool:
    """Whether two half-open ranges share a position (touching or empty ranges do not)."""
    return max(a[0], b[0]) < min(a[1], b[1])


@dataclass
class _ModelCoverage:
    ranges: Coverage = EMPTY
    seq: int = 0
    floor: int = 0
    log: list[tuple[int, Range]] = field(default_factory=list)

    def accepts(self, done: Range, observed_seq: int) -> bool:
        """Whether a task that read sequence ``observed_seq`` may mark ``done`` covered (see the module doc)."""
        if observed_seq > self.seq or observed_seq < self.floor:
            return False
        return not any(seq > observed_seq and overlaps(r, done) for seq, r in self.log)

    def invalidate(self, ranges: Sequence[Range], keep: int) -> int:
        """Remove ``ranges``, log them under a new sequence, prune the log; returns the new sequence."""
        self.seq += 1
        for r in ranges:
            if r[0] < r[1]:
                self.ranges = cov.remove(self.ranges, r)
                self.log.append((self.seq, r))
        cut = self.seq - keep
        if cut > self.floor:
            self.floor = cut
            self.log = [(seq, r) for seq, r in self.log if seq > cut]
        return self.seq


class MemoryCoverage:
    """``CoverageReader`` and ``CoverageWriter`` over a dict; every call is atomic (one lock)."""

    def __init__(self, keep_invalidations: int = DEFAULT_KEEP_INVALIDATIONS, built: bool = True) -> None:
        """``built=False`` starts like an emptied Redis: untrusted until ``mark_built``."""
        self._keep = keep_invalidations
        self._models: dict[ModelId, _ModelCoverage] = {}
        self._scheduled_ran: set[ModelId] = set()
        self._built = built
        self._lock = threading.Lock()

    def is_built(self) -> bool:
        return self._built

    def mark_built(self, built_at: int) -> None:
        del built_at
        self._built = True

    def coverage(self, model: ModelId) -> Coverage:
        with self._lock:
            return self._get(model).ranges

    def coverages(self, models: Collection[ModelId]) -> dict[ModelId, Coverage]:
        with self._lock:
            return {m: self._get(m).ranges for m in models}

    def invalidation_seq(self, model: ModelId) -> int:
        with self._lock:
            return self._get(model).seq

    def scheduled_ran(self, models: Collection[ModelId]) -> set[ModelId]:
        with self._lock:
            return self._scheduled_ran.intersection(models)

    def record_scheduled_run(self, model: ModelId) -> None:
        with self._lock:
            self._scheduled_ran.add(model)

    def record_completed(self, model: ModelId, done: Range, observed_seq: int) -> bool:
        """Add ``done`` unless an invalidation newer than ``observed_seq`` overlaps it; True when added."""
        if done[0] >= done[1]:
            return True
        with self._lock:
            state = self._models.setdefault(model, _ModelCoverage())
            if not state.accepts(done, observed_seq):
                return False
            state.ranges = cov.add(state.ranges, done)
            return True

    def apply_invalidation(self, ranges: Mapping[ModelId, Sequence[Range]]) -> dict[ModelId, int]:
        """Remove the ranges from each model's coverage and bump each model's sequence; returns the new ones."""
        with self._lock:
            return {
                model: self._models.setdefault(model, _ModelCoverage()).invalidate(rs, self._keep)
                for model, rs in ranges.items()
            }

    def replace_coverage(self, model: ModelId, coverage: Coverage, seq: int) -> None:
        """Overwrite one model's coverage and sequence; the invalidation log restarts empty at ``seq``."""
        with self._lock:
            self._models[model] = _ModelCoverage(ranges=cov.merge(coverage), seq=seq, floor=seq)

    def _get(self, model: ModelId) -> _ModelCoverage:
        return self._models.get(model) or _ModelCoverage()


class MemoryBounds:
    """``BoundsStore`` over a dict."""

    def __init__(self) -> None:
        self._bounds: dict[ModelId, RawBounds] = {}
        self._lock = threading.Lock()

    def bounds(self, models: Collection[ModelId]) -> dict[ModelId, RawBounds]:
        """Stored bounds of the given models; models never stored are missing (not scanned yet)."""
        with self._lock:
            return {m: self._bounds[m] for m in models if m in self._bounds}

    def put_bounds(self, model: ModelId, bounds: RawBounds) -> RawBounds | None:
        with self._lock:
            previous = self._bounds.get(model)
            self._bounds[model] = bounds
            return previous


class MemoryTaskLedger:
    """``TaskLedger`` over a dict of task id to task per model.

    A claim is refused while the same id is registered; an entry past its deadline stays registered until
    ``in_flight`` drops it (the planner reads in-flight tasks before it claims new ones).
    """

    def __init__(self) -> None:
        self._tasks: dict[ModelId, dict[str, InFlightTask]] = {}
        self._lock = threading.Lock()

    def claim(self, model: ModelId, task: InFlightTask) -> bool:
        with self._lock:
            tasks = self._tasks.setdefault(model, {})
            if task.task_id in tasks:
                return False
            tasks[task.task_id] = task
            return True

    def extend(self, model: ModelId, task: InFlightTask) -> bool:
        with self._lock:
            tasks = self._tasks.get(model, {})
            if task.task_id not in tasks:
                return False
            tasks[task.task_id] = task
            return True

    def release(self, model: ModelId, task_id: str) -> None:
        with self._lock:
            self._tasks.get(model, {}).pop(task_id, None)

    def in_flight(self, models: Collection[ModelId], now_ms: int) -> dict[ModelId, tuple[InFlightTask, ...]]:
        """Every requested model's live tasks, by deadline then id; those with ``deadline_ms < now_ms`` are dropped."""
        out: dict[ModelId, tuple[InFlightTask, ...]] = {}
        with self._lock:
            for model in models:
                live = {k: t for k, t in self._tasks.get(model, {}).items() if t.deadline_ms >= now_ms}
                if model in self._tasks:
                    self._tasks[model] = live
                out[model] = tuple(sorted(live.values(), key=lambda t: (t.deadline_ms, t.task_id)))
        return out


@dataclass
class _Lease:
    owner: str
    expires_ms: int


class MemoryLeases:
    """``Leases`` with expiry read from ``clock_ms`` (monotonic milliseconds by default; tests pass a fake)."""

    def __init__(self, clock_ms: Callable[[], int] = _monotonic_ms) -> None:
        self._clock_ms = clock_ms
        self._leases: dict[str, _Lease] = {}
        self._tokens: dict[str, int] = {}
        self._lock = threading.Lock()

    def acquire(self, name: str, owner: str, ttl_ms: int) -> int | None:
        """A fencing token (strictly increasing per name) when acquired, else None (held, even by ``owner``)."""
        with self._lock:
            if self._held(name) is not None:
                return None
            self._leases[name] = _Lease(owner, self._clock_ms() + ttl_ms)
            self._tokens[name] = self._tokens.get(name, 0) + 1
            return self._tokens[name]

    def renew(self, name: str, owner: str, ttl_ms: int) -> bool:
        with self._lock:
            lease = self._held(name)
            if lease is None or lease.owner != owner:
                return False
            lease.expires_ms = self._clock_ms() + ttl_ms
            return True

    def release(self, name: str, owner: str) -> None:
        with self._lock:
            lease = self._held(name)
            if lease is not None and lease.owner == owner:
                del self._leases[name]

    def _held(self, name: str) -> _Lease | None:
        lease = self._leases.get(name)
        if lease is not None and lease.expires_ms <= self._clock_ms():
            del self._leases[name]
            return None
        return lease


@dataclass(frozen=True)
class MemoryState:
    """The four in-memory ports together, like ``RedisState``."""

    coverage: MemoryCoverage = field(default_factory=MemoryCoverage)
    bounds: MemoryBounds = field(default_factory=MemoryBounds)
    ledger: MemoryTaskLedger = field(default_factory=MemoryTaskLedger)
    leases: MemoryLeases = field(default_factory=MemoryLeases)
