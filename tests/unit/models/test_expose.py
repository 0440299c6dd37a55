"""The ``expose`` field (docs/read-api.md): which models the read API serves, their key and position column."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import Project

from cbt.models.spec import Expose


@pytest.mark.parametrize(("fields", "expected"), [
    pytest.param({}, None, id="absent-not-served"),
    pytest.param({"expose": False}, None, id="false-not-served"),
    pytest.param({"expose": True}, Expose(("id",)), id="true-key-from-unique-key"),
    pytest.param({"expose": {"key": "slot", "position": "ts"}}, Expose(("slot",), "ts"), id="one-column-key"),
    pytest.param({"expose": {"key": ["a", "b"]}}, Expose(("a", "b")), id="declared-key-wins"),
    pytest.param({"expose": {"key": []}}, Expose(()), id="no-key"),
])
def test_an_incremental_model_exposes_its_table(project_with_blocks: Project, fields: dict[str, Any],
                                                expected: Expose | None) -> None:
    project_with_blocks.incremental(write={"strategy": "append", "unique_key": "id"}, **fields)
    assert project_with_blocks.load().get("analytics.hourly").expose == expected  # type: ignore[union-attr]


def test_a_scheduled_model_may_be_exposed(project: Project) -> None:
    project.scheduled(expose={"key": "day"})
    assert project.load().get("analytics.rates").expose == Expose(("day",))  # type: ignore[union-attr]


@pytest.mark.parametrize(("value", "reason"), [
    pytest.param({"keys": ["a"]}, "expose.keys: unknown field", id="unknown-field"),
    pytest.param("yes", "expose:", id="not-a-mapping"),
    pytest.param({"position": ""}, "expose.position", id="empty-position"),
])
def test_a_bad_expose_is_a_located_problem(project_with_blocks: Project, value: Any, reason: str) -> None:
    project_with_blocks.incremental(expose=value)
    problems = project_with_blocks.problems()
    assert any(reason in p and p.startswith("models/transformations/hourly.sql:") for p in problems), problems
