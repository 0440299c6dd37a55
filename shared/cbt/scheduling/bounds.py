"""Dependency bounds (docs/design/scheduling.md#dependency-bounds): what each dependency offers, the valid range, and
interval readiness.

Everything is half-open: a dependency offering ``[lo, hi)`` has data at ``lo`` but not at ``hi``, and an
interval ``[p, p + i)`` is inside a valid range ``[min, max)`` when ``p >= min`` and ``p + i <= max``.

Per dependency:

- external → ``[min, max - lag)`` from its scanned bounds (``max`` exclusive). Not scanned yet, an empty
  table, or ``lag >= max - min`` → no data.
- incremental transformation → its coverage, spanning ``[first, last_end)``; holes inside it are remembered,
  because an interval overlapping a hole is not ready even inside the valid range. No coverage → no data.
- scheduled transformation → unbounded ``[0, +inf)``: it never limits the end, and counts as a start of 0 —
  once it has completed a run; before its first success (``StateSnapshot.never_ran``) it has no data, so no
  dependent computes against an empty reference table.
- OR group → the union of its members that have data (min of mins, max of maxes, holes where no member has
  data); no member with data → the group has no data. A member that is scheduled makes the whole group
  unbounded. The group counts as external in the formula when every member with data is external, otherwise as
  a transformation.
- an id that names no loaded model → no data (never fail open).

Then ``min_valid = max(min(external mins), max(transformation mins))``, ``max_valid = min(all maxes)``; limits
(``max(min_valid, limits.min)``, ``min(max_valid, limits.max)``; ``limits.max`` is an exclusive end); then the
fill buffer (``max_valid -= buffer``). Empty when ``min_valid >= max_valid``. Any dependency without data
means no valid range at all, with a reason naming it. A model whose dependencies leave an end unbounded (no
dependencies, or only scheduled ones) takes that end from ``limits``; if ``limits`` does not give it either,
it has no valid range.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from cbt.models.spec import (
    Dependency,
    ExternalModel,
    IncrementalModel,
    Limits,
    Model,
    ModelId,
    ScheduledModel,
)
from cbt.scheduling import coverage as cov
from cbt.scheduling.coverage import Coverage, Range
from cbt.scheduling.snapshot import RawBounds, StateSnapshot

DependencyKind = Literal["external", "transformation"]


@dataclass(frozen=True)
class Available:
    """A dependency with data: ``coverage`` is non-empty (a single range for an external)."""

    label: str
    kind: DependencyKind
    coverage: Coverage

    @property
    def span(self) -> Range:
        first, last_end = self.coverage[0][0], self.coverage[-1][1]
        return (first, last_end)


@dataclass(frozen=True)
class Unbounded:
    """A dependency that limits no position (a scheduled transformation that has run, or an OR group containing
    one)."""

    label: str


@dataclass(frozen=True)
class Missing:
    """A dependency without data; ``reason`` says why, for the ``waiting`` message."""

    label: str
    reason: str

    def __str__(self) -> str:
        return f"{self.label}: {self.reason}"


DependencyRange = Available | Unbounded | Missing


@dataclass(frozen=True)
class Readiness:
    """A model's valid range and what an interval must also satisfy to be ready.

    ``valid`` is ``None`` when there is no (non-empty) valid range; ``reason`` then says why. ``required``
    holds the coverage of every transformation-kind dependency: a ready interval lies inside each of them
    entirely.
    """

    valid: Range | None
    reason: str | None
    required: tuple[Available, ...]
    dependencies: tuple[DependencyRange, ...]


def external_range(raw: RawBounds | None, lag: int) -> Range | None:
    """``[min, max - lag)`` of raw external bounds; ``None`` if not scanned, empty, or ``lag >= max - min``."""
    if raw is None or lag >= raw.max - raw.min:
        return None
    return (raw.min, raw.max - lag)


def model_range(model_id: ModelId, models: Mapping[ModelId, Model], state: StateSnapshot) -> DependencyRange:
    """What one model offers to its dependents (see the module docstring for the rules)."""
    model = models.get(model_id)
    if model is None:
        return Missing(model_id, "not a loaded model")
    if isinstance(model, ScheduledModel):
        if model_id in state.never_ran:
            return Missing(model_id, "has not completed a scheduled run yet")
        return Unbounded(model_id)
    if isinstance(model, ExternalModel):
        raw = state.bounds.get(model_id)
        if raw is None:
            return Missing(model_id, "no bounds scanned yet (or the table is empty)")
        rng = external_range(raw, model.lag)
        if rng is None:
            return Missing(
                model_id,
                f"no data after lag: bounds [{raw.min}, {raw.max}) hold {raw.max - raw.min}"
                f" positions, lag is {model.lag}",
            )
        return Available(model_id, "external", (rng,))
    covered = state.coverage.get(model_id, cov.EMPTY)
    if not covered:
        return Missing(model_id, "no completed intervals yet")
    return Available(model_id, "transformation", covered)


def dependency_range(dep: Dependency, models: Mapping[ModelId, Model], state: StateSnapshot) -> DependencyRange:
    """What one declared dependency offers: one model, or the union of an OR group's members with data."""
    if isinstance(dep, str):
        return model_range(dep, models, state)
    label = f"any of [{', '.join(dep)}]"
    members = [model_range(member, models, state) for member in dep]
    if any(isinstance(m, Unbounded) for m in members):
        return Unbounded(label)
    available = [m for m in members if isinstance(m, Available)]
    if not available:
        return Missing(label, "no member has data (" + "; ".join(str(m) for m in members) + ")")
    kind: DependencyKind = "external" if all(m.kind == "external" for m in available) else "transformation"
    return Available(label, kind, cov.union(*(m.coverage for m in available)))


