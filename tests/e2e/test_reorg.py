"""A reorg on real services (SPEC §8): a block range of the source is rewritten upstream, one invalidation event is
published, and every derived table equals the oracle again — with exactly the tasks that had run over the range
re-run, each once, at their own offsets (issue 10, scenario 10)."""

from __future__ import annotations

import pytest

from cbt.adapters.delta_admin import admin_from_config
from cbt.adapters.invalidation_publisher import publish_invalidation
from cbt.dev.generator import SourceTables, write_blocks
from tests.e2e.harness import T0, Deployment
from tests.e2e.test_pipeline import LAST_SLOT_END, SOURCE_END, assert_equals_oracle

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1800)]
REORG = (T0 + 360, T0 + 420)
"""Slots rewritten upstream: five blocks get new roots, proposers and timings."""


def admin_rows(dep: Deployment) -> list[tuple[str, int, int, int]]:
    """``(model, position, end, invalidation_seq)`` of every task in the incremental admin table (a batch's row
    holds several, ``task_interval`` apart).

    A re-run after the invalidation read the bumped sequence (> 0); rows that kept 0 were not re-run.
    """
    table = f"`{dep.config.admin.incremental.database}`.`{dep.config.admin.incremental.table}`"
    rows = dep.spark.sql(f"SELECT `database`, `table`, position, `interval`, task_interval, invalidation_seq "
                         f"FROM {table} WHERE direction <> 'consolidated'").collect()
    return [(f"{r['database']}.{r['table']}", start, start + (r["task_interval"] or r["interval"]),
             r["invalidation_seq"] or 0)
            for r in rows
            for start in range(r["position"], r["position"] + r["interval"], r["task_interval"] or r["interval"])]


def tasks_that_ran_over(rows: list[tuple[str, int, int, int]], chain: list[str],
                        rng: tuple[int, int]) -> dict[str, tuple[tuple[int, int], ...]]:
    """Per model of a dependency chain, the tasks (admin rows) that overlap the range or a task re-run upstream."""
    reach: list[tuple[int, int]] = [rng]
    out: dict[str, tuple[tuple[int, int], ...]] = {}
    for model in chain:
        tasks = sorted({(s, e) for m, s, e, _ in rows if m == model and any(s < hi and lo < e for lo, hi in reach)})
        out[model] = tuple(tasks)
        reach += tasks
    return out


def test_reorg_one_event_recomputes_every_derived_row_of_the_range_and_nothing_else(deployment: Deployment) -> None:
    dep = deployment
    dep.procs.overrides["CBT__SCHEDULER__CONSOLIDATION"] = "@every 24h"  # rows stay as the tasks wrote them
    dep.write_entities()
    dep.write_sources(T0, SOURCE_END)
    dep.start("coordinator", "worker", "bounds-cache", "invalidator")
    dep.wait_quiet(LAST_SLOT_END, timeout_s=720)
    assert_equals_oracle(dep)
    before = admin_rows(dep)
    assert all(seq == 0 for *_, seq in before)

    write_blocks(dep.spark, SourceTables(dep.source_db), *REORG, version=1)  # the upstream rewrite
    event_id = publish_invalidation(
        dep.config.kafka.bootstrap_servers, "beacon_blocks", *REORG, reason="reorg", source="e2e-block-follower",
        id=f"reorg:{REORG[0]}", metadata={"fork_slot": REORG[0] // 12 - 1}, topic_prefix=dep.config.kafka.topic_prefix,
    )
    dep.wait_applied(event_id)
    applied = dep.series("invalidator", "cbt_invalidations_total")
    assert applied == {frozenset({("result", "applied"), ("reason_kind", "none")}): 1}, applied
    dep.wait_quiet(LAST_SLOT_END, timeout_s=720)
    assert_equals_oracle(dep)

    (record,) = admin_from_config(dep.spark, dep.config).invalidations()
    out = dep.output_db
    expected = tasks_that_ran_over(before, [f"{out}.block_propagation_{name}" for name in
                                            ("minute", "two_minute", "five_minute")], REORG)
    assert dict(record.affected) == expected
    rerun = sorted((m, s, e) for m, s, e, seq in admin_rows(dep) if seq > 0)
    assert rerun == sorted((m, s, e) for m, tasks in expected.items() for s, e in tasks), \
        "each task that had run over the range ran again, once, and nothing else ran"
    untouched = {f"{out}.transactions", f"{out}.block_gas"}
    assert sorted(r for r in admin_rows(dep) if r[0] in untouched) == sorted(r for r in before if r[0] in untouched)
