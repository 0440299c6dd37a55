"""Rules across models: unique ids, dependencies exist, interval types match, no cycles; OR groups; overrides."""

from __future__ import annotations

import pytest
from conftest import Project

from cbt.models.dag import ModelSet, UnknownModel, find_cycles, topological_order


def test_missing_dependency_names_it_with_a_hint(project_with_blocks: Project) -> None:
    project_with_blocks.incremental(dependencies=["ethereum.blokcs"])
    assert project_with_blocks.problems() == [
        "models/transformations/hourly.sql:12: dependencies[0]: model ethereum.blokcs does not exist "
        "(did you mean ethereum.blocks?)"
    ]


def test_missing_member_of_or_group(project_with_blocks: Project) -> None:
    project_with_blocks.incremental(dependencies=[["ethereum.blocks", "ethereum.gone"]])
    [problem] = project_with_blocks.problems()
    assert "dependencies[0][1]: model ethereum.gone does not exist" in problem


def test_duplicate_ids_name_both_files(project_with_blocks: Project) -> None:
    project_with_blocks.incremental("a", table="same")
    project_with_blocks.incremental("b", table="same")
    assert project_with_blocks.problems() == [
        "models/transformations/a.sql:3: table: model analytics.same is also defined at models/transformations/b.sql:3",
        "models/transformations/b.sql:3: table: model analytics.same is also defined at models/transformations/a.sql:3",
    ]


def test_duplicate_id_across_external_and_transformation(project_with_blocks: Project) -> None:
    project_with_blocks.incremental("dup", database="ethereum", table="blocks")
    problems = project_with_blocks.problems()
    assert len(problems) == 2 and all("model ethereum.blocks is also defined" in p for p in problems)


@pytest.mark.parametrize(
    ("edges", "expected"),
    [
        pytest.param({"a": ["b"], "b": ["a"]}, "analytics.a → analytics.b → analytics.a", id="two-cycle"),
        pytest.param(
            {"a": ["b"], "b": ["c"], "c": ["a"]},
            "analytics.a → analytics.b → analytics.c → analytics.a",
            id="three-cycle",
        ),
        pytest.param(
            {"a": ["b"], "b": [["c", "a"]], "c": []},
            "analytics.a → analytics.b → analytics.a",
            id="cycle-through-or-group",
        ),
    ],
)
def test_cycles_are_printed(project_with_blocks: Project, edges: dict[str, list[object]], expected: str) -> None:
    for name, deps in edges.items():
        resolved = [[f"analytics.{m}" for m in d] if isinstance(d, list) else f"analytics.{d}" for d in deps]
        project_with_blocks.incremental(name, dependencies=["ethereum.blocks", *resolved])
    problems = project_with_blocks.problems()
    assert len(problems) == 1, problems
    assert problems[0].startswith("models/transformations/a.sql:")
    assert problems[0].endswith(f"dependencies: dependency cycle: {expected}")


def test_self_dependency(project_with_blocks: Project) -> None:
    project_with_blocks.incremental(dependencies=["ethereum.blocks", "analytics.hourly"])
    assert project_with_blocks.problems() == [
        "models/transformations/hourly.sql:13: dependencies[1]: a model cannot depend on itself"
    ]


@pytest.mark.parametrize(
    ("dep_kind", "is_error"),
    [
        pytest.param("external", True, id="external-dep"),
        pytest.param("incremental", True, id="incremental-dep"),
        pytest.param("scheduled", False, id="scheduled-dep-has-no-interval"),
    ],
)
def test_interval_type_must_match(project_with_blocks: Project, dep_kind: str, is_error: bool) -> None:
    if dep_kind == "external":
        project_with_blocks.external("ts_source", interval={"type": "timestamp"})
        dep = "ethereum.ts_source"
    elif dep_kind == "incremental":
        project_with_blocks.incremental("ts_model", interval={"type": "timestamp"})
        dep = "analytics.ts_model"
    else:
        project_with_blocks.scheduled("ref")
        dep = "analytics.ref"
    project_with_blocks.incremental(dependencies=["ethereum.blocks", dep])
    problems = [p for p in project_with_blocks.problems() if "hourly.sql" in p]
    if is_error:
        assert problems == [
            f"models/transformations/hourly.sql:13: dependencies[1]: {dep} has interval.type 'timestamp' but this "
            "model has 'slot'; an incremental model's interval.type must equal its incremental and external "
            "dependencies'"
        ]
    else:
        assert problems == []


def test_dependents_of_a_broken_model_are_not_reported_again(project_with_blocks: Project) -> None:
    project_with_blocks.incremental("broken", interval={"max": 0})
    project_with_blocks.incremental("user", dependencies=["analytics.broken"])
    project_with_blocks.file("models/transformations/unparseable.sql", "---\ntable: gone\n  x: [\n---\nSELECT 1\n")
    project_with_blocks.incremental("user2", dependencies=["analytics.gone"])
    problems = project_with_blocks.problems()
    assert [p.split(":")[0] for p in problems] == [
        "models/transformations/broken.sql",
        "models/transformations/unparseable.sql",
    ]


