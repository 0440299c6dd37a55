"""A reorg on real services (docs/design/invalidations.md#invalidation-events): a block range of the source is rewritten
upstream, one invalidation event is published, and every derived table equals the oracle again — with exactly the tasks
that had run over the range re-run, each once, at their own offsets (issue 10, scenario 10). Then another system
announces a second rewrite with a plain Kafka client (kcat), not cbt's publisher, as docs/asyncapi.yaml tells it to
(issue 15)."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from cbt.adapters.delta_admin import admin_from_config
from cbt.adapters.invalidation_publisher import publish_invalidation
from cbt.dev.generator import SourceTables, write_blocks
from cbt.scheduling.task_runs import all_tasks
from tests.e2e.harness import T0, Deployment
from tests.e2e.test_pipeline import LAST_SLOT_END, SOURCE_END, assert_equals_oracle

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1800)]
REORG = (T0 + 360, T0 + 420)
"""Slots rewritten upstream: five blocks get new roots, proposers and timings."""
KCAT_REORG = (T0 + 480, T0 + 540)
"""Slots rewritten again later, announced by another tool."""
CHAIN = ("minute", "two_minute", "five_minute")
"""The block_propagation_<name> models, each derived from the one before (the first from beacon_blocks)."""


def admin_rows(dep: Deployment) -> list[tuple[str, int, int, int]]:
    """``(model, position, end, invalidation_seq)`` of every task in the incremental admin table (a batch's row
    holds several, ``task_interval`` apart).

    A re-run after the invalidation read the bumped sequence (> 0); rows that kept 0 were not re-run.
    """
    return [(model, start, end, seq) for model, start, end, seq, _ in admin_tasks(dep)]


def admin_tasks(dep: Deployment) -> list[tuple[str, int, int, int, str]]:
    """``admin_rows`` with each task's ``direction`` (``forward``, ``backfill``, ``rerun``)."""
    table = f"`{dep.config.admin.incremental.database}`.`{dep.config.admin.incremental.table}`"
    rows = dep.spark.sql(f"SELECT `database`, `table`, position, `interval`, task_interval, invalidation_seq, "
                         f"direction FROM {table} WHERE direction <> 'consolidated'").collect()
    return [(f"{r['database']}.{r['table']}", start, start + (r["task_interval"] or r["interval"]),
             r["invalidation_seq"] or 0, r["direction"])
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
    expected = tasks_that_ran_over(before, [f"{out}.block_propagation_{name}" for name in CHAIN], REORG)
    assert {m: all_tasks(runs) for m, runs in record.affected.items()} == expected
    rerun = sorted((m, s, e) for m, s, e, seq in admin_rows(dep) if seq > 0)
    assert rerun == sorted((m, s, e) for m, tasks in expected.items() for s, e in tasks), \
        "each task that had run over the range ran again, once, and nothing else ran"
    untouched = {f"{out}.transactions", f"{out}.block_gas"}
    assert sorted(r for r in admin_rows(dep) if r[0] in untouched) == sorted(r for r in before if r[0] in untouched)

    rerun_announced_by_another_tool(dep)


def rerun_announced_by_another_tool(dep: Deployment) -> None:
    """More slots are rewritten upstream and another system announces them: the JSON of docs/asyncapi.yaml published
    with kcat. The invalidator applies it, the tasks that had run over the range re-run (direction ``rerun``, having
    read the event's epoch), and the tables equal the oracle (which reads the rewritten slots) again."""
    before = admin_rows(dep)
    write_blocks(dep.spark, SourceTables(dep.source_db), *KCAT_REORG, version=2)
    event_id = f"reorg:kcat:{KCAT_REORG[0]}"
    publish_with_kcat(dep, "beacon_blocks", {
        "kind": "invalidation", "schema_version": 1, "id": event_id, "model": "beacon_blocks",
        "start": KCAT_REORG[0], "end": KCAT_REORG[1], "reason": "reorg", "source": "e2e-kcat",
        "metadata": {"fork_slot": KCAT_REORG[0] // 12 - 1}, "cascade": True})
    dep.wait_applied(event_id)
    dep.wait_quiet(LAST_SLOT_END, timeout_s=720)
    assert_equals_oracle(dep)

    record = next(r for r in admin_from_config(dep.spark, dep.config).invalidations() if r.id == event_id)
    expected = tasks_that_ran_over(before, [f"{dep.output_db}.block_propagation_{name}" for name in CHAIN],
                                   KCAT_REORG)
    assert (record.source, {m: all_tasks(runs) for m, runs in record.affected.items()}) == ("e2e-kcat", expected)
    (epoch,) = set(record.seqs.values())
    reran = [(m, s, e, direction) for m, s, e, seq, direction in admin_tasks(dep) if seq == epoch]
    assert sorted(reran) == sorted((m, s, e, "rerun") for m, tasks in expected.items() for s, e in tasks), \
        "each task that had run over the announced range ran again as a re-run, once, and nothing else ran"
    assert sum(dep.series("invalidator", "cbt_invalidations_total").values()) == 2


def publish_with_kcat(dep: Deployment, key: str, event: dict[str, object]) -> None:
    """What another system does: one JSON line on ``<prefix>invalidation`` with a plain Kafka client (kcat, formerly
    kafkacat), waiting for the broker's acknowledgement (kcat exits non-zero when a message is not delivered)."""
    kcat = shutil.which("kcat") or shutil.which("kafkacat")
    assert kcat, "kcat (Debian's kafkacat) is not installed: run deploy/local/install-system-deps.sh"
    topic = f"{dep.config.kafka.topic_prefix}invalidation"
    published = subprocess.run(
        [kcat, "-P", "-b", dep.config.kafka.bootstrap_servers, "-t", topic, "-k", key,
         "-H", "content-type=application/json", "-X", "acks=all"],
        input=json.dumps(event), text=True, capture_output=True, timeout=60, check=False)
    assert published.returncode == 0, f"kcat could not publish to {topic}: {published.stderr.strip()}"
