"""Coverage: the set of positions a model has completed, kept as merged half-open ranges.

A ``Range`` is ``(start, end)`` meaning ``[start, end)``; it is empty when ``start >= end``. A ``Coverage`` is
a tuple of non-empty ranges, sorted, pairwise disjoint and non-adjacent (``[0, 10)`` and ``[10, 20)`` are
stored as ``[0, 20)``). That canonical form makes equality meaningful and keeps every query proportional to
the number of ranges (found by bisection), never to the number of completed intervals.

Every function is pure: it takes coverages and returns new ones. ``merge`` is the only way to build a coverage
from arbitrary ranges; the others assume their input is already canonical.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

Range = tuple[int, int]
"""Half-open ``[start, end)`` of positions."""

Coverage = tuple[Range, ...]
"""Sorted, disjoint, non-adjacent, non-empty half-open ranges."""

EMPTY: Coverage = ()


def _start(r: Range) -> int:
    return r[0]


def merge(ranges: Iterable[Range]) -> Coverage:
    """The canonical coverage of any ranges: sorted, overlapping and touching ones joined, empty ones dropped."""
    out: list[Range] = []
    for start, end in sorted(ranges):
        if start >= end:
            continue
        if out and start <= out[-1][1]:
            if end > out[-1][1]:
                out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return tuple(out)


def _touching(cov: Coverage, start: int, end: int) -> tuple[int, int]:
    """Index span ``[lo, hi)`` of the ranges that overlap or touch ``[start, end]``."""
    lo = bisect.bisect_left(cov, start, key=lambda r: r[1])
    hi = bisect.bisect_right(cov, end, key=_start)
    return lo, hi


def add(cov: Coverage, r: Range) -> Coverage:
    """``cov`` with ``[start, end)`` covered too."""
    start, end = r
    if start >= end:
        return cov
    lo, hi = _touching(cov, start, end)
    if lo < hi:
        start = min(start, cov[lo][0])
        end = max(end, cov[hi - 1][1])
    return (*cov[:lo], (start, end), *cov[hi:])


def remove(cov: Coverage, r: Range) -> Coverage:
    """``cov`` without ``[start, end)``; ranges straddling an edge are cut, never dropped whole."""
    start, end = r
    if start >= end:
        return cov
    lo = bisect.bisect_right(cov, start, key=lambda x: x[1])
    hi = bisect.bisect_left(cov, end, key=_start)
    if lo >= hi:
        return cov
    kept: list[Range] = []
    if cov[lo][0] < start:
        kept.append((cov[lo][0], start))
    if cov[hi - 1][1] > end:
        kept.append((end, cov[hi - 1][1]))
    return (*cov[:lo], *kept, *cov[hi:])


def union(*covs: Coverage) -> Coverage:
    """Positions covered by at least one of ``covs``."""
    return merge(r for cov in covs for r in cov)


def span(cov: Coverage) -> Range | None:
    """``[first covered position, end of the last range)``, holes included; ``None`` if nothing is covered."""
    if not cov:
        return None
    return (cov[0][0], cov[-1][1])


def frontier(cov: Coverage) -> int | None:
    """End of the highest covered range: where forward fill continues. ``None`` (never 0) if nothing is covered.

    Holes below the frontier are gaps for backfill; forward fill never goes back into them.
    """
    return cov[-1][1] if cov else None


def covers(cov: Coverage, r: Range) -> bool:
    """Whether every position of ``[start, end)`` is covered (an empty range is trivially covered)."""
    start, end = r
    if start >= end:
        return True
    i = bisect.bisect_right(cov, start, key=_start) - 1
    return i >= 0 and cov[i][1] >= end


def gaps(cov: Coverage, window: Range) -> list[Range]:
    """Uncovered parts of ``window``, ascending, each clipped to the window.

    Includes the leading part before the first covered position and the trailing part after the last one.
    """
    w_start, w_end = window
    if w_start >= w_end:
        return []
    out: list[Range] = []
    pos = w_start
    i = max(bisect.bisect_right(cov, w_start, key=_start) - 1, 0)
    while i < len(cov) and cov[i][0] < w_end:
        start, end = cov[i]
        if start > pos:
            out.append((pos, start))
        pos = max(pos, end)
        i += 1
    if pos < w_end:
        out.append((pos, w_end))
    return out


def first_gap(cov: Coverage, r: Range) -> Range | None:
    """The lowest uncovered part of ``[start, end)`` (clipped to it), or ``None`` if all of it is covered."""
    start, end = r
    if start >= end:
        return None
    i = bisect.bisect_right(cov, start, key=_start) - 1
    if i >= 0 and cov[i][1] > start:
        start = cov[i][1]
        if start >= end:
            return None
    following = i + 1
    gap_end = cov[following][0] if following < len(cov) else end
    return (start, min(gap_end, end))


def next_covered(cov: Coverage, pos: int) -> int | None:
    """The smallest covered position ``>= pos``; ``None`` when nothing at or after ``pos`` is covered."""
    i = bisect.bisect_right(cov, pos, key=_start) - 1
    if i >= 0 and cov[i][1] > pos:
        return pos
    return cov[i + 1][0] if i + 1 < len(cov) else None


def size(cov: Coverage) -> int:
    """Number of covered positions."""
    return sum(end - start for start, end in cov)


def clip(cov: Coverage, window: Range) -> Coverage:
    """The covered parts of ``window``."""
    w_start, w_end = window
    if w_start >= w_end:
        return EMPTY
    lo = bisect.bisect_right(cov, w_start, key=lambda r: r[1])
    hi = bisect.bisect_left(cov, w_end, key=_start)
    return tuple((max(s, w_start), min(e, w_end)) for s, e in cov[lo:hi])


def intersect(a: Coverage, b: Coverage) -> Coverage:
    """Positions covered by both; cost grows with ``len(a)`` and the output, bisecting into ``b``."""
    return tuple(r for window in a for r in clip(b, window))
