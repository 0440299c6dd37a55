"""The whole-model planner: from a state snapshot to the tasks to enqueue now and why nothing more can run.

Pure and clock-free: the same models and snapshot always give the same plan. The coordinator calls
``plan_model`` on each tick and on each relevant event, enqueues the returned tasks (their ranges then appear
in the next snapshot's ``in_flight``), and shows ``waiting`` to people (``cbt plan``, the API's explain view).

Per model, in this order:

0. nothing at all while the live coverage index is being rebuilt (``StateSnapshot.coverage_known``);
1. readiness (valid range) from the dependencies (``bounds.readiness``); no valid range → no tasks,
   ``waiting`` says why, naming the dependency;
2. free slots = the per-model concurrency limit minus its in-flight tasks;
3. forward fill (when ``schedules.forwardfill`` is set and asked for) takes slots first, to keep the head
   fresh;
4. re-runs after invalidations (``cbt.scheduling.rerun``), whatever the schedules, take the next slots;
5. backfill (when ``schedules.backfill`` is set and asked for) takes the remaining slots; it sees the forward
   tasks just planned as in flight, so a head-first model backfills its leading gap in the same tick. What it asks
   about the model's upstream (``upstream_of``: does the valid range's start still move down, will a dependency's
   hole be filled) comes from the same snapshot.

In-flight task ranges and pending re-runs count as covered for forward fill and backfill: they are never planned
there (a re-run is planned as itself, whole).
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace

from cbt.base.tasks import FILL_DIRECTIONS, FillDirection, TaskDirection, incremental_task_id
from cbt.models.spec import IncrementalModel, Model, ModelId
from cbt.scheduling import batching
from cbt.scheduling import bounds as bnd
from cbt.scheduling import coverage as cov
from cbt.scheduling.backfill import Upstream, plan_backfill
from cbt.scheduling.coverage import Coverage, Range
from cbt.scheduling.forward import FillPlan, GapTally, plan_forward
from cbt.scheduling.rerun import plan_reruns
from cbt.scheduling.snapshot import StateSnapshot

COVERAGE_UNKNOWN = "the coverage index is being rebuilt from the admin tables; planning resumes after it"


@dataclass(frozen=True)
class Task:
    """One run of one incremental model over ``[position, position + interval)``; with ``step``, a batch of
    ``interval / step`` intervals run as one job (``cbt.scheduling.batching``)."""

    model_id: ModelId
    position: int
    interval: int
    direction: TaskDirection
    step: int | None = None

    @property
    def end(self) -> int:
        return self.position + self.interval

    @property
    def id(self) -> str:
        """``model_id:position:interval``, unique among in-flight tasks (docs/design/index.md#tasks)."""
        return incremental_task_id(self.model_id, self.position, self.interval)


@dataclass(frozen=True)
class ModelPlan:
    """What to enqueue now for one model; ``waiting``: why nothing more can run (``None``: nothing left)."""

    model_id: ModelId
    valid: Range | None
    tasks: tuple[Task, ...]
    waiting: str | None
    backfill_gaps: GapTally = field(default_factory=GapTally)
    """The gaps backfill examined (none when it was not asked for or has nothing to fill)."""


def plan_model(
    model: IncrementalModel,
    models: Mapping[ModelId, Model],
    state: StateSnapshot,
    *,
    concurrency: int,
    directions: Collection[FillDirection] = FILL_DIRECTIONS,
    batch_size: int = 1,
) -> ModelPlan:
    """Plan ``model`` in ``state`` with at most ``concurrency`` tasks in flight for it (existing ones included),
    each holding up to ``batch_size`` touching full-length intervals of forward fill or backfill."""
    if not state.coverage_known:
        return ModelPlan(model.id, None, (), COVERAGE_UNKNOWN)
    ready = bnd.readiness(model, models, state)
    if ready.valid is None:
        return ModelPlan(model.id, None, (), ready.reason)
    in_flight = state.in_flight.get(model.id, ())
    reruns = state.reruns.get(model.id, ())
    effective = cov.union(effective_coverage(model.id, state), cov.merge(reruns))
    slots = max(concurrency - len(in_flight), 0)
    results: list[tuple[TaskDirection, FillPlan]] = []
    gaps = GapTally()
    if model.schedules.forwardfill and "forward" in directions:
        forward = _batched(plan_forward(model, ready, effective, slots * batch_size), model, batch_size, slots)
        results.append(("forward", forward))
        effective = cov.union(effective, cov.merge(forward.tasks))
        slots -= len(forward.tasks)
    if reruns:
        rerun = plan_reruns(ready, reruns, in_flight, slots)
        results.append(("rerun", rerun))
        slots -= len(rerun.tasks)
    if model.schedules.backfill and "backfill" in directions:
        upstream = upstream_of(model, models, state)
        backfill = _batched(plan_backfill(model, ready, effective, slots * batch_size, upstream), model, batch_size,
                            slots)
        if results and results[0][0] == "forward":
            results[0], backfill = _backlog_joins_head(results[0][1], backfill, model, batch_size)
        results.append(("backfill", backfill))
        gaps = replace(backfill.gaps, is_limit_reached=backfill.is_out_of_slots)
    elif not model.schedules.backfill:
        results.append(("backfill", FillPlan(waiting=_unfilled_note(effective, ready.valid))))
    tasks = tuple(
        Task(model.id, start, end - start, direction, _step(model, end - start))
        for direction, fill in results for start, end in fill.tasks
    )
    return ModelPlan(model.id, ready.valid, tasks, _waiting(results, concurrency, len(in_flight)), gaps)


def _batched(fill: FillPlan, model: IncrementalModel, size: int, slots: int) -> FillPlan:
    """``fill``'s intervals grouped into batches of up to ``size``, the first ``slots`` of them."""
    if size <= 1:
        return fill
    groups = batching.group(fill.tasks, model.interval.max, size)
    if len(groups) <= slots:
        return replace(fill, tasks=tuple(r for r, _ in groups))
    first_left = groups[slots][0]
    return replace(fill, tasks=tuple(r for r, _ in groups[:slots]),
                   waiting=f"more intervals are ready from [{first_left[0]}, {first_left[1]})", is_out_of_slots=True)


def _backlog_joins_head(forward: FillPlan, backfill: FillPlan, model: IncrementalModel,
                        size: int) -> tuple[tuple[TaskDirection, FillPlan], FillPlan]:
    """A head-first model catching up plans the newest interval forward and the backlog below it as backfill: two
    jobs on one table, which run one after the other. When the newest backfill batch ends where the first forward
    task starts and both fit one batch, they run as one forward task (at the head, with nothing behind it, forward
    stays single)."""
    if size <= 1 or not forward.tasks or not backfill.tasks:
        return ("forward", forward), backfill
    (low, high), (head_start, head_end) = backfill.tasks[0], forward.tasks[0]
    step = model.interval.max
    lengths = (high - low, head_end - head_start)
    if high != head_start or any(n % step for n in lengths) or sum(lengths) > size * step:
        return ("forward", forward), backfill
    joined = FillPlan(((low, head_end), *forward.tasks[1:]), forward.waiting, forward.is_out_of_slots)
    return ("forward", joined), replace(backfill, tasks=backfill.tasks[1:])


def _step(model: IncrementalModel, length: int) -> int | None:
    """A task longer than ``interval.max`` is a batch of full-length intervals (a re-run of one included)."""
    step = model.interval.max
    return step if length > step and length % step == 0 else None


def plan_all(
    models: Mapping[ModelId, Model],
    state: StateSnapshot,
    *,
    concurrency: int,
    directions: Collection[FillDirection] = FILL_DIRECTIONS,
) -> list[ModelPlan]:
    """``plan_model`` for every incremental transformation, sorted by model id."""
    return [
        plan_model(m, models, state, concurrency=concurrency, directions=directions)
        for m in incremental_models(models.values())
    ]


def incremental_models(models: Iterable[Model]) -> list[IncrementalModel]:
    """The incremental transformations among ``models``, sorted by id."""
    return sorted((m for m in models if isinstance(m, IncrementalModel)), key=lambda m: m.id)


def effective_coverage(model_id: ModelId, state: StateSnapshot) -> Coverage:
    """Coverage plus in-flight task ranges and skipped ranges: what planning treats as done, being done, or not to
    be done (dependents read ``state.coverage``: a skipped range stays a gap to them)."""
    return cov.union(state.coverage.get(model_id, cov.EMPTY), cov.merge(state.in_flight.get(model_id, ())),
                     state.skipped.get(model_id, cov.EMPTY))


def upstream_of(model: IncrementalModel, models: Mapping[ModelId, Model], state: StateSnapshot) -> Upstream:
    """What backfill asks about ``model``'s upstream (``Upstream``), answered from ``models`` and ``state`` (only
    when a short remainder asks)."""
    return Upstream(functools.partial(bnd.start_floor, model, models, state),
                    functools.partial(_fills_hole, models, state))


def _fills_hole(models: Mapping[ModelId, Model], state: StateSnapshot, dependency: ModelId, position: int) -> bool:
    """Whether ``dependency`` will cover ``position``, a hole in its coverage: a task of it covering that position is
    in flight, or it backfills and an operator has not skipped the position (a skipped range stays a hole to its
    dependents). An OR group's label names no model: unknown, so no."""
    if any(start <= position < end for start, end in state.in_flight.get(dependency, ())):
        return True
    model = models.get(dependency)
    is_skipped = cov.covers(state.skipped.get(dependency, cov.EMPTY), (position, position + 1))
    return isinstance(model, IncrementalModel) and bool(model.schedules.backfill) and not is_skipped


def _unfilled_note(effective: Coverage, valid: Range) -> str | None:
    """With backfill disabled, the gaps below the frontier that nothing will fill (``None`` when there are none)."""
    end = cov.frontier(effective)
    holes = cov.gaps(effective, (valid[0], min(valid[1], end))) if end is not None else []
    if not holes:
        return None
    first = holes[-1]
    return (
        f"disabled (schedules.backfill is empty): {len(holes)} gap(s) below the frontier stay unfilled,"
        f" newest [{first[0]}, {first[1]})"
    )


def _waiting(results: list[tuple[TaskDirection, FillPlan]], concurrency: int, in_flight: int) -> str | None:
    reasons: list[str] = []
    if any(fill.is_out_of_slots for _, fill in results):
        reasons.append(f"concurrency limit {concurrency} reached ({in_flight} in flight before this plan)")
    reasons.extend(f"{direction}: {fill.waiting}" for direction, fill in results if fill.waiting)
    return "; ".join(reasons) or None
