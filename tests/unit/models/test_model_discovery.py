"""Finding model files (nesting, extensions, symlinks) and reading them (frontmatter, malformed YAML)."""

from __future__ import annotations

import os

import pytest
from conftest import Project, make_incremental

from tests.unit.hostile_yaml import LAUGHS


def test_any_nesting_and_case_insensitive_extensions(project_with_blocks: Project) -> None:
    project_with_blocks.sql_model("models/transformations/deep/er/a.SQL", make_incremental("a"))
    project_with_blocks.sql_model("models/transformations/b.Sql", make_incremental("b"))
    project_with_blocks.file(
        "models/transformations/c.YAML", "type: scheduled\ntable: c\nschedule: '@daily'\nexec: ./run.sh\n"
    )
    project_with_blocks.file("models/transformations/README.md", "not a model")
    project_with_blocks.file("models/transformations/.hidden/x.sql", "garbage")
    models = project_with_blocks.load()
    assert sorted(m.id for m in models) == ["analytics.a", "analytics.b", "analytics.c", "ethereum.blocks"]


def test_model_id_comes_from_fields_not_path(project_with_blocks: Project) -> None:
    project_with_blocks.sql_model("models/transformations/whatever.sql", make_incremental("x", database="other"))
    assert "other.x" in project_with_blocks.load()


def test_paths_may_be_files_and_relative_to_config(project: Project) -> None:
    project.config_text(
        "models:\n  external: {paths: [src/blocks.sql], default_database: ethereum}\n"
        "  transformations: {paths: [more, models/transformations], default_database: analytics}\n"
    )
    project.file("src/blocks.sql", "---\ntable: blocks\ninterval: {type: slot}\n---\nSELECT 1 AS min, 2 AS max\n")
    project.sql_model("more/x.sql", make_incremental("x"))
    assert sorted(m.id for m in project.load()) == ["analytics.x", "ethereum.blocks"]


def test_configured_path_that_does_not_exist(project: Project) -> None:
    project.config_text("models:\n  external:\n    paths:\n      - nowhere\n")
    [problem] = project.problems()
    assert problem.startswith("config.yaml:4: models.external.paths: ") and problem.endswith("does not exist")


def test_symlink_inside_roots_is_followed(project_with_blocks: Project) -> None:
    target = project_with_blocks.sql_model("models/transformations/real/a.sql", make_incremental("a"))
    os.symlink(target.parent, project_with_blocks.root / "models/transformations/link")
    assert "analytics.a" in project_with_blocks.load()  # reached twice, loaded once


@pytest.mark.parametrize("link_kind", [pytest.param("file", id="file-link"), pytest.param("dir", id="dir-link")])
def test_symlink_escaping_roots_is_an_error(project_with_blocks: Project, link_kind: str) -> None:
    outside = project_with_blocks.sql_model("elsewhere/a.sql", make_incremental("a"))
    source = outside if link_kind == "file" else outside.parent
    os.symlink(
        source, project_with_blocks.root / ("models/transformations/escape" + (".sql" if link_kind == "file" else ""))
    )
    [problem] = project_with_blocks.problems()
    assert problem.startswith("models/transformations/escape")
    assert "symlink leads outside the configured model roots" in problem


READ_CASES = [
    pytest.param("SELECT 1\n", "x.sql:1: frontmatter: expected YAML frontmatter", id="no-frontmatter"),
    pytest.param("---\ntable: x\nSELECT 1\n", "x.sql:1: frontmatter: frontmatter is not closed", id="unclosed"),
    pytest.param("", "x.sql:1: file: file is empty", id="empty-file"),
    pytest.param("---\ntype: scheduled\ntable: [x\n---\nSELECT 1\n", "x.sql:4: yaml: invalid YAML", id="bad-flow"),
    pytest.param("---\ntype: scheduled\n\ttable: x\n---\nSELECT 1\n", "x.sql:3: yaml: invalid YAML", id="tab-indent"),
    pytest.param(
        "---\ntype: scheduled\ntable: x\ntable: y\n---\nSELECT 1\n",
        "x.sql:4: table: duplicate key (first set on line 3)",
        id="duplicate-key",
    ),
    pytest.param(
        "---\n- a\n- b\n---\nSELECT 1\n",
        "x.sql:2: (root): expected a mapping of model fields, got list",
        id="not-a-mapping",
    ),
    pytest.param(
        "---\n---\nSELECT 1\n",
        "x.sql:2: (root): expected a mapping of model fields, got nothing",
        id="empty-frontmatter",
    ),
    pytest.param("---\n1: x\n---\nSELECT 1\n", "x.sql:2: yaml: keys must be strings, got '1'", id="int-key"),
    pytest.param(f"---\ntype: scheduled\n{LAUGHS}---\nSELECT 1\n", "x.sql:2: yaml: invalid YAML: its aliases expand "
                 "to more than 100,000 values", id="billion-laughs", marks=pytest.mark.timeout(10)),
    pytest.param(
        "\n\n---\ntype: scheduled\ntable: x\nschedule: bad\n---\nSELECT 1\n",
        "x.sql:6: schedule: cron expression 'bad' has 1 fields",
        id="lines-after-blank-lead",
    ),
]


@pytest.mark.parametrize(("text", "expected"), READ_CASES)
def test_reading_problems(project: Project, text: str, expected: str) -> None:
    project.file("models/transformations/x.sql", text)
    problems = project.problems()
    assert len(problems) == 1, problems
    assert problems[0].startswith("models/transformations/" + expected)


def test_invalid_utf8_is_a_problem(project: Project) -> None:
    (project.root / "models/transformations/x.sql").write_bytes(b"---\ntable: \xff\n---\n")
    [problem] = project.problems()
    assert "models/transformations/x.sql:0: file: cannot read" in problem


def test_problems_across_files_are_all_reported(project: Project) -> None:
    for name in ("a", "b", "c"):
        project.file(f"models/transformations/{name}.sql", "SELECT 1\n")
    assert len(project.problems()) == 3
