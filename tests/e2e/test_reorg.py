"""A reorg on real services (SPEC §8): a block range of the source is rewritten upstream, one invalidation event is
published, and every derived table equals the oracle again — with only the invalidated intervals re-run."""

from __future__ import annotations

import pytest

from cbt.adapters.delta_admin import admin_from_config
from cbt.adapters.invalidation_publisher import publish_invalidation
from cbt.dev.generator import SourceTables, write_blocks
from cbt.models.spec import IncrementalModel
from tests.e2e.harness import T0, Deployment
from tests.e2e.test_pipeline import LAST_SLOT_END, SOURCE_END, assert_equals_oracle

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1800)]
REORG = (T0 + 360, T0 + 420)
"""Slots rewritten upstream: five blocks get new roots, proposers and timings."""


def admin_rows(dep: Deployment) -> list[tuple[str, int, int, int]]:
    """``(model, position, end, invalidation_seq)`` of every task's row in the incremental admin table.

    A re-run after the invalidation read the bumped sequence (> 0); rows that kept 0 were not re-run.
    """
    table = f"`{dep.config.admin.incremental.database}`.`{dep.config.admin.incremental.table}`"
    rows = dep.spark.sql(f"SELECT `database`, `table`, position, `interval`, invalidation_seq FROM {table} "
                         "WHERE direction <> 'consolidated'").collect()
    return [(f"{r['database']}.{r['table']}", r["position"], r["position"] + r["interval"], r["invalidation_seq"] or 0)
            for r in rows]


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
    dep.wait_quiet(LAST_SLOT_END, timeout_s=720)
    assert_equals_oracle(dep)

    (record,) = admin_from_config(dep.spark, dep.config).invalidations()
    out = dep.output_db
    assert dict(record.affected) == {
        f"{out}.block_propagation_minute": (REORG,),
        f"{out}.block_propagation_two_minute": ((T0 + 360, T0 + 480),),
        f"{out}.block_propagation_five_minute": ((T0 + 300, T0 + 600),),
    }
    rerun = [(m, s, e) for m, s, e, seq in admin_rows(dep) if seq > 0]
    assert {m for m, _, _ in rerun} == set(record.affected), "every affected model re-ran, no other"
    for model, start, end in rerun:
        # Each re-run overlaps what was removed; it may reach past it only by the planner's own widening of a
        # short gap to interval.min (SPEC §5.3), never by a whole interval.
        (lo, hi), = record.affected[model]
        spec = dep.models.models[model]
        assert isinstance(spec, IncrementalModel)
        reach = spec.interval.max
        assert start < hi and lo < end, f"{model} re-ran [{start}, {end}) outside the invalidated [{lo}, {hi})"
        assert lo - reach < start and end < hi + reach, f"{model} re-ran [{start}, {end}) far beyond [{lo}, {hi})"
    untouched = {f"{out}.transactions", f"{out}.block_gas"}
    assert sorted(r for r in admin_rows(dep) if r[0] in untouched) == sorted(r for r in before if r[0] in untouched)
