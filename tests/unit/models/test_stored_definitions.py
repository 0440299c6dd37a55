"""A deployed version keeps its model's whole definition, so it can run after its files changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cbt.models.loader import load_project
from cbt.models.stored import UnreadableDefinition, definition_document, model_from_document

REPO_ROOT = Path(__file__).resolve().parents[3]


def test_every_example_transformation_comes_back_equal_from_its_json_document() -> None:
    _, models = load_project(str(REPO_ROOT / "config.yaml"))
    transformations = [*models.incrementals, *models.scheduled]
    assert len(transformations) >= 5
    for model in transformations:
        document = json.loads(json.dumps(definition_document(model)))  # (as the admin table stores it)
        assert model_from_document(document) == model, model.id


@pytest.mark.parametrize("document", [
    pytest.param({"kind": "view", "model": {}}, id="unknown-kind"),
    pytest.param({"kind": "incremental", "model": {"database": "a"}}, id="fields-missing"),
    pytest.param({}, id="empty"),
])
def test_a_document_this_code_cannot_read_is_refused_with_the_reason(document: dict[str, object]) -> None:
    with pytest.raises(UnreadableDefinition, match="stored definition"):
        model_from_document(document)
