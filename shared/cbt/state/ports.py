"""Ports the services use for state, declared here once and implemented by adapters (Redis, Delta) and fakes.

Ranges are half-open ``[start, end)``. Coverage is kept as merged ranges (``cbt.scheduling.coverage``).

Invalidation wins over in-flight work (docs/design/invalidations.md#invalidation-wins-over-in-flight-tasks). The
rules — epochs, sequences, live parts, the fail-closed cases — are ``cbt.scheduling.protocol`` and
``docs/protocol.md``: a worker reads the model's sequence before it runs a task and
passes it to ``record_completed``, which adds only what no newer invalidation overlaps. Check-and-add is atomic.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from cbt.contract.messages import Message, TaskFailed
from cbt.models.spec import ModelId
from cbt.scheduling.coverage import Coverage, Range
from cbt.scheduling.protocol import Piece
from cbt.scheduling.snapshot import RawBounds
from cbt.scheduling.task_runs import TaskRun
from cbt.state.admin_records import (
    CheckedInterval,
    CompletedInterval,
    Consolidation,
    InvalidationRecord,
    ScheduledRun,
)

DEFAULT_KEEP_INVALIDATIONS = 1000
"""How many of a model's latest invalidation sequences are kept to check completions against."""


@dataclass(frozen=True)
class Fence:
    """The lease a task runs under: its completion counts only while ``owner`` still holds ``lease`` with
    ``token`` (nobody took it over after it expired)."""

    lease: str
    owner: str
    token: int


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
    def deployed_versions(self, models: Collection[ModelId]) -> dict[ModelId, str]:
        """The version each model's tasks must carry now (``announce_versions``); models never announced are
        absent."""
        ...

    def coverages(self, models: Collection[ModelId]) -> dict[ModelId, Coverage]: ...
    def version_coverage(self, models: Collection[ModelId]) -> dict[ModelId, dict[str | None, Coverage]]:
        """Each model's covered ranges by the version that computed them (``None``: covered, version not known:
        recorded without one); ``{}`` for a model that covers nothing (``cbt.scheduling.version_pieces``)."""
        ...

    def invalidation_seq(self, model: ModelId) -> int: ...
    def reruns(self, models: Collection[ModelId]) -> dict[ModelId, tuple[Range, ...]]:
        """Per model, the tasks invalidations removed that have not run again yet (each to be re-run whole, once)."""
        ...

    def scheduled_ran(self, models: Collection[ModelId]) -> set[ModelId]:
        """The scheduled transformations among ``models`` that have completed at least one successful run."""
        ...

    def latest_fires(self, models: Collection[ModelId]) -> dict[ModelId, int]:
        """Per scheduled model among ``models`` that has run successfully, the latest fire time it ran for."""
        ...

    def has_fired(self, model: ModelId, fire_unix: int) -> bool:
        """Whether a scheduled model's run for ``fire_unix`` succeeded (among its latest 1000 successful runs; after
        Redis was emptied, only the latest one recorded in the admin tables is known)."""
        ...