def valid_range(deps: Sequence[Available | Unbounded], limits: Limits, buffer: int) -> tuple[Range | None, str | None]:
    """The valid-range formula (docs/design/scheduling.md#dependency-bounds) over dependencies that all have data:
    ``(range, None)`` or ``(None, why)``."""
    ext_mins = [d.span[0] for d in deps if isinstance(d, Available) and d.kind == "external"]
    trans_mins = [d.span[0] if isinstance(d, Available) else 0 for d in deps if _is_transformation_like(d)]
    lower_bounds = ([min(ext_mins)] if ext_mins else []) + ([max(trans_mins)] if trans_mins else [])
    maxes = [d.span[1] for d in deps if isinstance(d, Available)]
    low = _raise_to(max(lower_bounds) if lower_bounds else None, limits.min)
    high = _lower_to(min(maxes) if maxes else None, limits.max)
    if low is None:
        return None, "no dependency bounds the start of the range; set limits.min"
    if high is None:
        return None, "no dependency bounds the end of the range; set limits.max"
    high -= buffer
    if low >= high:
        return None, f"valid range is empty: [{low}, {high}) after limits and fill.buffer {buffer}"
    return (low, high), None


def readiness(model: IncrementalModel, models: Mapping[ModelId, Model], state: StateSnapshot) -> Readiness:
    """The valid range of ``model`` in ``state`` and the coverages a ready interval must lie in."""
    deps = tuple(dependency_range(dep, models, state) for dep in model.dependencies)
    missing = [d for d in deps if isinstance(d, Missing)]
    required = tuple(d for d in deps if isinstance(d, Available) and d.kind == "transformation")
    if missing:
        return Readiness(None, "blocked by " + "; ".join(str(m) for m in missing), required, deps)
    have = [d for d in deps if not isinstance(d, Missing)]
    valid, why = valid_range(have, model.limits, model.fill.buffer)
    return Readiness(valid, why, required, deps)


def is_ready(ready: Readiness, r: Range) -> bool:
    """Whether ``r`` is non-empty, inside the valid range, and covered by every transformation dependency."""
    start, end = r
    if ready.valid is None or start >= end or start < ready.valid[0] or end > ready.valid[1]:
        return False
    return all(cov.covers(d.coverage, r) for d in ready.required)


def why_not_ready(ready: Readiness, r: Range) -> str | None:
    """``None`` when ``r`` is ready, else why not (the worker's check at execution time; never fails open)."""
    start, end = r
    if ready.valid is None:
        return ready.reason or "no valid range"
    if start >= end:
        return f"empty interval [{start}, {end})"
    low, high = ready.valid
    if start < low or end > high:
        return f"[{start}, {end}) is outside the valid range [{low}, {high})"
    hole = first_hole(ready, r)
    if hole is not None:
        dep, (hole_start, hole_end) = hole
        return f"{dep.label} has no data in [{hole_start}, {hole_end})"
    return None