def test_placeholders_resolve_to_default_databases(project_with_blocks: Project) -> None:
    project_with_blocks.file(
        "models/transformations/t.sql",
        "---\ntype: incremental\ntable: t\ninterval: {max: 10, type: slot}\nschedules: {forwardfill: '@hourly'}\n"
        "dependencies:\n  - {{external}}.blocks\n  - [{{ transformation }}.hourly]\n---\n"
        "SELECT * FROM {{ dep['{{external}}'].blocks.from }} JOIN {{ dep.analytics.hourly.from }}\n",
    )
    project_with_blocks.incremental()
    models = project_with_blocks.load()
    assert models.get("analytics.t").dependencies == ("ethereum.blocks", ("analytics.hourly",))  # type: ignore[union-attr]


def test_placeholder_without_default_database_is_an_error(project: Project) -> None:
    project.config_text("models: {}\n")
    project.file(
        "models/transformations/t.yml",
        "type: scheduled\ntable: t\ndatabase: a\nschedule: '@hourly'\n"
        "exec: run\ndependencies:\n  - {{external}}.blocks\n",
    )
    assert project.problems() == [
        "models/transformations/t.yml:7: dependencies: {{external}} is used but models.external.default_database "
        "is not set in the config"
    ]


def test_database_required_without_default(project: Project) -> None:
    project.config_text("models: {}\n")
    project.scheduled()
    assert project.problems() == [
        "models/transformations/rates.sql:2: database: required field is missing (models.transformations."
        "default_database is not set)"
    ]


def test_model_set_graph_queries(project_with_blocks: Project) -> None:
    project_with_blocks.incremental("a")
    project_with_blocks.incremental("b", dependencies=["analytics.a"])
    project_with_blocks.incremental("c", dependencies=[["analytics.a", "analytics.b"]])
    project_with_blocks.scheduled("s", dependencies=["analytics.c"])
    models: ModelSet = project_with_blocks.load()
    assert models.topological_order() == (
        "ethereum.blocks",
        "analytics.a",
        "analytics.b",
        "analytics.c",
        "analytics.s",
    )
    assert models.dependents("analytics.a") == ("analytics.b", "analytics.c")
    assert models.descendants("ethereum.blocks") == ("analytics.a", "analytics.b", "analytics.c", "analytics.s")
    assert models.ancestors("analytics.c") == ("ethereum.blocks", "analytics.a", "analytics.b")
    assert [models.levels_below(m) for m in models.topological_order()] == [4, 3, 2, 1, 0], "its longest chain below"
    assert [models.chain_length(m) for m in models.topological_order()[1:]] == [3, 3, 3, 3], "the external is no level"
    assert models.resolve("b") == "analytics.b"
    assert models.resolve("{{transformation}}.c") == "analytics.c"
    with pytest.raises(UnknownModel):
        models.resolve("nope")


def test_chain_length_ranks_every_level_of_a_chain_above_a_leaf_beside_it(project_with_blocks: Project) -> None:
    project_with_blocks.incremental("first")
    project_with_blocks.incremental("second", dependencies=["analytics.first"])
    project_with_blocks.incremental("last", dependencies=["analytics.second"])
    project_with_blocks.incremental("leaf")
    models = project_with_blocks.load()
    assert {m: models.chain_length(m) for m in models.topological_order()[1:]} == {
        "analytics.first": 2, "analytics.second": 2, "analytics.last": 2, "analytics.leaf": 0}


def test_graph_helpers() -> None:
    graph = {"a": ("b",), "b": ("c",), "c": ("a",), "d": ("d",), "e": ("zzz",)}
    assert find_cycles(graph) == [["a", "b", "c", "a"], ["d", "d"]]
    assert topological_order({"x": ("y",), "y": (), "z": ("x", "y")}) == ("y", "x", "z")


OVERRIDE_CASES = [
    pytest.param("analytics.hourly: {config: {interval: {max: 60}}}", "interval.max", 60, id="full-id"),
    pytest.param("hourly: {config: {interval: {max: 60}}}", "interval.max", 60, id="bare-table"),
    pytest.param(
        "hourly: {config: {interval: {max: 30}}}\n    analytics.hourly: {config: {interval: {max: 60}}}",
        "interval.max",
        60,
        id="full-id-wins",
    ),
    pytest.param("hourly: {config: {schedules: {backfill: ''}}}", "schedules.backfill", "", id="disable-backfill"),
    pytest.param("hourly: {config: {limits: {min: 5}}}", "limits.min", 5, id="limits"),
    pytest.param("hourly: {config: {tags: [extra]}}", "tags", ("base", "extra"), id="tags-appended"),
    pytest.param("ethereum.blocks: {config: {lag: 7}}", "lag", 7, id="external-lag"),
    pytest.param(
        "ethereum.blocks: {config: {cache: {full_scan_interval: 2h}}}",
        "cache.full_scan_interval_s",
        7200,
        id="external-cache",
    ),
]


