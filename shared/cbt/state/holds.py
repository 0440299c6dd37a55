"""Intervals held by a failed check (``cbt.state.ports.CheckHolds``): the rules both stores share, and what the
planner makes of them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from cbt.models.spec import ModelId
from cbt.scheduling import coverage as cov
from cbt.scheduling.coverage import Coverage, Range
from cbt.state.ports import HeldInterval


def add_held(before: Sequence[HeldInterval], added: Sequence[HeldInterval]) -> tuple[HeldInterval, ...]:
    """``before`` with ``added``; an interval held again (same start and end) takes the new version and reason."""
    new = {(h.start, h.end) for h in added}
    return tuple(sorted([h for h in before if (h.start, h.end) not in new] + list(added), key=lambda h: h.start))


def overlapping(held: Sequence[HeldInterval], r: Range) -> list[HeldInterval]:
    return [h for h in held if h.start < r[1] and r[0] < h.end]


def without(held: Sequence[HeldInterval], r: Range) -> tuple[HeldInterval, ...]:
    """Every held interval but those that overlap ``r`` (a change of the inputs of any part of an interval releases
    all of it: it is computed whole)."""
    return tuple(h for h in held if not (h.start < r[1] and r[0] < h.end))


def accepted(held: Sequence[HeldInterval], r: Range, who: str,
             version: str | None) -> tuple[tuple[HeldInterval, ...], list[HeldInterval]]:
    """``held`` with the intervals of ``version`` (None: any) that overlap ``r`` accepted by ``who``, and those
    intervals as accepted (one accepted before keeps who accepted it first)."""
    after, marked = [], []
    for h in held:
        if h.start < r[1] and r[0] < h.end and (version is None or h.version in (None, version)):
            h = h if h.is_accepted else replace(h, accepted_by=who)
            marked.append(h)
        after.append(h)
    return tuple(after), marked


def held_ranges(held: Mapping[ModelId, Sequence[HeldInterval]],
                versions: Mapping[ModelId, str]) -> dict[ModelId, Coverage]:
    """What planning leaves alone: each model's held intervals of its deployed version (``versions``; a model
    without one holds every interval held), but those an operator accepted."""
    out: dict[ModelId, Coverage] = {}
    for model, intervals in held.items():
        deployed = versions.get(model)
        kept = [(h.start, h.end) for h in intervals
                if not h.is_accepted and (deployed is None or h.version in (None, deployed))]
        if kept:
            out[model] = cov.merge(kept)
    return out
