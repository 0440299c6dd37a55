"""Backfill (docs/design/scheduling.md#backfill): every gap inside the valid range, newest first, many tasks per tick.

Rules, all on half-open ranges:

- Window: the valid range, up to the coverage frontier when forward fill is enabled (what lies beyond the
  frontier is forward fill's). A backfill-only model owns the whole valid range, so with no coverage at all
  its whole valid range is one gap and it starts (the original never started such models). With forward fill
  enabled and nothing covered or in flight yet, backfill waits for forward fill to set the frontier.
- Gaps: the uncovered parts of the window in coverage plus in-flight tasks, including the leading gap between
  ``min_valid`` and the first covered position. Newest (highest) gap first.
- Parts of a gap where a transformation dependency has a hole are not ready; the gap is split around them and
  each ready part is planned on its own (so one dependency hole does not block the rest of the gap).
- Each part is cut into intervals of at most ``interval.max`` aligned to end at the part's end — below a
  dependency hole that will be filled, on the gap's own grid instead (``interval.max`` steps down from the gap's
  end), so what is planned now meets what is planned once the hole is filled — newest first.
  A remainder shorter than ``interval.min`` is widened to ``interval.min``: downward (keeping its end,
  overlapping coverage below) when that interval is ready, else upward (keeping its start); never outside the
  valid range or over a dependency hole.
- Exception: where the gap is still growing, a short remainder waits for more of it instead of being run widened
  (and run widened again, overlapping, each time the gap grows). A gap grows at the open end of a backfill-only
  model's range (data arrives there); at the valid range's start while that start still moves down, upstream
  transformations filling backward toward their sources (``Upstream.start_floor``); and at a dependency's hole
  that the dependency will fill (``Upstream.fills``: it backfills, or a task of it is in flight there). Without
  this, a 900-position model over a 300-position one catching up backward re-ran 900 positions for every 300 its
  dependency added. Once the gap stops growing, its remainder is widened as above (once).
- As many intervals as there are free task slots, across gaps — never one gap per tick.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from cbt.models.spec import IncrementalModel
from cbt.scheduling import bounds as bnd
from cbt.scheduling import coverage as cov
from cbt.scheduling.bounds import Readiness
from cbt.scheduling.coverage import Coverage, Range
from cbt.scheduling.forward import FillPlan, GapTally

MAX_NOTES = 3


@dataclass(frozen=True)
class Upstream:
    """Whether a gap's edge may still move, asked only when a short remainder sits at one (``plan`` answers from
    the models and the snapshot; the defaults say "it will not", widening at once)."""

    start_floor: Callable[[], int | None] = lambda: None
    """The lowest the valid range's start can move down to (``bounds.start_floor``; ``None``: unknown)."""
    fills: Callable[[str, int], bool] = lambda label, position: False
    """Whether the dependency ``label``'s hole at ``position`` will be filled."""


STILL = Upstream()
"""Nothing upstream moves: short remainders are widened at once."""


def window(model: IncrementalModel, effective: Coverage, valid: Range) -> Range | None:
    """The part of the valid range backfill is responsible for (see the module docstring)."""
    low, high = valid
    if model.schedules.forwardfill:
        end = cov.frontier(effective)
        if end is None:
            return None
        high = min(high, end)
    return (low, high) if low < high else None


def cut(part: Range, interval_max: int) -> Iterator[Range]:
    """``part`` cut into intervals of at most ``interval_max`` ending at ``part``'s end, newest first."""
    start, end = part
    while end > start:
        yield (max(start, end - interval_max), end)
        end -= interval_max


def plan_backfill(model: IncrementalModel, ready: Readiness, effective: Coverage, slots: int,
                  upstream: Upstream = STILL) -> FillPlan:
    """Up to ``slots`` ready backfill intervals for ``model``; ``effective`` includes in-flight tasks."""
    if ready.valid is None:
        return FillPlan(waiting=ready.reason)
    win = window(model, effective, ready.valid)
    if win is None:
        return FillPlan()
    tasks: list[Range] = []
    notes: list[str] = []
    examined = {True: 0, False: 0}
    for item in _candidates(model, ready, effective, win, upstream):
        if isinstance(item, GapExamined):
            examined[item.is_fillable] += 1
        elif isinstance(item, str):
            notes.append(item)
        elif len(tasks) >= slots:
            return FillPlan(
                tuple(tasks),
                f"more backfill intervals are ready below {tasks[-1][0] if tasks else win[1]}",
                is_out_of_slots=True,
                gaps=GapTally(examined[True], examined[False], is_limit_reached=True),
            )
        elif item not in tasks:
            tasks.append(item)
    return FillPlan(tuple(tasks), summarize(notes), gaps=GapTally(examined[True], examined[False]))


