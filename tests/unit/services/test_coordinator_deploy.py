"""The coordinator's side of a deployment (``cbt.coordinator.deploy``): a first deployment records version 1 and
recomputes nothing; a changed model re-runs its covered range, and so do exactly the descendants that read what
changed; the same files again change nothing."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from cbt.contract.messages import Invalidation, TaskRequested
from cbt.coordinator import deploy
from cbt.models.builds import builds_from
from cbt.models.dag import ModelSet
from cbt.models.deployment import DeploymentPlan, recheck_pieces, transformations
from cbt.models.interval_checks import IntervalCheck
from cbt.models.spec import ChangePolicy, IncrementalModel, Write
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


announced: list[dict[str, str]] = []


def deployed(models: ModelSet, record: MemoryVersions, at_ms: int) -> tuple[DeploymentPlan, list[Invalidation]]:
    published: list[Invalidation] = []

    async def publish(event: Invalidation) -> None:
        assert announced, "the versions are announced before anything is re-run"
        published.append(event)

    announced.clear()
    prints = {m.id: fingerprint(m, SETTINGS, Path(".")) for m in transformations(models)}
    plan = asyncio.run(deploy.deploy(models, prints, record, lambda ids: {m: COVERED.get(m, ()) for m in ids},
                                     publish, at_ms, lambda versions: announced.append(dict(versions))))
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
    expected = {m: fingerprint(edited.get(m), SETTINGS).short for m in ("an.parent", "an.reads_total", "an.reads_n")}
    assert announced == [expected], "every model's version, announced before the re-runs"
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


def buildable(models: ModelSet) -> ModelSet:
    """The same pipeline with tables the product owns (written ``append``): changes are built beside them."""
    return ModelSet({m.id: replace(m, write=Write("append")) if isinstance(m, IncrementalModel) else m
                     for m in models.models.values()})


def test_a_changed_model_and_its_reader_are_built_beside_their_live_versions_and_nothing_is_invalidated() -> None:
    record = MemoryVersions()
    deployed(buildable(pipeline()), record, 1_000)
    _, published = deployed(buildable(pipeline(PARENT.replace("sum(v)", "round(sum(v), 2)"))), record, 2_000)

    assert published == [], "readers keep the live versions until the switch"
    states = {(v.model, v.version): (v.state, v.build_table) for v in record.all_versions()}
    assert states == {
        ("an.parent", 1): ("live", None), ("an.parent", 2): ("building", "an.parent__cbt_v2"),
        ("an.reads_total", 1): ("live", None), ("an.reads_total", 2): ("building", "an.reads_total__cbt_v2"),
        ("an.reads_n", 1): ("live", None)}
    builds = builds_from(record.all_versions())
    assert set(builds) == {"an.parent", "an.reads_total"}
    assert announced[0]["an.parent"] == builds["an.parent"].live_version != announced[0]["an.parent__cbt_v2"], \
        "the model's name runs its live version until the switch; its build the new one"
    assert "round" in (builds["an.parent"].new.sql or "") and "round" not in (builds["an.parent"].live.sql or "")


def test_a_new_version_while_one_is_building_supersedes_it() -> None:
    record = MemoryVersions()
    deployed(buildable(pipeline()), record, 1_000)
    deployed(buildable(pipeline(PARENT.replace("sum(v)", "round(sum(v), 2)"))), record, 2_000)
    deployed(buildable(pipeline(PARENT.replace("sum(v)", "round(sum(v), 3)"))), record, 3_000)
    states = {(v.model, v.version): v.state for v in record.all_versions() if v.model == "an.parent"}
    assert states == {("an.parent", 1): "live", ("an.parent", 2): "superseded", ("an.parent", 3): "building"}


def test_an_in_place_reader_below_a_build_waits_for_the_switch() -> None:
    record = MemoryVersions()
    files = buildable(pipeline())
    in_place = ModelSet({**files.models, "an.reads_total": replace(files.models["an.reads_total"],
                                                                    change=ChangePolicy("in_place"))})
    deployed(in_place, record, 1_000)
    edited = buildable(pipeline(PARENT.replace("sum(v)", "round(sum(v), 2)")))
    _, published = deployed(ModelSet({**edited.models, "an.reads_total": in_place.models["an.reads_total"]}),
                            record, 2_000)
    assert published == [], "it would recompute from the parent's live version"
    assert set(builds_from(record.all_versions())) == {"an.parent"}


def test_an_in_place_model_below_a_build_whose_change_it_does_not_read_recomputes_its_own_change_at_once() -> None:
    """The parent only gains a column (built, its readers not reached): the in-place reader's own change cannot wait
    for a switch that will not recompute it."""
    record = MemoryVersions()
    files = buildable(pipeline())
    reader = replace(files.models["an.reads_total"], change=ChangePolicy("in_place"))
    deployed(ModelSet({**files.models, "an.reads_total": reader}), record, 1_000)
    added = buildable(pipeline(PARENT.replace("count(*) AS n", "count(*) AS n, max(v) AS top")))
    edited_reader = replace(reader, sql='SELECT slot, total * 2 AS total FROM {{ ref("an.parent") }}')
    _, published = deployed(ModelSet({**added.models, "an.reads_total": edited_reader}), record, 2_000)

    assert set(builds_from(record.all_versions())) == {"an.parent"}
    assert [(e.model, e.start, e.end) for e in published] == [("an.reads_total", 0, 100)]


def test_a_changed_check_is_run_again_over_the_published_intervals_and_nothing_is_recomputed() -> None:
    """Issue 37: a check's definition is metadata — only the new or changed checks run, as re-check tasks over what
    the model covers; an unchanged check and the model's rows are left alone."""
    not_null, positive = (IntervalCheck("not_null_slot", "not_null", columns=("slot",)),
                          IntervalCheck("positive", "expression", sql="total > 0"))
    write = Write("replace", replace_where="slot >= {{ bounds.start }} AND slot < {{ bounds.end }}")

    def with_checks(*checks: IntervalCheck) -> ModelSet:
        models = pipeline()
        parent = replace(models.get("an.parent"), write=write, checks=checks)  # type: ignore[arg-type]
        return ModelSet({**models.models, "an.parent": parent})

    record = MemoryVersions()
    deployed(with_checks(not_null), record, 1_000)
    sent: list[TaskRequested] = []

    async def recheck(plan: DeploymentPlan, covered: Mapping[str, Coverage]) -> None:
        sent.extend(deploy.recheck_tasks(plan, with_checks(not_null, positive), covered, lambda _: "default",
                                         {"an.parent": "v1"}))

    edited = with_checks(not_null, replace(positive, sql="total >= 0"))
    prints = {m.id: fingerprint(m, SETTINGS, Path(".")) for m in transformations(edited)}
    plan = asyncio.run(deploy.deploy(edited, prints, record, lambda ids: {m: COVERED.get(m, ()) for m in ids},
                                     _no_invalidation, 2_000, recheck=recheck))

    assert plan.recompute == {} and plan.changes["an.parent"].category == "metadata"
    assert {m: [c.name for c in cs] for m, cs in plan.rechecks.items()} == {"an.parent": ["positive"]}
    assert [(t.position, t.interval, t.step, [c.name for c in t.recheck or ()]) for t in sent] == [
        (0, 100, None, ["positive"]), (200, 100, None, ["positive"])], "one task per interval.max (100) covered"
    again = asyncio.run(deploy.deploy(edited, prints, record, lambda ids: {m: COVERED.get(m, ()) for m in ids},
                                      _no_invalidation, 3_000, recheck=recheck))
    assert again.rechecks == {}, "the same checks deployed again run nothing"