class CoverageWriter(Protocol):
    def announce_versions(self, versions: Mapping[ModelId, str]) -> None:
        """Record the version each model's tasks must carry from now on (the coordinator's leader, before it
        publishes what a change re-runs): a worker drops a task of another version instead of running it."""
        ...

    def record_completed(self, model: ModelId, done: Range, observed_seq: int, fence: Fence | None = None,
                         version: str | None = None) -> bool:
        """Add the part of ``done`` that no invalidation newer than ``observed_seq`` overlaps (nothing in the
        fail-closed cases, or when ``fence`` is given and no longer held), as computed by the model's ``version``
        (``None``: not known); True when all of ``done`` was added."""
        ...

    def apply_invalidation(self, epoch: int, ranges: Mapping[ModelId, Sequence[TaskRun]]) -> None:
        """Remove the tasks (runs, ``cbt.scheduling.task_runs``) from each model's coverage, list them as re-runs,
        and raise its sequence to ``epoch``, once per epoch (a model that already reflects ``epoch`` is left alone).
        A re-run task stays listed until the model's coverage holds all of it again; the listing is kept as runs."""
        ...

    def forget_invalidation(self, epochs: Mapping[ModelId, int]) -> None:
        """A pruned invalidation (``DurableRecord.prune_invalidations``): drop its marks from each model's log and
        raise the log's floor to its epoch, so a completion by a task that read an older sequence is refused (fails
        closed) rather than judged without them."""
        ...

    def generation(self) -> str:
        """An id of this index's life: it changes when the index is emptied (a rebuild's fence)."""
        ...

    def versions(self, models: Collection[ModelId]) -> dict[ModelId, str]:
        """Each model's version, which changes with every write to it and with the generation."""
        ...

    def replace_coverage(self, model: ModelId, coverage: Coverage, seq: int, version: str,
                         reruns: Sequence[TaskRun] = (), computed_by: Mapping[str, Coverage] | None = None) -> bool:
        """Overwrite one model's coverage, sequence, re-runs (runs of tasks) and the versions that computed its
        ranges (``computed_by``; a rebuild from the durable record) if its version is still ``version``; False when
        something wrote to it since (read the durable record again)."""
        ...

    def adopt_versions(self, model: ModelId, computed_by: Mapping[str, Coverage]) -> None:
        """Where ``computed_by``'s ranges lie, the model's ranges now hold those versions (a switch: the model's
        table is its build's; a rollback: its kept rows are back)."""
        ...

    def record_scheduled_run(self, model: ModelId, fire_unix: int) -> None:
        """A scheduled transformation completed its run for ``fire_unix`` successfully: from now on it offers data
        to dependents, and no copy of the run for that fire time runs again."""
        ...

    def mark_built(self, built_at: int, generation: str) -> bool:
        """The rebuild from the durable record finished: the index is trustworthy again (unless it was emptied
        meanwhile: False, and it stays untrusted)."""
        ...


class HotIndex(CoverageReader, CoverageWriter, Protocol):
    """The hot coverage index, read and written (``RedisCoverage``, ``MemoryCoverage``): the worker records its
    completions in it, the invalidator applies events to it, a rebuild overwrites it."""


