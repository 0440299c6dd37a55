""""Why can position P not run?": the dependency tree of one interval of an incremental model. Pure.

The verdict reuses the planner's rules (``cbt.scheduling.bounds``): ``ready`` and ``reason`` are exactly what the
worker would decide for ``[P, P + interval.max)``. Each dependency then says what it offers (its range), whether it
has data over the whole interval, the holes it leaves there and why; transformation dependencies are explained the
same way for the same interval, down to the sources (every model of a pipeline shares one position domain).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from cbt.models.spec import Dependency, IncrementalModel, Model, ModelId, model_kind
from cbt.scheduling import bounds as bnd
from cbt.scheduling import coverage as cov
from cbt.scheduling.coverage import Range
from cbt.scheduling.snapshot import StateSnapshot
from cbt.state.ports import HeldInterval

MAX_DEPTH = 12
"""Deeper dependencies are not expanded (their own entry still says whether they cover the interval)."""
DependencyRole = Literal["required", "or_group_member"]


@dataclass(frozen=True)
class DependencyExplanation:
    id: ModelId
    type: str
    """``external``, ``incremental``, ``scheduled``, or ``unknown`` for an id that names no loaded model."""
    kind: DependencyRole
    group: int | None
    """For an OR-group member: the group's index among the model's dependencies."""
    range: Range | None
    """What it offers: an external's bounds after lag, a transformation's coverage span; ``None``: no data, or
    unbounded (a scheduled model that has run)."""
    covers: bool
    holes: tuple[Range, ...]
    """The parts of the interval it has no data for."""
    reason: str | None
    dependencies: tuple[DependencyExplanation, ...] = ()


@dataclass(frozen=True)
class Explanation:
    model: ModelId
    position: int
    interval: Range
    valid: Range | None
    ready: bool
    covered: bool
    in_flight: bool
    reason: str | None
    dependencies: tuple[DependencyExplanation, ...]


def explain(model: IncrementalModel, models: Mapping[ModelId, Model], state: StateSnapshot,
            position: int, held: Sequence[HeldInterval] = ()) -> Explanation:
    """The verdict on ``[position, position + interval.max)`` of ``model`` and its dependency tree; ``held``: the
    model's intervals failed checks hold (one holding ``position`` is not run, whatever its dependencies say)."""
    interval = (position, position + model.interval.max)
    ready = bnd.readiness(model, models, state)
    running = state.in_flight.get(model.id, ())
    holding = next((h for h in held if h.start <= position < h.end), None)
    reason = bnd.why_not_ready(ready, interval)
    if holding is not None:
        reason = (f"held: its rows [{holding.start}, {holding.end}) failed a check ({holding.reason}); they are "
                  "computed again when an invalidation over them arrives or the model's version changes")
    return Explanation(
        model=model.id, position=position, interval=interval, valid=ready.valid,
        ready=bnd.is_ready(ready, interval) and holding is None,
        covered=cov.covers(state.coverage.get(model.id, cov.EMPTY), interval),
        in_flight=any(s < interval[1] and interval[0] < e for s, e in running),
        reason=reason,
        dependencies=_dependencies(model.dependencies, models, state, interval, 1),
    )


def _dependencies(deps: tuple[Dependency, ...], models: Mapping[ModelId, Model], state: StateSnapshot,
                  interval: Range, depth: int) -> tuple[DependencyExplanation, ...]:
    out: list[DependencyExplanation] = []
    for index, dep in enumerate(deps):
        if isinstance(dep, str):
            out.append(_one(dep, "required", None, models, state, interval, depth))
        else:
            out += [_one(member, "or_group_member", index, models, state, interval, depth) for member in dep]
    return tuple(out)


def _one(model_id: ModelId, kind: DependencyRole, group: int | None, models: Mapping[ModelId, Model],
         state: StateSnapshot, interval: Range, depth: int) -> DependencyExplanation:
    model = models.get(model_id)
    offered = bnd.model_range(model_id, models, state)
    type_name = "unknown" if model is None else model_kind(model)
    nested: tuple[DependencyExplanation, ...] = ()
    if isinstance(model, IncrementalModel) and depth < MAX_DEPTH:
        nested = _dependencies(model.dependencies, models, state, interval, depth + 1)
    if isinstance(offered, bnd.Missing):
        return DependencyExplanation(model_id, type_name, kind, group, None, False, (interval,), offered.reason,
                                     nested)
    if isinstance(offered, bnd.Unbounded):
        return DependencyExplanation(model_id, type_name, kind, group, None, True, (), None, nested)
    holes = tuple(cov.gaps(offered.coverage, interval))
    return DependencyExplanation(model_id, type_name, kind, group, offered.span, not holes, holes,
                                 _hole_reason(offered.span, holes), nested)


def _hole_reason(span: Range, holes: tuple[Range, ...]) -> str | None:
    """Why the first hole is there: before the data starts, after it ends, or a gap inside it."""
    if not holes:
        return None
    start, end = holes[0]
    if end <= span[0]:
        return f"no data in [{start}, {end}): its data starts at {span[0]}"
    if start >= span[1]:
        return f"no data in [{start}, {end}): its data ends at {span[1]}"
    return f"no data in [{start}, {end}): a gap in its coverage"
