"""One model's coverage over a window as merged ranges with a status, and how much of the window each status holds.

Pure: the inputs are the same values the planner reads (coverage, in-flight tasks, pending re-runs) plus the failure
log's task ranges. Ranges are half-open ``[start, end)``. Where layers overlap, the first status of ``PRECEDENCE``
wins: a task in flight over a range is what happens there now; a covered position is done even when an older task
over it failed (a failed batch stays in the failure log after smaller tasks covered its intervals); a range an operator
skipped is skipped, not failed (nothing will try it); an interval a failed check holds (docs/checks.md) is held; a
failed re-run is shown as failed; what no layer holds is missing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from cbt.scheduling import coverage as cov
from cbt.scheduling.coverage import Coverage, Range

Status = Literal["covered", "in_flight", "skipped", "held", "failed", "invalidated_pending", "missing", "passed",
                 "warned", "accepted"]
PRECEDENCE: tuple[Status, ...] = ("in_flight", "warned", "accepted", "passed", "covered", "skipped", "held", "failed",
                                  "invalidated_pending")
"""Layer order where they overlap (``missing`` is what none of them holds). ``passed``, ``warned``, ``accepted``: a
covered interval whose latest checks passed, warned, or failed and were accepted (``verdict_layers``)."""
STATUSES: tuple[Status, ...] = ("covered", "in_flight", "failed", "missing", "invalidated_pending", "skipped", "held",
                                "passed", "warned", "accepted")


@dataclass(frozen=True)
class StatusRange:
    start: int
    end: int
    status: Status


@dataclass(frozen=True)
class CoverageView:
    """``ranges`` cover exactly ``window``, sorted, and neighbours never share a status. ``intervals``: each status's
    ranges in intervals of ``interval`` (a partial one counts whole); ``None`` without an interval length."""

    window: Range
    ranges: tuple[StatusRange, ...]
    counts: Mapping[Status, int]
    intervals: Mapping[Status, int] | None


def layer(ranges: Iterable[Range]) -> Coverage:
    """Any ranges (tasks, failures) as one canonical layer."""
    return cov.merge(ranges)


def verdict_layers(results: Iterable[tuple[int, int, str, str]], covered: Coverage) -> dict[Status, Coverage]:
    """The covered intervals by their latest checks (``results``: ``(start, end, task, status)`` of each verdict,
    newest first): ``warned`` when one of the latest task's checks warned, ``accepted`` when one failed and an
    operator accepted it, else ``passed``. Only what is covered counts (a held interval has a layer of its own)."""
    latest: dict[tuple[int, int], tuple[str, set[str]]] = {}
    for start, end, task, status in results:
        task_of, statuses = latest.setdefault((start, end), (task, set()))
        if task == task_of:
            statuses.add(status)
    by: dict[Status, list[Range]] = {"passed": [], "warned": [], "accepted": []}
    for span, (_, statuses) in latest.items():
        by["warned" if "warned" in statuses else "accepted" if "accepted" in statuses else "passed"].append(span)
    return {status: cov.intersect(layer(spans), covered) for status, spans in by.items()}


def default_window(valid: Range | None, layers: Iterable[Coverage]) -> Range | None:
    """The valid range widened to everything the layers hold; ``None`` when there is nothing to show."""
    spans = [valid] if valid is not None else []
    spans += [s for s in (cov.span(c) for c in layers) if s is not None]
    if not spans:
        return None
    return (min(s[0] for s in spans), max(s[1] for s in spans))


def coverage_view(window: Range, layers: Mapping[Status, Coverage], interval: int | None = None) -> CoverageView:
    """The window cut into status ranges (see the module docstring for the order of overlapping layers)."""
    pieces: list[StatusRange] = []
    taken: Coverage = cov.EMPTY
    for status in PRECEDENCE:
        own = cov.clip(layers.get(status, cov.EMPTY), window)
        pieces += [StatusRange(s, e, status) for r in own for s, e in cov.gaps(taken, r)]
        taken = cov.union(taken, own)
    pieces += [StatusRange(s, e, "missing") for s, e in cov.gaps(taken, window)]
    ranges = _joined(sorted(pieces, key=lambda p: p.start))
    counts = {status: sum(r.end - r.start for r in ranges if r.status == status) for status in STATUSES}
    intervals = None if interval is None else {
        status: sum(-(-(r.end - r.start) // interval) for r in ranges if r.status == status) for status in STATUSES}
    return CoverageView(window, ranges, counts, intervals)


def _joined(pieces: Sequence[StatusRange]) -> tuple[StatusRange, ...]:
    """Touching pieces of one status as one range."""
    out: list[StatusRange] = []
    for piece in pieces:
        if out and out[-1].status == piece.status and out[-1].end == piece.start:
            out[-1] = StatusRange(out[-1].start, piece.end, piece.status)
        else:
            out.append(piece)
    return tuple(out)
