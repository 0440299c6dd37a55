"""In-process implementations of the state ports (``cbt.state.ports``), for tests only: no service uses them.

They follow the same contract as the Redis adapter (``cbt.adapters.redis_state``), checked by one contract test
suite run against both, so a service tested against these behaves the same against Redis.

The invalidation bookkeeping (sequence, log of marks, floor, version, generation; the fail-closed rules) is
``cbt.scheduling.protocol``; the log is pruned to the latest ``keep_invalidations`` marks (the floor rises with it).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from cbt.contract.messages import TaskFailed
from cbt.models.spec import ModelId
from cbt.scheduling import coverage as cov
from cbt.scheduling import protocol, version_pieces
from cbt.scheduling.coverage import EMPTY, Coverage, Range
from cbt.scheduling.protocol import Mark
from cbt.scheduling.snapshot import RawBounds
from cbt.scheduling.task_runs import TaskRun, all_tasks, tasks
from cbt.state.holds import accepted, add_held, overlapping, without
from cbt.state.ports import DEFAULT_KEEP_INVALIDATIONS, KEEP_FAILURES, Fence, HeldInterval, InFlightTask


def _monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


@dataclass
class _ModelCoverage:
    ranges: Coverage = EMPTY
    seq: int = 0
    floor: int = 0
    rebuilt_at: int = 0
    version: int = 0
    log: list[Mark] = field(default_factory=list)
    reruns: set[Range] = field(default_factory=set)
    computed_by: dict[str, Coverage] = field(default_factory=dict)

    def complete(self, done: Range, observed_seq: int, model_version: str | None = None) -> bool:
        if observed_seq > self.seq or observed_seq < self.floor:
            return False  # fail closed, and like Redis, without counting as a write
        part = protocol.accepted_part(done, observed_seq, self.seq, self.floor, self.log)
        self.ranges = cov.union(self.ranges, part)
        for r in part:
            self.computed_by = version_pieces.computed(self.computed_by, r, model_version)
        self.reruns = {r for r in self.reruns if not cov.covers(self.ranges, r)}
        self.version += 1
        return part == (done,)

    def invalidate(self, epoch: int, runs: Sequence[TaskRun], keep: int) -> None:
        """Remove the runs' tasks and log each run under ``epoch`` unless it is already applied; prune the log."""
        if protocol.is_applied(epoch, self.rebuilt_at, self.log):
            return
        self.seq = max(self.seq, epoch)
        self.version += 1
        for run in runs:
            if run.start < run.end:
                self.ranges = cov.remove(self.ranges, run.span)
                self.computed_by = version_pieces.removed(self.computed_by, run.span)
                self.log.append(Mark(epoch, run.span))
                self.reruns.update(tasks(run))
        if len(self.log) > keep:
            self.log.sort(key=lambda m: m.epoch)
            dropped, self.log = self.log[: len(self.log) - keep], self.log[len(self.log) - keep :]
            self.floor = max(self.floor, *(m.epoch for m in dropped))


