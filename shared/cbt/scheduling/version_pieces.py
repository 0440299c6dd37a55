"""Which version of a model computed each covered range: the hot index's side of "every completion carries its
version" (docs/changing-models.md).

A model's covered ranges are split into disjoint pieces, each computed by one version; a covered range no piece
holds was recorded without a version (``None``: a deployment made before versions, or a completion that did not
say). A completion replaces what its range held; an invalidation removes the range from every version.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from cbt.scheduling import coverage as cov
from cbt.scheduling.coverage import EMPTY, Coverage, Range

Piece = tuple[int, int, str]
"""``(start, end, version)``: ``[start, end)`` computed by ``version``."""

ByVersion = dict[str | None, Coverage]
"""The ranges each version computed; ``None``: covered, version not known."""


def computed(held: Mapping[str, Coverage], done: Range, version: str | None) -> dict[str, Coverage]:
    """``held`` after ``done`` was computed by ``version`` (``None``: not known, so no version holds it)."""
    out = {v: kept for v, ranges in held.items() if (kept := cov.remove(ranges, done))}
    if version is not None and done[0] < done[1]:
        out[version] = cov.add(out.get(version, EMPTY), done)
    return out


def removed(held: Mapping[str, Coverage], gone: Range) -> dict[str, Coverage]:
    """``held`` after ``gone`` was invalidated."""
    return computed(held, gone, None)


def adopted(held: Mapping[str, Coverage], source: Mapping[str, Coverage]) -> dict[str, Coverage]:
    """``held`` where ``source``'s ranges replace it (a build switched to)."""
    out = dict(held)
    for version, ranges in source.items():
        for r in ranges:
            out = computed(out, r, version)
    return out


def known(held: Mapping[str | None, Coverage]) -> dict[str, Coverage]:
    """The ranges whose version is known."""
    return {v: ranges for v, ranges in held.items() if v is not None}


def by_version(covered: Coverage, pieces: Iterable[Piece]) -> ByVersion:
    """The covered ranges grouped by version, the ones no piece holds under ``None`` (pieces outside the coverage
    are not counted)."""
    held: dict[str, list[Range]] = {}
    for start, end, version in pieces:
        held.setdefault(version, []).append((start, end))
    out: ByVersion = {v: clipped for v, rs in held.items() if (clipped := cov.intersect(cov.merge(rs), covered))}
    unknown = covered
    for ranges in out.values():
        for r in ranges:
            unknown = cov.remove(unknown, r)
    if unknown:
        out[None] = unknown
    return out


def version_pieces(covered: Coverage, computed_by: Mapping[str, Coverage]) -> list[Piece]:
    """Disjoint pieces, by start, of the versions' ranges within ``covered`` (where two versions claim a position,
    the first in version order keeps it)."""
    held: dict[str, Coverage] = {}
    for version in sorted(computed_by):
        mine = cov.intersect(cov.merge(computed_by[version]), covered)
        for other in held.values():
            for r in other:
                mine = cov.remove(mine, r)
        if mine:
            held[version] = mine
    return sorted((start, end, version) for version, ranges in held.items() for start, end in ranges)
