"""Bench (h)'s chain freshness: which write made an interval ready, and what each level took after it."""

from __future__ import annotations

from bench.mixed_freshness import Source, Write, chain_freshness, made_ready_at
from cbt.contract.messages import IntervalCompleted

SOURCES = {"blocks": Source(12, 2640), "txs": Source(12, 2640)}  # newest slot 2628: ready up to 2617


def done(model: str, position: int, interval: int, completed_at_ms: int, duration_ms: int) -> IntervalCompleted:
    return IntervalCompleted(task_id=f"{model}:{position}", model=model, position=position, interval=interval,
                             completed_at_ms=completed_at_ms, duration_ms=duration_ms)


def test_an_interval_is_ready_once_every_source_s_newest_slot_passes_its_end_by_the_lag() -> None:
    writes = [Write(1_000, "blocks", 2710), Write(2_000, "txs", 2700), Write(3_000, "blocks", 2720),
              Write(4_000, "txs", 2720)]
    # 2700 needs a slot at 2711 or later (2712): blocks at 3 s, transactions at 4 s
    assert made_ready_at(2700, writes, SOURCES, 12) == 4_000
    assert made_ready_at(2580, writes, SOURCES, 12) is None, "the backlog held it: catch-up"
    assert made_ready_at(2760, writes, SOURCES, 12) is None, "never made ready"
    assert made_ready_at(2700, writes, {"blocks": Source(12, 2640)}, 12) == 3_000
    stalled = {"blocks": Source(12, 2640), "txs": Source(12, 1800)}
    assert made_ready_at(2580, writes, stalled, 12) == 2_000, "one source held it, the other's write made it ready"


def test_each_level_counts_from_the_write_and_the_last_level_beyond_the_jobs() -> None:
    writes = [Write(10_000, "blocks", 2720), Write(10_000, "txs", 2720)]
    completions = {
        "slot_minute": [done("m", 2580, 60, 9_000, 500), done("m", 2640, 60, 12_000, 1_000)],
        "slot_five_minute": [done("f", 2400, 180, 9_500, 800), done("f", 2400, 300, 9_800, 800),
                             done("f", 2580, 120, 14_000, 1_500)],
        "slot_fifteen_minute": [done("q", 900, 900, 5_000, 900), done("q", 1800, 900, 20_000, 2_500)],
    }

    [entry] = chain_freshness(completions, writes, SOURCES, 12, t0=0)

    assert entry["end_from_t0"] == 2700
    assert {k: v["after_write_s"] for k, v in entry["levels"].items()} == {
        "slot_minute": 2.0, "slot_five_minute": 4.0, "slot_fifteen_minute": 10.0}
    assert entry["jobs_s"] == 5.0
    assert entry["last_level_beyond_jobs_s"] == 5.0