class MemoryCoverage:
    """``CoverageReader`` and ``CoverageWriter`` over a dict; every call is atomic (one lock)."""

    def __init__(self, keep_invalidations: int = DEFAULT_KEEP_INVALIDATIONS, built: bool = True,
                 leases: MemoryLeases | None = None) -> None:
        """``built=False`` starts like an emptied Redis: untrusted until ``mark_built``. ``leases`` are the ones
        a completion's fence is checked against."""
        self._keep = keep_invalidations
        self._leases = leases or MemoryLeases()
        self._models: dict[ModelId, _ModelCoverage] = {}
        self._fired: dict[ModelId, set[int]] = {}
        self._versions: dict[ModelId, str] = {}
        self._built = built
        self._generation = uuid.uuid4().hex
        self._lock = threading.Lock()

    def flush(self) -> None:
        """Forget everything, like an emptied Redis."""
        with self._lock:
            self._models.clear()
            self._fired.clear()
            self._versions.clear()
            self._built = False
            self._generation = uuid.uuid4().hex

    def is_built(self) -> bool:
        return self._built

    def generation(self) -> str:
        return self._generation

    def mark_built(self, built_at: int, generation: str) -> bool:
        del built_at
        with self._lock:
            if generation != self._generation:
                return False
            self._built = True
            return True

    def coverage(self, model: ModelId) -> Coverage:
        with self._lock:
            return self._get(model).ranges

    def coverages(self, models: Collection[ModelId]) -> dict[ModelId, Coverage]:
        with self._lock:
            return {m: self._get(m).ranges for m in models}

    def invalidation_seq(self, model: ModelId) -> int:
        with self._lock:
            return self._get(model).seq

    def reruns(self, models: Collection[ModelId]) -> dict[ModelId, tuple[Range, ...]]:
        with self._lock:
            return {m: tuple(sorted(self._get(m).reruns)) for m in models}

    def scheduled_ran(self, models: Collection[ModelId]) -> set[ModelId]:
        with self._lock:
            return set(self._fired).intersection(models)

    def deployed_versions(self, models: Collection[ModelId]) -> dict[ModelId, str]:
        with self._lock:
            return {m: self._versions[m] for m in models if m in self._versions}

    def announce_versions(self, versions: Mapping[ModelId, str]) -> None:
        with self._lock:
            self._versions.update(versions)

    def latest_fires(self, models: Collection[ModelId]) -> dict[ModelId, int]:
        with self._lock:
            return {m: max(self._fired[m]) for m in models if self._fired.get(m)}

    def has_fired(self, model: ModelId, fire_unix: int) -> bool:
        with self._lock:
            return fire_unix in self._fired.get(model, ())

    def record_scheduled_run(self, model: ModelId, fire_unix: int) -> None:
        with self._lock:
            self._fired.setdefault(model, set()).add(fire_unix)

    def version_coverage(self, models: Collection[ModelId]) -> dict[ModelId, dict[str | None, Coverage]]:
        with self._lock:
            return {m: version_pieces.by_version(self._get(m).ranges, [
                (start, end, v) for v, ranges in self._get(m).computed_by.items() for start, end in ranges])
                for m in models}

    def record_completed(self, model: ModelId, done: Range, observed_seq: int, fence: Fence | None = None,
                         version: str | None = None) -> bool:
        if done[0] >= done[1]:
            return True
        with self._lock:
            if fence is not None and not self._leases.holds(fence):
                return False
            return self._models.setdefault(model, _ModelCoverage()).complete(done, observed_seq, version)

    def apply_invalidation(self, epoch: int, ranges: Mapping[ModelId, Sequence[TaskRun]]) -> None:
        with self._lock:
            for model, rs in ranges.items():
                self._models.setdefault(model, _ModelCoverage()).invalidate(epoch, rs, self._keep)

    def forget_invalidation(self, epochs: Mapping[ModelId, int]) -> None:
        with self._lock:
            for model, epoch in epochs.items():
                state = self._models.setdefault(model, _ModelCoverage())
                state.log = [m for m in state.log if m.epoch != epoch]
                state.floor = max(state.floor, epoch)

    def versions(self, models: Collection[ModelId]) -> dict[ModelId, str]:
        with self._lock:
            return {m: f"{self._generation}:{self._get(m).version}" for m in models}

    def replace_coverage(self, model: ModelId, coverage: Coverage, seq: int, version: str,
                         reruns: Sequence[TaskRun] = (), computed_by: Mapping[str, Coverage] | None = None) -> bool:
        with self._lock:
            state = self._get(model)
            if version != f"{self._generation}:{state.version}":
                return False
            merged = cov.merge(coverage)
            pieces = version_pieces.version_pieces(merged, computed_by or {})
            self._models[model] = _ModelCoverage(ranges=merged, seq=seq, floor=seq, rebuilt_at=seq,
                                                 version=state.version + 1,
                                                 reruns=set(all_tasks(reruns)),
                                                 computed_by={v: cov.merge((s, e) for s, e, w in pieces if w == v)
                                                              for v in {w for _, _, w in pieces}})
            return True

    def adopt_versions(self, model: ModelId, computed_by: Mapping[str, Coverage]) -> None:
        with self._lock:
            state = self._models.setdefault(model, _ModelCoverage())
            state.computed_by = version_pieces.adopted(state.computed_by, computed_by)
            state.version += 1

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

    def delete_bounds(self, model: ModelId) -> RawBounds | None:
        with self._lock:
            return self._bounds.pop(model, None)


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

    def claim_all(self, claims: Sequence[tuple[ModelId, InFlightTask]]) -> list[bool]:
        return [self.claim(model, task) for model, task in claims]

    def extend_all(self, extensions: Sequence[tuple[ModelId, InFlightTask]]) -> list[bool]:
        return [self.extend(model, task) for model, task in extensions]

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

    def holds(self, fence: Fence) -> bool:
        """Whether ``fence.owner`` still holds the lease under ``fence.token``."""
        with self._lock:
            lease = self._held(fence.lease)
            return lease is not None and lease.owner == fence.owner and self._tokens.get(fence.lease) == fence.token

    def _held(self, name: str) -> _Lease | None:
        lease = self._leases.get(name)
        if lease is not None and lease.expires_ms <= self._clock_ms():
            del self._leases[name]
            return None
        return lease