class DurableRecord(Protocol):
    """The authoritative record of coverage and invalidations (``cbt.adapters.delta_admin.DeltaAdmin``)."""

    def record_completed(self, rows: Iterable[CompletedInterval]) -> None: ...
    def coverage(self, model_ids: Collection[ModelId] | None = None) -> dict[ModelId, Coverage]:
        """Live coverage per model (``cbt.scheduling.protocol.live_coverage``)."""
        ...

    def live_pieces(self, model_ids: Collection[ModelId], window: Range) -> dict[ModelId, list[Piece]]:
        """The live pieces of each model's rows that overlap ``window`` (``cbt.scheduling.protocol.live_pieces``):
        which tasks ran there."""
        ...

    def version_coverage(self, model_ids: Collection[ModelId]) -> dict[ModelId, dict[str | None, Coverage]]:
        """What each version of each model computed that is still live (``cbt.scheduling.protocol
        .version_coverage``; ``None``: rows recorded without a version): where an in-place change has not reached
        yet, and what a deployment made before versions computed."""
        ...

    def adopt(self, model_id: ModelId, source_id: ModelId, keep: Range | None = None) -> None:
        """Replace the model's rows with the runs of ``source_id``'s live rows, in one commit (a build switched to:
        the table holds what the build's tasks computed, in its version); they carry the model's highest epoch. The
        model's own rows overlapping ``keep`` stay as they are (the head its build did not cover: its re-run finds
        the tasks that computed it)."""
        ...

    def invalidation_seqs(self, model_ids: Collection[ModelId] | None = None) -> dict[ModelId, int]:
        """The highest epoch recorded per model; models never invalidated are absent."""
        ...

    def invalidated_ranges(self, model_ids: Collection[ModelId]) -> dict[ModelId, tuple[TaskRun, ...]]:
        """Every task ever recorded as invalidated per model, as the runs recorded (a record written before runs
        lists one task per entry); models never invalidated are absent."""
        ...

    def prune_invalidations(self, received_before_ms: int) -> list[InvalidationRecord]:
        """Delete the records received before ``received_before_ms`` whose deletion changes nothing derived from
        the durable record (``cbt.scheduling.protocol.is_prunable`` for every model they name: not its newest
        epoch, masking no row computed before them, all their tasks covered again) and return them. Their ids
        are forgotten: an event with one of them, published again later, is applied again."""
        ...

    def record_invalidation(self, record: InvalidationRecord) -> InvalidationRecord:
        """Record an accepted event under a newly allocated epoch (``record.seqs`` is ignored) and return it as
        stored; an event already recorded (same id) is returned as first recorded, epoch and ranges included."""
        ...

    def consolidate(self, model_id: ModelId | None = None,
                    still_allowed: Callable[[], bool] = lambda: True) -> list[Consolidation]:
        """Rewrite each model's rows as runs of its live tasks (coverage and task boundaries unchanged, fewer
        rows). ``still_allowed`` is asked before each model's rewrite (the leader's fencing check); when it says no,
        the rest is left for the next consolidation."""
        ...

    def last_scheduled_runs(self, model_ids: Collection[ModelId] | None = None,
                            successful_only: bool = False) -> dict[ModelId, ScheduledRun]: ...


@dataclass(frozen=True)
class CheckFilter:
    """Which check results to read: by status, by check name, and overlapping a range of positions."""

    status: str | None = None
    check: str | None = None
    window: Range | None = None

    def selects(self, result: CheckedInterval) -> bool:
        return ((self.status is None or result.status == self.status)
                and (self.check is None or result.check == self.check)
                and (self.window is None or (result.position < self.window[1] and self.window[0] < result.end)))


ALL_RESULTS = CheckFilter()


class CheckResultsRecord(Protocol):
    """Every interval check's verdict (``cbt_check_results``, docs/checks.md), history kept."""

    def record_check_results(self, results: Collection[CheckedInterval]) -> None:
        """Returns once the results are durable."""
        ...

    def check_results(self, model_ids: Collection[ModelId] | None = None, limit: int = 100,
                      where: CheckFilter = ALL_RESULTS) -> list[CheckedInterval]:
        """Recorded results that ``where`` selects, newest first (a task's results share their time: then by
        position, newest first)."""
        ...


class BoundsStore(Protocol):
    def bounds(self, models: Collection[ModelId]) -> dict[ModelId, RawBounds]: ...
    def put_bounds(self, model: ModelId, bounds: RawBounds) -> RawBounds | None:
        """Store new bounds; returns the previous ones."""
        ...

    def delete_bounds(self, model: ModelId) -> RawBounds | None:
        """Forget a model's bounds (it reads as not scanned yet); returns the ones removed."""
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

    def claim_all(self, claims: Sequence[tuple[ModelId, InFlightTask]]) -> list[bool]:
        """``claim`` of each, in order, in one call (a task id repeated in ``claims`` is refused the second time)."""
        ...

    def extend_all(self, extensions: Sequence[tuple[ModelId, InFlightTask]]) -> list[bool]:
        """``extend`` of each, in order, in one call."""
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


