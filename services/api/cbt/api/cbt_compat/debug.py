"""CBT's ``CoverageDebug``: why an incremental model can or cannot process ``[position, position + interval)``.
Pure, over the same state snapshot the planner reads.

As in CBT, ``interval`` is the size of the model's own gap when the position lies in one, else ``interval.max``;
each dependency says what it offers (an external's bounds after lag, a transformation's coverage span), the gaps it
has there and whether it blocks, down to the sources. Unlike CBT, ``can_process`` and the valid range are the
planner's own verdict (``cbt.scheduling.bounds``: limits, ``fill.buffer`` and OR groups included), so this answer
and what the worker does cannot disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from cbt.api.cbt_compat import schemas as s
from cbt.api.cbt_compat.shapes import ranges
from cbt.models.spec import Dependency, ExternalModel, IncrementalModel, Model, ModelId
from cbt.scheduling import bounds as bnd
from cbt.scheduling import coverage as cov
from cbt.scheduling.coverage import Coverage, Range
from cbt.scheduling.snapshot import StateSnapshot

MAX_DEPTH = 12
"""Deeper dependencies are listed without their own dependencies."""
MAX_NODES = 1000
"""The most dependencies one answer lists. The answer is a tree, as CBT's, so a model reached by several paths is
listed once per path: three models per level, each depending on all three below, would be 3^12 entries at depth
12. Past the budget, dependencies are listed without their own dependencies."""


@dataclass
class _Budget:
    remaining: int = MAX_NODES


def debug_interval(model: IncrementalModel, state: StateSnapshot, position: int) -> int:
    own = state.coverage.get(model.id, cov.EMPTY)
    span = cov.span(own)
    for start, end in cov.gaps(own, span) if span else ():
        if start <= position < end:
            return end - start
    return model.interval.max


def coverage_debug(model: IncrementalModel, models: Mapping[ModelId, Model], state: StateSnapshot,
                   position: int) -> s.CoverageDebug:
    interval = debug_interval(model, state, position)
    window = (position, position + interval)
    deps = _dependencies(model.dependencies, models, state, window, 1, _Budget())
    ready = bnd.readiness(model, models, state)
    return s.CoverageDebug(model_id=model.id, position=position, interval=interval, end_position=window[1],
                           can_process=bnd.is_ready(ready, window), model_coverage=_own(model, state, window),
                           dependencies=deps, validation=_validation(ready, window, deps))


def _own(model: IncrementalModel, state: StateSnapshot, window: Range) -> s.ModelCoverageInfo:
    own = state.coverage.get(model.id, cov.EMPTY)
    first, last_end = cov.span(own) or (0, 0)
    inside = [r for r in own if r[1] > window[0] and r[0] < window[1]]
    gaps = _gaps(own, window)
    return s.ModelCoverageInfo(has_data=bool(own), first_position=first, last_end_position=last_end,
                               ranges_in_window=ranges(inside) or None, gaps_in_window=gaps or None)


def _gaps(coverage: Coverage, window: Range) -> list[s.GapInfo]:
    """The holes inside the coverage's span that overlap ``window``, whole (not clipped to it)."""
    span = cov.span(coverage)
    holes = cov.gaps(coverage, span) if span else []
    return [s.GapInfo(start=a, end=b, size=b - a, overlaps_request=True) for a, b in holes
            if a < window[1] and b > window[0]]


def _dependencies(deps: tuple[Dependency, ...], models: Mapping[ModelId, Model], state: StateSnapshot,
                  window: Range, depth: int, budget: _Budget) -> list[s.DependencyDebugInfo]:
    out = []
    for dep in deps:
        if isinstance(dep, str):
            if dep in models:
                out.append(_one(dep, models, state, window, depth, budget))
            continue
        members = [_one(m, models, state, window, depth, budget) for m in dep if m in models]
        offered = bnd.dependency_range(dep, models, state)
        low, high = offered.span if isinstance(offered, bnd.Available) else (0, 0)
        out.append(s.DependencyDebugInfo(
            id=f"[OR: [{' '.join(dep)}]]", type="or_group", node_type="transformation",
            bounds=s.BoundsInfo(min=low, max=high, has_data=not isinstance(offered, bnd.Missing)),
            blocking=all(m.blocking for m in members), or_group_members=members))
    return out


def _one(model_id: ModelId, models: Mapping[ModelId, Model], state: StateSnapshot, window: Range,
         depth: int, budget: _Budget) -> s.DependencyDebugInfo:
    model = models[model_id]
    budget.remaining -= 1
    offered = bnd.model_range(model_id, models, state)
    if isinstance(model, ExternalModel):
        inside = isinstance(offered, bnd.Available) and offered.span[0] <= window[0] and window[1] <= offered.span[1]
        low, high = offered.span if isinstance(offered, bnd.Available) else (0, 0)
        status: s.CoverageStatus = ("not_initialized" if model_id not in state.bounds else
                                    "full_coverage" if inside else "no_data")
        return s.DependencyDebugInfo(
            id=model_id, type="required", node_type="external",
            bounds=s.BoundsInfo(min=low, max=high, has_data=isinstance(offered, bnd.Available),
                                lag_applied=model.lag or None),
            coverage_status=status, blocking=not inside)
    if not isinstance(model, IncrementalModel):  # scheduled: offers everything once it has run
        ran = not isinstance(offered, bnd.Missing)
        return s.DependencyDebugInfo(
            id=model_id, type="required", node_type="transformation", is_incremental=False,
            bounds=s.BoundsInfo(min=0, max=0, has_data=ran),
            coverage_status="full_coverage" if ran else "not_initialized", blocking=not ran)
    own = state.coverage.get(model_id, cov.EMPTY)
    first, last_end = cov.span(own) or (0, 0)
    gaps = _gaps(own, window)
    inside = bool(own) and first <= window[0] and window[1] <= last_end
    mine: s.CoverageStatus = ("not_initialized" if not own else "has_gaps" if gaps else
                              "full_coverage" if inside else "no_data")
    children = (_dependencies(model.dependencies, models, state, window, depth + 1, budget)
                if depth < MAX_DEPTH and budget.remaining > 0 else [])
    return s.DependencyDebugInfo(
        id=model_id, type="required", node_type="transformation", is_incremental=True,
        bounds=s.BoundsInfo(min=first, max=last_end, has_data=bool(own)), gaps=gaps or None,
        coverage_status=mine, blocking=bool(gaps) or not inside, child_dependencies=children or None)


def _validation(ready: bnd.Readiness, window: Range, deps: list[s.DependencyDebugInfo]) -> s.ValidationDebugInfo:
    blocking = [s.BlockingGap(dependency_id=d.id, gap=g) for d in deps if d.blocking for g in d.gaps or ()]
    reasons = [f"Dependency {b.dependency_id} has gap from {b.gap.start} to {b.gap.end}" for b in blocking]
    why = bnd.why_not_ready(ready, window)
    if why is not None:
        reasons.append(why)
    valid = ready.valid
    in_bounds = valid is not None and valid[0] <= window[0] and window[1] <= valid[1]
    next_valid = max(b.gap.end for b in blocking) if blocking else None
    if next_valid is None and valid is not None and not in_bounds:
        next_valid = valid[0] if window[0] < valid[0] else valid[1]
    return s.ValidationDebugInfo(
        in_bounds=in_bounds, valid_range=None if valid is None else s.ValidRange(min=valid[0], max=valid[1]),
        has_dependency_gaps=bool(blocking), blocking_gaps=blocking, next_valid_position=next_valid, reasons=reasons)
