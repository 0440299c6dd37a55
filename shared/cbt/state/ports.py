"""Ports the services use for state, declared here once and implemented by adapters (Redis, Delta) and fakes.

Ranges are half-open ``[start, end)``. Coverage is kept as merged ranges (``cbt.scheduling.coverage``).

Invalidation wins over in-flight work (SPEC §8): every model has an **invalidation sequence** — a counter that an
applied invalidation increments. A worker reads the model's current sequence before it runs a task and passes it
to ``record_completed``; the write is refused when an invalidation with a higher sequence overlaps the task's
range, because that task may have read data the invalidation declared stale. Check-and-add is atomic.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from cbt.contract.messages import Message
from cbt.models.spec import ModelId
from cbt.scheduling.coverage import Coverage, Range
from cbt.scheduling.state import RawBounds

DEFAULT_KEEP_INVALIDATIONS = 1000
"""How many of a model's latest invalidation sequences are kept to check completions against."""


@dataclass(frozen=True)
class InFlightTask:
    task_id: str
    range: Range | None
    """``None`` for a scheduled task."""
    deadline_ms: int


class CoverageReader(Protocol):
    def is_built(self) -> bool:
        """False while the index holds nothing trustworthy (Redis emptied, never built): until it is rebuilt from
        the admin tables, an empty coverage may mean "lost", not "never ran"."""
        ...

    def coverage(self, model: ModelId) -> Coverage: ...
    def coverages(self, models: Collection[ModelId]) -> dict[ModelId, Coverage]: ...
    def invalidation_seq(self, model: ModelId) -> int: ...
    def scheduled_ran(self, models: Collection[ModelId]) -> set[ModelId]:
        """The scheduled transformations among ``models`` that have completed at least one successful run."""
        ...


class CoverageWriter(Protocol):
    def record_completed(self, model: ModelId, done: Range, observed_seq: int) -> bool:
        """Add ``done`` unless an invalidation newer than ``observed_seq`` overlaps it; True when added."""
        ...

    def apply_invalidation(self, ranges: Mapping[ModelId, Sequence[Range]]) -> dict[ModelId, int]:
        """Remove the ranges from each model's coverage and bump each model's sequence; returns the new sequences."""
        ...

    def replace_coverage(self, model: ModelId, coverage: Coverage, seq: int) -> None:
        """Overwrite one model's hot coverage and sequence (rebuild from the admin tables)."""
        ...

    def record_scheduled_run(self, model: ModelId) -> None:
        """A scheduled transformation completed a run successfully: from now on it offers data to dependents."""
        ...

    def mark_built(self, built_at: int) -> None:
        """The rebuild from the admin tables finished: the index is trustworthy again."""
        ...


class BoundsStore(Protocol):
    def bounds(self, models: Collection[ModelId]) -> dict[ModelId, RawBounds]: ...
    def put_bounds(self, model: ModelId, bounds: RawBounds) -> RawBounds | None:
        """Store new bounds; returns the previous ones."""
        ...


class TaskLedger(Protocol):
    """Tasks enqueued or running, per model: dedup on enqueue and the planner's in-flight input."""

    def claim(self, model: ModelId, task: InFlightTask) -> bool:
        """Register a task about to be published; False when the same task id is already in flight."""
        ...

    def extend(self, model: ModelId, task: InFlightTask) -> bool:
        """Move a claimed task's deadline to ``task.deadline_ms``; False (and nothing registered) when the task is
        no longer claimed."""
        ...

    def release(self, model: ModelId, task_id: str) -> None: ...
    def in_flight(self, models: Collection[ModelId], now_ms: int) -> dict[ModelId, tuple[InFlightTask, ...]]:
        """Live in-flight tasks; entries past their deadline are dropped (their tasks are planned again)."""
        ...


class Leases(Protocol):
    """Exclusive, expiring ownership with a fencing token (task runs, the coordinator's ticker)."""

    def acquire(self, name: str, owner: str, ttl_ms: int) -> int | None:
        """A fencing token (strictly increasing per name) when acquired, else None."""
        ...

    def renew(self, name: str, owner: str, ttl_ms: int) -> bool: ...
    def release(self, name: str, owner: str) -> None: ...


class Publisher(Protocol):
    """Publishes one message and returns once the broker has acknowledged it."""

    async def publish(self, topic: str, message: Message, key: str) -> None: ...