class SkippedRanges(Protocol):
    """Per model, the ranges an operator told the scheduler to stop trying (``POST /api/v1/models/{id}/skip``):
    never planned, shown as skipped, still a gap to dependents; ``unskip`` makes them plannable again. Hot state:
    an emptied Redis forgets them, and the ranges are then tried again (nothing is lost)."""

    def skipped(self, model_ids: Collection[ModelId]) -> dict[ModelId, Coverage]:
        """Models without skipped ranges are left out."""
        ...

    def skip(self, model_id: ModelId, r: Range) -> Coverage:
        """Add ``r``; returns the model's skipped ranges after."""
        ...

    def unskip(self, model_id: ModelId, r: Range) -> Coverage:
        """Remove ``r`` (the parts of skipped ranges inside it); returns the model's skipped ranges after."""
        ...


@dataclass(frozen=True)
class HeldInterval:
    """An interval whose rows failed an ``error`` check (docs/checks.md): not published, not covered, and not planned
    again until its inputs or its definition change (an invalidation over it releases it; a hold of another version
    than the deployed one is ignored)."""

    start: int
    end: int
    version: str | None
    reason: str
    accepted_by: str | None = None
    """Who accepted its rows anyway (``cbt checks accept``: an api token's fingerprint); it is then planned again
    and published whatever its ``error`` checks say, and released once published. None: held."""

    @property
    def is_accepted(self) -> bool:
        return self.accepted_by is not None


class CheckHolds(Protocol):
    """Per model, the intervals held by a failed check. Hot state: an emptied Redis forgets them, and the intervals
    are then computed and checked again (their results are in ``cbt_check_results``)."""

    def held(self, model_ids: Collection[ModelId]) -> dict[ModelId, tuple[HeldInterval, ...]]:
        """Models without held intervals are left out."""
        ...

    def hold(self, model_id: ModelId, held: Sequence[HeldInterval]) -> None:
        """Add (or replace: same start and end) held intervals."""
        ...

    def release(self, model_id: ModelId, r: Range) -> list[HeldInterval]:
        """Release every held interval that overlaps ``r``; returns them."""
        ...

    def accept(self, model_id: ModelId, r: Range, who: str, version: str | None) -> list[HeldInterval]:
        """Mark the held intervals of ``version`` (None: any) that overlap ``r`` accepted by ``who``; returns them
        as they are now."""
        ...


class RefreshRequests(Protocol):
    """Models an operator asked the bounds-cache to scan now (``POST /api/v1/bounds/{id}/refresh``;
    ``cbt.adapters.bounds_refresh``)."""

    def request(self, model_id: ModelId) -> None: ...
    def requested(self) -> set[ModelId]: ...
    def taken(self, model_id: ModelId) -> None: ...


class SeenEvents(Protocol):
    """Ids of invalidation events already applied, kept for a long time, not forever (the invalidator's
    ``RedisSeenEvents``): a redelivered event is recognised and not applied twice."""

    def is_seen(self, event_id: str) -> bool: ...
    def mark_seen(self, event_id: str) -> None: ...


KEEP_FAILURES = 20
"""How many failing tasks the failure log keeps per model (the newest)."""


class FailureLog(Protocol):
    """Per model, the tasks whose last attempt failed and that have not completed since (``cbt status``; the
    coordinator writes them from ``task-failed`` and clears them on ``interval-completed``). Hot state like the rest
    of Redis: the topics are the full record."""

    def record_failure(self, failure: TaskFailed) -> None: ...

    def clear_failure(self, model_id: ModelId, task_id: str) -> None: ...

    def recent_failures(self, model_ids: Collection[ModelId]) -> dict[ModelId, list[TaskFailed]]:
        """At most ``KEEP_FAILURES`` per model, newest first; models without failures are left out."""
        ...


class StatePorts(Protocol):
    """The hot state's ports together (``RedisState``, ``MemoryState``)."""

    @property
    def coverage(self) -> HotIndex: ...
    @property
    def bounds(self) -> BoundsStore: ...
    @property
    def ledger(self) -> TaskLedger: ...
    @property
    def leases(self) -> Leases: ...
    @property
    def skips(self) -> SkippedRanges: ...
    @property
    def holds(self) -> CheckHolds: ...
    @property
    def failures(self) -> FailureLog: ...