@dataclass
class MemoryFailures:
    failed: dict[ModelId, dict[str, TaskFailed]] = field(default_factory=dict)

    def record_failure(self, failure: TaskFailed) -> None:
        tasks = self.failed.setdefault(failure.model, {})
        tasks[failure.task_id] = failure
        for oldest in sorted(tasks.values(), key=lambda f: f.failed_at_ms, reverse=True)[KEEP_FAILURES:]:
            del tasks[oldest.task_id]

    def clear_failure(self, model_id: ModelId, task_id: str) -> None:
        self.failed.get(model_id, {}).pop(task_id, None)

    def recent_failures(self, model_ids: Collection[ModelId]) -> dict[ModelId, list[TaskFailed]]:
        return {m: sorted(self.failed[m].values(), key=lambda f: f.failed_at_ms, reverse=True)
                for m in model_ids if self.failed.get(m)}


@dataclass
class MemorySkips:
    ranges: dict[ModelId, Coverage] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def skipped(self, model_ids: Collection[ModelId]) -> dict[ModelId, Coverage]:
        return {m: self.ranges[m] for m in model_ids if self.ranges.get(m)}

    def skip(self, model_id: ModelId, r: Range) -> Coverage:
        return self._change(model_id, lambda ranges: cov.add(ranges, r))

    def unskip(self, model_id: ModelId, r: Range) -> Coverage:
        return self._change(model_id, lambda ranges: cov.remove(ranges, r))

    def _change(self, model_id: ModelId, change: Callable[[Coverage], Coverage]) -> Coverage:
        with self._lock:
            self.ranges[model_id] = change(self.ranges.get(model_id, EMPTY))
            return self.ranges[model_id]


@dataclass
class MemoryHolds:
    intervals: dict[ModelId, tuple[HeldInterval, ...]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def held(self, model_ids: Collection[ModelId]) -> dict[ModelId, tuple[HeldInterval, ...]]:
        return {m: self.intervals[m] for m in model_ids if self.intervals.get(m)}

    def hold(self, model_id: ModelId, held: Sequence[HeldInterval]) -> None:
        with self._lock:
            self.intervals[model_id] = add_held(self.intervals.get(model_id, ()), held)

    def release(self, model_id: ModelId, r: Range) -> list[HeldInterval]:
        with self._lock:
            before = self.intervals.get(model_id, ())
            self.intervals[model_id] = without(before, r)
            return overlapping(before, r)

    def accept(self, model_id: ModelId, r: Range, who: str, version: str | None) -> list[HeldInterval]:
        with self._lock:
            self.intervals[model_id], marked = accepted(self.intervals.get(model_id, ()), r, who, version)
            return marked


class MemoryState:
    """The in-memory ports together, like ``RedisState``; the coverage checks fences against the leases."""

    def __init__(self, keep_invalidations: int = DEFAULT_KEEP_INVALIDATIONS, built: bool = True,
                 clock_ms: Callable[[], int] = _monotonic_ms) -> None:
        self.leases = MemoryLeases(clock_ms)
        self.coverage = MemoryCoverage(keep_invalidations, built, self.leases)
        self.bounds = MemoryBounds()
        self.ledger = MemoryTaskLedger()
        self.failures = MemoryFailures()
        self.skips = MemorySkips()
        self.holds = MemoryHolds()
