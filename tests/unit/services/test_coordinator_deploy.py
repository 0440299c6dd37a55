"""The coordinator's side of a deployment (``cbt.coordinator.deploy``): a first deployment records version 1 and
recomputes nothing; a changed model re-runs its covered range, and so do exactly the descendants that read what
changed; the same files again change nothing."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

from cbt.contract.messages import Invalidation
from cbt.coordinator import deploy
from cbt.models.dag import ModelSet
from cbt.models.deployment import DeploymentPlan, transformations
from cbt.models.spec import ChangePolicy, IncrementalModel
from cbt.models.templates import RenderSettings
from cbt.models.versions import fingerprint
from cbt.scheduling.coverage import Coverage
from tests.twins.memory_record import MemoryVersions
from tests.unit.scheduling.factories import ext, inc, models_of

PARENT = 'SELECT slot, sum(v) AS total, count(*) AS n FROM {{ ref("src.t") }} GROUP BY slot'
SETTINGS = RenderSettings(external_database="src", transformation_database="an")
COVERED: dict[str, Coverage] = {"an.parent": ((0, 100), (200, 300)), "an.reads_total": ((0, 100),),
                                "an.reads_n": ((0, 100),)}


def pipeline(parent_sql: str = PARENT) -> ModelSet:
    return ModelSet(models_of(
        ext("src.t"),
        replace(inc("an.parent", ["src.t"]), sql=parent_sql),
        replace(inc("an.reads_total", ["an.parent"]), sql='SELECT slot, total FROM {{ ref("an.parent") }}'),
        replace(inc("an.reads_n", ["an.parent"]), sql='SELECT slot, n FROM {{ ref("an.parent") }}')))


def deployed(models: ModelSet, record: MemoryVersions, at_ms: int) -> tuple[DeploymentPlan, list[Invalidation]]:
    published: list[Invalidation] = []

    async def publish(event: Invalidation) -> None:
        published.append(event)

    prints = {m.id: fingerprint(m, SETTINGS, Path(".")) for m in transformations(models)}
    plan = asyncio.run(deploy.deploy(models, prints, record, lambda ids: {m: COVERED.get(m, ()) for m in ids},
                                     publish, at_ms))
    return plan, published


def test_a_first_deployment_is_version_one_and_recomputes_nothing() -> None:
    record = MemoryVersions()
    plan, published = deployed(pipeline(), record, 1_000)
    assert published == []
    assert {m: v.version for m, v in record.deployed_versions().items()} == {
        "an.parent": 1, "an.reads_total": 1, "an.reads_n": 1}
    assert {c.category for c in plan.changes.values()} == {"new"}


def test_a_changed_column_re_runs_the_model_and_its_reader_only_once() -> None:
    record = MemoryVersions()
    deployed(pipeline(), record, 1_000)
    edited = pipeline(PARENT.replace("sum(v)", "round(sum(v), 2)"))

    plan, published = deployed(edited, record, 2_000)

    assert [(e.model, e.start, e.end, e.cascade) for e in published] == [
        ("an.parent", 0, 300, False), ("an.reads_total", 0, 100, False)]
    assert published[0].reason == "model change: column total: expression changed"
    assert published[1].reason == "model change: reads total of an.parent"
    assert record.deployed_versions()["an.parent"].version == 2
    assert record.deployed_versions()["an.reads_total"].version == 1, "its own definition did not change"
    assert "an.reads_n" in plan.impact.unaffected

    again, republished = deployed(edited, record, 3_000)
    assert republished == [] and again.changes == {}


def test_a_leader_that_died_before_recording_publishes_the_same_ids_again() -> None:
    first, second = MemoryVersions(), MemoryVersions()
    for record in (first, second):
        deployed(pipeline(), record, 1_000)
    edited = pipeline(PARENT.replace("sum(v)", "max(v)"))
    _, once = deployed(edited, first, 2_000)
    _, twice = deployed(edited, second, 2_500)
    assert [e.id for e in once] == [e.id for e in twice]


def edited_with(policy: ChangePolicy) -> ModelSet:
    edited = pipeline(PARENT.replace("sum(v)", "round(sum(v), 2)"))
    parent = edited.models["an.parent"]
    assert isinstance(parent, IncrementalModel)
    return ModelSet({**edited.models, "an.parent": replace(parent, change=policy)})


def test_forward_only_keeps_history_or_recomputes_from_its_effective_position() -> None:
    record = MemoryVersions()
    deployed(pipeline(), record, 1_000)
    plan, published = deployed(edited_with(ChangePolicy("forward_only")), record, 2_000)
    assert published == [], "history kept"
    assert "forward_only: history kept, new intervals only" in plan.changes["an.parent"].reasons
    assert record.deployed_versions()["an.parent"].version == 2

    record = MemoryVersions()
    deployed(pipeline(), record, 1_000)
    _, published = deployed(edited_with(ChangePolicy("forward_only", effective_from=50)), record, 2_000)
    assert [(e.model, e.start, e.end) for e in published] == [("an.parent", 50, 300), ("an.reads_total", 50, 100)]


def test_a_forced_category_replaces_the_classified_one() -> None:
    record = MemoryVersions()
    deployed(pipeline(), record, 1_000)
    plan, published = deployed(edited_with(ChangePolicy(category="metadata")), record, 2_000)
    assert published == []
    assert plan.changes["an.parent"].category == "metadata"

    record = MemoryVersions()
    deployed(pipeline(), record, 1_000)
    _, published = deployed(edited_with(ChangePolicy(category="breaking")), record, 2_000)
    assert sorted(e.model for e in published) == ["an.parent", "an.reads_n", "an.reads_total"], "every reader"