@pytest.mark.parametrize(("override", "attribute", "expected"), OVERRIDE_CASES)
def test_overrides_change_fields(project_with_blocks: Project, override: str, attribute: str, expected: object) -> None:
    project_with_blocks.config_text(
        "models:\n  external: {default_database: ethereum}\n  transformations: {default_database: analytics}\n"
        f"  overrides:\n    {override}\n"
    )
    project_with_blocks.incremental(tags=["base"])
    models = project_with_blocks.load()
    model_id = "ethereum.blocks" if attribute in ("lag", "cache.full_scan_interval_s") else "analytics.hourly"
    value: object = models.get(model_id)
    for part in attribute.split("."):
        value = getattr(value, part)
    assert value == expected
    assert models.warnings == ()


def test_override_disables_model_and_reports_its_dependents(project_with_blocks: Project) -> None:
    project_with_blocks.config_text(
        "models:\n  external: {default_database: ethereum}\n  transformations: {default_database: analytics}\n"
        "  overrides:\n    analytics.a: {enabled: false}\n"
    )
    project_with_blocks.incremental("a")
    project_with_blocks.incremental("b", dependencies=["analytics.a"])
    assert project_with_blocks.problems() == [
        "models/transformations/b.sql:12: dependencies[0]: depends on analytics.a, which is disabled by the override "
        "at config.yaml:5"
    ]


def test_override_disabling_a_leaf_removes_it(project_with_blocks: Project) -> None:
    project_with_blocks.config_text(
        "models:\n  overrides:\n    analytics.hourly: {enabled: false}\n"
        "  external: {default_database: ethereum}\n"
        "  transformations: {default_database: analytics}\n"
    )
    project_with_blocks.incremental()
    assert "analytics.hourly" not in project_with_blocks.load()


def test_override_naming_no_model_is_a_warning(project_with_blocks: Project) -> None:
    project_with_blocks.config_text(
        "models:\n  external: {default_database: ethereum}\n  transformations: {default_database: analytics}\n"
        "  overrides:\n    analytics.ghost: {enabled: false}\n"
    )
    models = project_with_blocks.load()
    assert [str(w).replace(f"{project_with_blocks.root}/", "") for w in models.warnings] == [
        "config.yaml:5: models.overrides.analytics.ghost: override names no model; ignored"
    ]


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        pytest.param(
            "hourly: {config: {interval: {max: 0}}}",
            "config.yaml:5: models.overrides.hourly.config.interval.max: expected greater than 0, got 0",
            id="invalid-value-located-in-config",
        ),
        pytest.param(
            "hourly: {config: {interval: {min: 9000}}}",
            "config.yaml:5: models.overrides.hourly.config.interval.min: interval.min (9000) must be <= "
            "interval.max (3600)",
            id="cross-field-rule-after-override",
        ),
        pytest.param(
            "hourly: {config: {schedule: '@daily'}}",
            "config.yaml:5: models.overrides.hourly.config.schedule: does not apply to incremental models",
            id="field-of-another-kind",
        ),
        pytest.param(
            "hourly: {config: {schedules: {forwardfill: 'soon'}}}",
            "models.overrides.hourly.config.schedules.forwardfill: cron expression 'soon'",
            id="bad-cron",
        ),
        pytest.param(
            "hourly: {config: {intervals: {}}}",
            "config.yaml:5: models.overrides.hourly.config.intervals: unknown field (did you mean 'interval'?)",
            id="unknown-override-field",
        ),
    ],
)
def test_override_problems(project_with_blocks: Project, override: str, expected: str) -> None:
    project_with_blocks.config_text(
        "models:\n  external: {default_database: ethereum}\n  transformations: {default_database: analytics}\n"
        f"  overrides:\n    {override}\n"
    )
    project_with_blocks.incremental()
    try:
        problems = project_with_blocks.problems()
    except Exception as e:  # config-level problems are raised by the config loader
        problems = [str(p).replace(f"{project_with_blocks.root}/", "") for p in e.problems]  # type: ignore[attr-defined]
    assert len(problems) == 1, problems
    assert expected in problems[0]


def test_ids_differing_only_in_case_are_duplicates(project_with_blocks: Project) -> None:
    project_with_blocks.incremental("a", table="Hourly")
    project_with_blocks.incremental("b", table="hourly")
    project_with_blocks.incremental("c", dependencies=["analytics.HOURLY"])
    problems = project_with_blocks.problems()
    assert (
        "models/transformations/a.sql:3: table: model analytics.Hourly is also defined at "
        "models/transformations/b.sql:3" in problems
    )
    assert any("c.sql" in p and "(did you mean analytics.Hourly?)" in p for p in problems)
