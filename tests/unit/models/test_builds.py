"""A build: the files' definition of a changed model, writing beside the live one and reading its parents' builds."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cbt.models.builds import Build, build_id, built_model, is_buildable, with_builds
from cbt.models.dag import ModelSet
from cbt.models.render import render_statements
from cbt.models.spec import IncrementalModel
from cbt.models.templates import RenderSettings, TaskContext
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
    model = models.get(model_id)
    assert isinstance(model, IncrementalModel)
    return replace(model, sql="SELECT 'the live definition' AS v")


def rendered(model: object) -> str:
    assert isinstance(model, IncrementalModel)
    task = TaskContext(model_id=model.id, task_start_unix=0, start=0, end=model.interval.max)
    return " ".join(render_statements(model, task, SETTINGS))


def test_the_name_keeps_its_live_definition_and_the_build_reads_the_builds_of_its_rebuilt_parents(
        chain: ModelSet) -> None:
    builds = {m: Build(m, 2, live(chain, m)) for m in ("analytics.second", "analytics.third")}
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
    builds = {m: Build(m, 3, live(chain, m)) for m in ("analytics.first", "analytics.second")}
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
    model = chain.get("analytics.first")
    assert isinstance(model, IncrementalModel)
    assert is_buildable(model)
    assert not is_buildable(replace(model, sql=None, exec="python run.py"))
