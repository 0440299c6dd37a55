"""Forward fill (docs/design/scheduling.md#forward-fill): consecutive intervals from the coverage frontier toward the
valid range's end.

Rules, all on half-open ranges:

- Start: the frontier (end of the highest covered or in-flight range), raised to ``min_valid`` when it lies
  below it (positions below the valid range cannot run; what is left behind is backfill's business). With
  nothing covered: ``head`` starts at ``max_valid - interval.max`` (not below ``min_valid``), ``tail`` at
  ``min_valid``.
- Size: ``interval.max``, cut short at ``limits.max`` (the configured end never grows, so that last chunk runs
  even when smaller than ``interval.min``).
- A chunk that ends past ``max_valid`` becomes the partial chunk ``[position, max_valid)`` when ``interval.min
  < interval.max`` and it holds at least ``interval.min`` (and at least one) positions; otherwise forward fill
  waits.
- A chunk overlapping a hole in a transformation dependency's coverage is not ready. With
  ``fill.allow_gap_skipping`` (the default) forward fill jumps to where every such dependency has data again and
  carries on (the skipped positions stay a gap for backfill); without it, forward fill waits for the hole to be
  filled.
- Several consecutive chunks are planned at once, up to the free task slots.
"""

from __future__ import annotations

from dataclasses import dataclass

from cbt.models.spec import IncrementalModel
from cbt.scheduling import bounds as bnd
from cbt.scheduling import coverage as cov
from cbt.scheduling.bounds import Readiness
from cbt.scheduling.coverage import Coverage, Range


@dataclass(frozen=True)
class GapTally:
    """The gaps backfill examined in one plan (the original CBT's gap metrics): those with a ready part, those with
    none, and whether it stopped, its task slots full, before it had planned every ready one."""

    fillable: int = 0
    blocked: int = 0
    is_limit_reached: bool = False


@dataclass(frozen=True)
class FillPlan:
    """Intervals to enqueue, in planning order, and why planning stopped short (``None``: nothing left)."""

    tasks: tuple[Range, ...] = ()
    waiting: str | None = None
    is_out_of_slots: bool = False
    gaps: GapTally = GapTally()
    """Backfill's: the gaps it examined."""


def start_position(model: IncrementalModel, effective: Coverage, valid: Range) -> int:
    """Where forward fill continues in ``effective`` (coverage plus in-flight tasks); see the module doc."""
    low, high = valid
    end = cov.frontier(effective)
    if end is not None:
        return max(end, low)
    if model.fill.direction == "head":
        return max(high - model.interval.max, low)
    return low


def plan_forward(model: IncrementalModel, ready: Readiness, effective: Coverage, slots: int) -> FillPlan:
    """Up to ``slots`` consecutive ready forward intervals; ``effective`` includes in-flight tasks."""
    if ready.valid is None:
        return FillPlan(waiting=ready.reason)
    pos = start_position(model, effective, ready.valid)
    tasks: list[Range] = []
    while not _is_done(model, ready.valid, pos):
        if len(tasks) >= slots:
            return FillPlan(tuple(tasks), f"more forward intervals are ready from {pos}", is_out_of_slots=True)
        chunk = _chunk_at(model, ready.valid, pos)
        if isinstance(chunk, str):
            return FillPlan(tuple(tasks), chunk)
        hole = bnd.first_hole(ready, chunk)
        if hole is None:
            tasks.append(chunk)
            pos = chunk[1]
            continue
        dep, (hole_start, hole_end) = hole
        resume = bnd.resume_at(ready, hole_start) if model.fill.allow_gap_skipping else None
        if resume is None or resume >= ready.valid[1]:
            why = (
                f"forward interval [{chunk[0]}, {chunk[1]}) waits for {dep.label}:"
                f" no data in [{hole_start}, {hole_end})"
            )
            return FillPlan(tuple(tasks), why)
        pos = resume
    return FillPlan(tuple(tasks))


def _is_done(model: IncrementalModel, valid: Range, pos: int) -> bool:
    """Nothing left to plan: the position reached the valid range's end (or the configured end)."""
    limit = model.limits.max
    return pos >= valid[1] or (limit is not None and pos >= limit)


def _chunk_at(model: IncrementalModel, valid: Range, pos: int) -> Range | str:
    """The forward interval at ``pos`` (full, cut at ``limits.max``, or partial), or why there is none."""
    end = pos + model.interval.max
    if model.limits.max is not None:
        end = min(end, model.limits.max)
    if end <= valid[1]:
        return (pos, end)
    available = valid[1] - pos
    if model.interval.min < model.interval.max and available >= max(model.interval.min, 1):
        return (pos, valid[1])
    return (
        f"forward interval [{pos}, {end}) needs data up to {end}; valid range ends at {valid[1]}"
        f" ({available} available, interval.min {model.interval.min}, interval.max {model.interval.max})"
    )
