"""A build: the files' definition of a changed model, writing beside the live one and reading its parents' builds."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cbt.models.builds import (
    Build,
    build_id,
    builds_from,
    built_model,
    deployed_pins,
    files_past_retention,
    is_buildable,
    pins_from,
    running_models,
    running_versions,
    with_builds,
)
from cbt.models.dag import ModelSet
from cbt.models.deployment import (
    DeployedVersion,
    NothingToRollBack,
    VersionState,
    current_states,
    plan_rollback,
    rolled_back_files,
)
from cbt.models.render import render_statements
from cbt.models.spec import IncrementalModel, Write
from cbt.models.stored import definition_document
from cbt.models.templates import RenderSettings, TaskContext
from cbt.models.versions import Fingerprint
from tests.unit.models.conftest import Project

SETTINGS = RenderSettings(transformation_database="analytics", external_database="ethereum")


@pytest.fixture
def chain(project_with_blocks: Project) -> ModelSet:
    project_with_blocks.incremental("first")
    project_with_blocks.incremental("second", body='SELECT v FROM {{ ref("{{transformation}}.first") }}\n',
                                    dependencies=["analytics.first"])
    project_with_blocks.incremental("third", body='SELECT v FROM {{ dep["{{transformation}}"]["second"].from }}\n',
                                    dependencies=["analytics.second"])
    return project_with_blocks.load()


def live(models: ModelSet, model_id: str) -> IncrementalModel:
    return replace(files(models, model_id), sql="SELECT 'the live definition' AS v")


def files(models: ModelSet, model_id: str) -> IncrementalModel:
    model = models.get(model_id)
    assert isinstance(model, IncrementalModel)
    return model


def rendered(model: object) -> str:
    assert isinstance(model, IncrementalModel)
    task = TaskContext(model_id=model.id, task_start_unix=0, start=0, end=model.interval.max)
    return " ".join(render_statements(model, task, SETTINGS))


def test_the_name_keeps_its_live_definition_and_the_build_reads_the_builds_of_its_rebuilt_parents(
        chain: ModelSet) -> None:
    builds = {m: Build(m, 2, live(chain, m), files(chain, m)) for m in ("analytics.second", "analytics.third")}
    running = with_builds(chain, builds)

    assert set(running.models) == {*chain.models, "analytics.second__cbt_v2", "analytics.third__cbt_v2"}
    assert running.get("analytics.second") == builds["analytics.second"].live
    assert running.get("analytics.first") == chain.get("analytics.first"), "an unchanged parent is left alone"
    assert running.dependencies("analytics.second__cbt_v2") == ("analytics.first",)
    assert running.dependencies("analytics.third__cbt_v2") == ("analytics.second__cbt_v2",)
    assert running.descendants("analytics.second") == ("analytics.third",), "the live chain stays as it was"
    assert "`analytics`.`first`" in rendered(running.get("analytics.second__cbt_v2"))
    assert "`analytics`.`second__cbt_v2`" in rendered(running.get("analytics.third__cbt_v2")), "dep[...] reads it"


def test_ref_to_a_rebuilt_parent_reads_its_build(chain: ModelSet) -> None:
    builds = {m: Build(m, 3, live(chain, m), files(chain, m)) for m in ("analytics.first", "analytics.second")}
    build = with_builds(chain, builds).get("analytics.second__cbt_v3")
    assert "`analytics`.`first__cbt_v3`" in rendered(build)
    assert "the live definition" not in rendered(build), "a build runs the files' definition"


def test_without_builds_the_set_is_the_files_set(chain: ModelSet) -> None:
    assert with_builds(chain, {}) is chain


def test_a_build_table_names_its_model_and_version() -> None:
    assert build_id("analytics.second", 12) == "analytics.second__cbt_v12"
    assert built_model("analytics.second__cbt_v12") == ("analytics.second", 12)
    assert built_model("analytics.second") is None
    assert built_model("analytics.second__cbt_vx") is None


def test_only_incremental_sql_models_are_built_beside_their_live_version(chain: ModelSet) -> None:
    model = replace(files(chain, "analytics.first"), write=Write("append"))
    assert is_buildable(model)
    assert not is_buildable(replace(model, write=Write("sql"))), "its own statements name their tables"
    assert not is_buildable(replace(model, sql=None, exec="python run.py")), "its scripts are not kept"


def version(model: IncrementalModel, number: int, state: VersionState, at_ms: int) -> DeployedVersion:
    return DeployedVersion(model.id, number, f"data-{number}", "meta", {}, deployed_ms=at_ms,
                           spec=definition_document(model), state=state,
                           build_table=build_id(model.id, number) if state == "building" else None)


def test_the_builds_in_progress_come_from_the_record_with_both_definitions(chain: ModelSet) -> None:
    second, old = files(chain, "analytics.second"), live(chain, "analytics.second")
    first = files(chain, "analytics.first")
    record = [version(old, 1, "live", 1_000), version(second, 2, "building", 2_000),
              version(first, 1, "live", 1_000), version(first, 2, "building", 2_000),
              version(first, 2, "superseded", 3_000), version(first, 3, "live", 3_000)]
    builds = builds_from(current_states(record))
    assert builds == {"analytics.second": Build("analytics.second", 2, old, second, "data-1", "data-2")}, (
        "a superseded build is over")
    assert running_versions({"analytics.second": "data-2", "analytics.first": "data-3"}, builds) == {
        "analytics.second": "data-1", "analytics.second__cbt_v2": "data-2", "analytics.first": "data-3"}
    unkept = replace(version(old, 1, "live", 1_000), spec=None)
    assert builds_from([unkept, version(second, 2, "building", 2_000)]) == {}, "no live definition to keep serving"


def test_a_rollback_switches_back_every_model_of_the_switch_and_keeps_the_files_from_coming_back(
        chain: ModelSet) -> None:
    first, second, third = (files(chain, m) for m in ("analytics.first", "analytics.second", "analytics.third"))
    switched = [replace(version(m, 1, "retired", 5_000), table_version=4, covered_end=900) for m in (first, second)]
    record = [version(first, 1, "live", 1_000), version(first, 2, "building", 2_000), *switched,
              version(first, 2, "live", 5_000), version(second, 1, "live", 1_000),
              version(second, 2, "live", 5_000), version(third, 1, "live", 1_000)]
    plan = plan_rollback("analytics.second", current_states(record), 9_000)
    assert [(v.model, v.table_version) for v in plan.restores] == [("analytics.first", 4), ("analytics.second", 4)], \
        "switched together, back together"
    assert plan.heads == {"analytics.first": 900, "analytics.second": 900}
    after = current_states([*record, *plan.rows])
    assert {(v.model, v.version): v.state for v in after if v.model != "analytics.third"} == {
        ("analytics.first", 1): "live", ("analytics.first", 2): "rolled_back",
        ("analytics.second", 1): "live", ("analytics.second", 2): "rolled_back"}
    assert set(pins_from(after)) == {"analytics.first", "analytics.second"}
    assert pins_from(after)["analytics.first"].version == "data-1"
    prints = {"analytics.first": Fingerprint("data-2", "meta", {}), "analytics.third": Fingerprint("data-1", "m", {})}
    assert rolled_back_files(prints, after) == {"analytics.first"}, "files still defining version 2 wait"
    edited = {"analytics.first": Fingerprint("data-3", "meta", {})}
    assert rolled_back_files(edited, after) == set(), "files that change are deployed again"
    with pytest.raises(NothingToRollBack):
        plan_rollback("analytics.third", current_states(record), 9_000)


def test_a_rollback_of_a_switch_that_moved_the_name_goes_back_to_the_old_files(chain: ModelSet) -> None:
    first = files(chain, "analytics.first")
    record = [version(first, 1, "live", 1_000), version(first, 2, "building", 2_000),
              replace(version(first, 1, "retired", 5_000), table_location="file:/w/analytics.db/first",
                      covered_end=900),
              replace(version(first, 2, "live", 5_000), table_location="file:/w/analytics.db/first__cbt_v2")]
    plan = plan_rollback("analytics.first", current_states(record), 9_000)
    assert [(v.model, v.version, v.table_location) for v in plan.restores] == [
        ("analytics.first", 1, "file:/w/analytics.db/first")]
    after = {v.version: (v.state, v.table_location) for v in current_states([*record, *plan.rows])}
    assert after == {1: ("live", "file:/w/analytics.db/first"),
                     2: ("rolled_back", "file:/w/analytics.db/first__cbt_v2")}, "each version says where its rows are"


DAY_MS = 86_400_000


def at(version: DeployedVersion, files: str) -> DeployedVersion:
    return replace(version, table_location=files)


def test_files_a_switch_left_behind_go_once_their_model_s_retention_has_passed(chain: ModelSet) -> None:
    first, second = files(chain, "analytics.first"), files(chain, "analytics.second")
    record = [
        at(version(first, 1, "retired", 0), "file:/w/first"),  # past 7 days
        at(version(first, 2, "rolled_back", 0), "file:/w/first__cbt_v2"),  # past, and rolled back from
        at(version(first, 3, "live", 0), "file:/w/first__cbt_v3"),
        at(version(second, 1, "retired", 6 * DAY_MS), "file:/w/second"),  # one day left
        version(second, 2, "retired", 0),  # switched by copying: no files of its own
        at(version(second, 3, "live", 6 * DAY_MS), "file:/w/second__cbt_v3"),
    ]
    assert [(v.model, v.version) for v in files_past_retention(record, {}, 7 * DAY_MS)] == [
        ("analytics.first", 1), ("analytics.first", 2)]
    assert files_past_retention(record, {"analytics.first": None}, 7 * DAY_MS) == [], "kept until deleted by hand"
    assert [v.version for v in files_past_retention(record, {"analytics.second": DAY_MS // 1000}, 7 * DAY_MS)] == [
        1, 2, 1], "a shorter retention"
    superseded = replace(version(second, 4, "building", 0), state="superseded")
    assert [(v.version, v.state) for v in files_past_retention([*record, superseded], {}, 7 * DAY_MS)][-1] == (
        4, "superseded"), "a build a newer version superseded goes too"
    rolled_back = [at(version(first, 1, "live", 0), "file:/w/first"),
                   at(version(first, 2, "rolled_back", 0), "file:/w/first")]
    assert files_past_retention(rolled_back, {}, 30 * DAY_MS) == [], "never the files the live version is in"


def test_the_models_to_run_come_from_the_files_and_the_record_together(chain: ModelSet) -> None:
    second, old = files(chain, "analytics.second"), live(chain, "analytics.second")
    record = current_states([version(old, 1, "live", 1_000), version(second, 2, "building", 2_000)])
    running = running_models(chain, record)
    assert running.get("analytics.second") == old and "analytics.second__cbt_v2" in running
    assert running_models(chain, []) is chain


def test_a_worker_whose_files_define_another_version_runs_the_live_one_kept_in_the_record(chain: ModelSet) -> None:
    """A rolling update, either way: the live version's kept definition, not the files' — but for an exec model,
    whose scripts are not kept (it hands such tasks back)."""
    first, old = files(chain, "analytics.first"), live(chain, "analytics.first")
    script = replace(files(chain, "analytics.third"), sql=None, exec="python3 x.py")
    record = [version(old, 1, "live", 1_000), version(script, 1, "live", 1_000),
              version(files(chain, "analytics.second"), 1, "live", 1_000)]
    pins = deployed_pins({"analytics.first": "data-2", "analytics.third": "data-2", "analytics.second": "data-1"},
                         record)
    assert {m: (p.live, p.version) for m, p in pins.items()} == {"analytics.first": (old, "data-1")}
    assert first != old
