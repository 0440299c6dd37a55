"""Backfill (SPEC §5.3): every gap inside the valid range, newest first, many tasks per tick.

Rules, all on half-open ranges:

- Window: the valid range, up to the coverage frontier when forward fill is enabled (what lies beyond the
  frontier is forward fill's). A backfill-only model owns the whole valid range, so with no coverage at all
  its whole valid range is one gap and it starts (the original never started such models). With forward fill
  enabled and nothing covered or in flight yet, backfill waits for forward fill to set the frontier.
- Gaps: the uncovered parts of the window in coverage plus in-flight tasks, including the leading gap between
  ``min_valid`` and the first covered position. Newest (highest) gap first.
- Parts of a gap where a transformation dependency has a hole are not ready; the gap is split around them and
  each ready part is planned on its own (so one dependency hole does not block the rest of the gap).
- Each part is cut into intervals of at most ``interval.max`` aligned to end at the part's end, newest first.
  A remainder shorter than ``interval.min`` is widened to ``interval.min``: downward (keeping its end,
  overlapping coverage below) when that interval is ready, else upward (keeping its start); never outside the
  valid range or over a dependency hole. Exception: at the open end of a backfill-only model's range (which
  grows as data arrives) a short remainder waits for more data instead of being re-run widened on every tick.
- As many intervals as there are free task slots, across gaps — never one gap per tick.
"""

from __future__ import annotations

from collections.abc import Iterator

from cbt.models.spec import IncrementalModel
from cbt.scheduling import bounds as bnd
from cbt.scheduling import coverage as cov
from cbt.scheduling.bounds import Readiness
from cbt.scheduling.coverage import Coverage, Range
from cbt.scheduling.forward import FillPlan

MAX_NOTES = 3


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


def plan_backfill(model: IncrementalModel, ready: Readiness, effective: Coverage, slots: int) -> FillPlan:
    """Up to ``slots`` ready backfill intervals for ``model``; ``effective`` includes in-flight tasks."""
    if ready.valid is None:
        return FillPlan(waiting=ready.reason)
    win = window(model, effective, ready.valid)
    if win is None:
        return FillPlan()
    tasks: list[Range] = []
    notes: list[str] = []
    for item in _candidates(model, ready, effective, win):
        if isinstance(item, str):
            notes.append(item)
        elif len(tasks) >= slots:
            return FillPlan(
                tuple(tasks),
                f"more backfill intervals are ready below {tasks[-1][0] if tasks else win[1]}",
                is_out_of_slots=True,
            )
        elif item not in tasks:
            tasks.append(item)
    return FillPlan(tuple(tasks), summarize(notes))


def _candidates(model: IncrementalModel, ready: Readiness, effective: Coverage, win: Range) -> Iterator[Range | str]:
    """Backfill intervals newest first, interleaved with notes on what cannot run."""
    grows = _end_can_grow(model, win)
    for gap in reversed(cov.gaps(effective, win)):
        parts = bnd.ready_parts(ready, gap)
        if parts != [gap]:
            yield _blocked_note(ready, gap)
        for part in reversed(parts):
            for chunk in cut(part, model.interval.max):
                yield _widen(model, ready, chunk, is_open_end=grows and chunk[1] == win[1])


def _widen(model: IncrementalModel, ready: Readiness, chunk: Range, *, is_open_end: bool) -> Range | str:
    """``chunk`` itself when long enough, else widened to ``interval.min`` inside ready data, else why not."""
    start, end = chunk
    need = model.interval.min
    if end - start >= need:
        return chunk
    if is_open_end:
        return f"backfill [{start}, {end}) is shorter than interval.min {need}; waiting for more data"
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