def first_hole(ready: Readiness, r: Range) -> tuple[Available, Range] | None:
    """The transformation dependency whose hole in ``r`` starts lowest, with that hole clipped to ``r``."""
    found: tuple[Available, Range] | None = None
    for dep in ready.required:
        hole = cov.first_gap(dep.coverage, r)
        if hole is not None and (found is None or hole[0] < found[1][0]):
            found = (dep, hole)
    return found


def resume_at(ready: Readiness, pos: int) -> int | None:
    """The smallest position ``>= pos`` every transformation dependency covers; ``None`` if there is none."""
    changed = True
    while changed:
        changed = False
        for dep in ready.required:
            nxt = cov.next_covered(dep.coverage, pos)
            if nxt is None:
                return None
            if nxt > pos:
                pos, changed = nxt, True
    return pos


def ready_parts(ready: Readiness, window: Range) -> list[Range]:
    """The parts of ``window`` every transformation dependency covers, ascending (not clipped to ``valid``)."""
    parts: Coverage = cov.merge([window])
    for dep in ready.required:
        parts = cov.intersect(parts, dep.coverage)
    return list(parts)


def start_floor(model: IncrementalModel, models: Mapping[ModelId, Model], state: StateSnapshot) -> int | None:
    """The lowest start ``model``'s valid range can reach once every transformation upstream has filled backward as
    far as its own dependencies let it: the valid range's start (docs/design/scheduling.md#dependency-bounds) over
    the sources' scanned minimums instead of the transformations' coverage. ``None`` when ``state`` cannot tell: a
    source not scanned (or not in the snapshot), or an upstream transformation that does not backfill and is not in
    the snapshot (one that is stays where it began). A valid range starting above its floor still moves down as
    upstream backfills complete."""
    return _floor_of_model(model, models, state, {})


def _floor_of_model(model: IncrementalModel, models: Mapping[ModelId, Model], state: StateSnapshot,
                    seen: dict[ModelId, int | None]) -> int | None:
    ext_lows: list[int] = []
    trans_lows: list[int] = []
    for dep in model.dependencies:
        members = [dep] if isinstance(dep, str) else list(dep)
        floors = [_offered_floor(m, models, state, seen) for m in members]
        known = [f for f in floors if f is not None]
        if not known:
            return None
        is_external = all(isinstance(models.get(m), ExternalModel) for m in members)
        (ext_lows if is_external else trans_lows).append(min(known))
    low = max(([min(ext_lows)] if ext_lows else []) + ([max(trans_lows)] if trans_lows else []), default=None)
    return _raise_to(low, model.limits.min)


def _offered_floor(model_id: ModelId, models: Mapping[ModelId, Model], state: StateSnapshot,
                   seen: dict[ModelId, int | None]) -> int | None:
    """The lowest position one model can ever offer its dependents (see ``start_floor``), memoized in ``seen``."""
    if model_id in seen:
        return seen[model_id]
    model = models.get(model_id)
    floor: int | None = None
    if isinstance(model, ScheduledModel):
        floor = 0
    elif isinstance(model, ExternalModel):
        rng = external_range(state.bounds.get(model_id), model.lag)
        floor = rng[0] if rng is not None else None
    elif isinstance(model, IncrementalModel) and model.schedules.backfill:
        floor = _floor_of_model(model, models, state, seen)
    elif isinstance(model, IncrementalModel):  # forward only: its coverage never grows below where it began
        covered = state.coverage.get(model_id, cov.EMPTY)
        floor = covered[0][0] if covered else None
    seen[model_id] = floor
    return floor


def _is_transformation_like(dep: Available | Unbounded) -> bool:
    return isinstance(dep, Unbounded) or dep.kind == "transformation"


def _raise_to(value: int | None, limit: int | None) -> int | None:
    """``max(value, limit)`` where ``None`` means "not bounded"."""
    if value is None or limit is None:
        return limit if value is None else value
    return max(value, limit)


def _lower_to(value: int | None, limit: int | None) -> int | None:
    """``min(value, limit)`` where ``None`` means "not bounded"."""
    if value is None or limit is None:
        return limit if value is None else value
    return min(value, limit)
