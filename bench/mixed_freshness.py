"""(h) How fresh the chain stays while the pipeline is busy: from the write that made an interval's source rows
ready to each chain level's completion of it, against the levels' own job times.

A source is ready up to ``[.., last slot + 1 - lag)`` (the externals' bounds query and ``lag``), so the write that
makes the chain's interval ending at ``end`` ready is, per source, the first one after which its newest slot reaches
``end + lag - 1``; the later of the sources' writes is the moment. A level's completion of that interval is its
first completion after that moment whose range holds position ``end - 1``. Only intervals made ready by a write
after the services started count: the backlog is catch-up, not freshness.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cbt.contract.messages import IntervalCompleted

CHAIN = ("slot_minute", "slot_five_minute", "slot_fifteen_minute")
"""The chain's levels, first to last."""


@dataclass(frozen=True)
class Write:
    """One write after the services' start: when it landed and how far it took its source."""

    landed_ms: int
    source: str
    written_end: int
    """The positions written end here (exclusive)."""


def newest_slot(written_end: int, slot_s: int) -> int:
    return (written_end - 1) // slot_s * slot_s


@dataclass(frozen=True)
class Source:
    lag: int
    backlog_end: int
    """The positions it held before the services started end here (exclusive)."""


def made_ready_at(end: int, writes: Sequence[Write], sources: Mapping[str, Source], slot_s: int) -> int | None:
    """When the interval ending at ``end`` became ready in every source: the landing of the write that made the last
    of them ready; ``None`` if the backlog already held it or no write made it ready."""
    moments = []
    for source, held in sources.items():
        lag = held.lag
        if newest_slot(held.backlog_end, slot_s) + 1 - lag >= end:
            continue  # this source held it before the services started
        landed = [w.landed_ms for w in writes
                  if w.source == source and newest_slot(w.written_end, slot_s) + 1 - lag >= end]
        if not landed:
            return None
        moments.append(min(landed))
    return max(moments, default=None)  # (every source held it before the start: catch-up)


def first_holding(done: Sequence[IntervalCompleted], position: int, after_ms: int) -> IntervalCompleted | None:
    """The first completion after ``after_ms`` whose range holds ``position``."""
    holding = [c for c in done if (c.position or 0) <= position < (c.position or 0) + (c.interval or 0)
               and c.completed_at_ms >= after_ms]
    return min(holding, key=lambda c: c.completed_at_ms, default=None)


def chain_freshness(completions: Mapping[str, Sequence[IntervalCompleted]], writes: Sequence[Write],
                    sources: Mapping[str, Source], slot_s: int, t0: int) -> list[dict[str, Any]]:
    """One entry per interval of the chain's last level made ready by a write after the start: each level's
    seconds from that write to its completion, the levels' jobs' own seconds, and what the last level took beyond
    them."""
    out = []
    for last in sorted(completions.get(CHAIN[-1], ()), key=lambda c: c.position or 0):
        end = (last.position or 0) + (last.interval or 0)
        ready_ms = made_ready_at(end, writes, sources, slot_s)
        if ready_ms is None:
            continue
        levels = [first_holding(completions.get(level, ()), end - 1, ready_ms) for level in CHAIN]
        if any(c is None for c in levels):
            continue
        jobs_ms = sum(c.duration_ms or 0 for c in levels if c is not None)
        entry: dict[str, Any] = {"end_from_t0": end - t0, "levels": {
            level: {"after_write_s": round((c.completed_at_ms - ready_ms) / 1000, 2),
                    "task": [(c.position or 0) - t0, c.interval], "job_s": round((c.duration_ms or 0) / 1000, 2)}
            for level, c in zip(CHAIN, levels, strict=True) if c is not None}}
        last_s = entry["levels"][CHAIN[-1]]["after_write_s"]
        entry["jobs_s"] = round(jobs_ms / 1000, 2)
        entry["last_level_beyond_jobs_s"] = round(last_s - jobs_ms / 1000, 2)
        out.append(entry)
    return out