@dataclass(frozen=True)
class GapExamined:
    """Backfill came to a gap: ``is_fillable`` when some part of it is ready (``GapTally``)."""

    is_fillable: bool


def _candidates(model: IncrementalModel, ready: Readiness, effective: Coverage, win: Range,
                upstream: Upstream) -> Iterator[Range | str | GapExamined]:
    """Backfill intervals newest first, interleaved with notes on what cannot run, each gap announced as examined
    before its intervals."""
    end_grows = _end_can_grow(model, win)
    for gap in reversed(cov.gaps(effective, win)):
        parts = bnd.ready_parts(ready, gap)
        yield GapExamined(is_fillable=bool(parts))
        if parts != [gap]:
            yield _blocked_note(ready, gap)
        for part in reversed(parts):
            top = _aligned_top(ready, upstream, model.interval.max, part, gap)
            for chunk in cut((part[0], top), model.interval.max):
                is_short = chunk[1] - chunk[0] < model.interval.min
                if is_short and end_grows and chunk[1] == win[1]:
                    yield _widen(model, ready, chunk, "more data")
                else:
                    yield _widen(model, ready, chunk, _grows(ready, upstream, chunk, part, gap) if is_short else None)


def _aligned_top(ready: Readiness, upstream: Upstream, step: int, part: Range, gap: Range) -> int:
    """Where ``part``'s intervals end: the part's end, or — below a dependency hole that will be filled — the gap's
    own grid (``step``s down from the gap's end) at or below it, so that the intervals planned now and those planned
    once the hole is filled meet without a sliver between them."""
    low, high = part
    if high == gap[1] or not _hole_fills(ready, upstream, high):
        return high
    return max(low, gap[1] - -(-(gap[1] - high) // step) * step)


def _grows(ready: Readiness, upstream: Upstream, chunk: Range, part: Range, gap: Range) -> str | None:
    """What will still extend the ready part ``chunk`` sits at the edge of (see the module docstring), or ``None``."""
    low, high = chunk
    if ready.valid is not None and low == ready.valid[0]:
        floor = upstream.start_floor()
        if floor is not None and floor < low:
            return f"the valid range's start to move down to {floor} (dependencies filling backward)"
    if low == part[0] > gap[0] and _hole_fills(ready, upstream, low - 1):
        return f"dependencies to fill their hole below {low}"
    if high == part[1] < gap[1] and _hole_fills(ready, upstream, high):
        return f"dependencies to fill their hole from {high}"
    return None


def _hole_fills(ready: Readiness, upstream: Upstream, position: int) -> bool:
    """Whether every transformation dependency without data at ``position`` will fill it."""
    missing = [d for d in ready.required if not cov.covers(d.coverage, (position, position + 1))]
    return bool(missing) and all(upstream.fills(d.label, position) for d in missing)


def _widen(model: IncrementalModel, ready: Readiness, chunk: Range, growing: str | None) -> Range | str:
    """``chunk`` itself when long enough, else widened to ``interval.min`` inside ready data, else why not.
    ``growing``: what still extends the gap at the chunk; a short chunk then waits for it."""
    start, end = chunk
    need = model.interval.min
    if end - start >= need:
        return chunk
    if growing is not None:
        return f"backfill [{start}, {end}) is shorter than interval.min {need}; waiting for {growing}"
    for candidate in ((end - need, end), (start, start + need)):
        if candidate[0] >= 0 and bnd.is_ready(ready, candidate):
            return candidate
    return (
        f"backfill [{start}, {end}) is shorter than interval.min {need} and cannot be widened"
        " inside the valid range and the dependencies' coverage"
    )


def _blocked_note(ready: Readiness, gap: Range) -> str:
    hole = bnd.first_hole(ready, gap)
    if hole is None:
        return f"backfill of [{gap[0]}, {gap[1]}) is not ready"
    dep, (hole_start, hole_end) = hole
    return f"backfill of [{gap[0]}, {gap[1]}) waits for {dep.label}: no data in [{hole_start}, {hole_end})"


def _end_can_grow(model: IncrementalModel, win: Range) -> bool:
    """Whether ``win`` ends at a backfill-only model's open end, which moves forward as dependencies grow."""
    if model.schedules.forwardfill:
        return False
    limit = model.limits.max
    return limit is None or win[1] < limit - model.fill.buffer


def summarize(notes: list[str]) -> str | None:
    if not notes:
        return None
    shown = "; ".join(notes[:MAX_NOTES])
    more = len(notes) - MAX_NOTES
    return shown + (f"; and {more} more" if more > 0 else "")