async def _no_invalidation(event: Invalidation) -> None:
    raise AssertionError(f"nothing is recomputed: {event}")


def test_recheck_pieces_are_runs_of_whole_intervals_then_what_is_left() -> None:
    assert recheck_pieces(60, [(0, 600), (900, 1_000)], most=4) == [
        (0, 240, 60), (240, 240, 60), (480, 120, 60), (900, 60, None), (960, 40, None)]


def test_a_version_live_in_a_switched_table_keeps_its_files_and_a_new_number_never_repeats_one() -> None:
    """After a switch the model's name is on its build's files (``table_location``): an in-place or metadata
    version that follows lives there too (the read API finds the table by it). After a rollback the rolled-back
    version's number (and its build's folder) stays taken."""
    record = MemoryVersions()
    deployed(pipeline(), record, 1_000)
    live = record.deployed_versions()["an.parent"]
    record.record_versions([replace(live, state="retired", deployed_ms=1_500),
                            replace(live, version=2, data_hash="x" * 64, state="rolled_back", deployed_ms=1_500,
                                    table_location="file:/w/an.db/parent__cbt_v2"),
                            replace(live, state="live", deployed_ms=1_600, table_location="file:/w/an.db/parent")])
    deployed(edited_with(ChangePolicy("in_place")), record, 2_000)
    now = record.deployed_versions()["an.parent"]
    assert (now.version, now.state, now.table_location) == (3, "live", "file:/w/an.db/parent"), now
