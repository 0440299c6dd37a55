"""The JSON Schemas in docs/schemas: one per message kind, exactly what the pydantic models generate, and they accept
the bodies the services really publish (under draft 2020-12, which they declare, and draft-07, which AsyncAPI tools
read them as)."""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft7Validator, Draft202012Validator

from cbt.contract import messages
from cbt.contract.messages import (
    BoundsUpdated,
    IntervalCompleted,
    Invalidation,
    InvalidationRejected,
    Message,
    TaskFailed,
    TaskRequested,
    rejected,
)
from cbt.contract.schemas import MESSAGES, kind_of, message_schemas, schema_file, schema_text

SCHEMAS = Path(__file__).resolve().parents[3] / "docs" / "schemas"

SAMPLES: tuple[Message, ...] = (
    TaskRequested(task_id="an.minute:60:60", model="an.minute", position=60, interval=60, direction="rerun"),
    TaskRequested(task_id="an.report:@1700000400", model="an.report", scheduled_unix=1_700_000_400),
    IntervalCompleted(task_id="an.minute:60:60", model="an.minute", position=60, interval=60, worker="w-1"),
    TaskFailed(task_id="an.minute:60:60", model="an.minute", position=60, interval=60, attempts=3, error="boom"),
    BoundsUpdated(model="ext.blocks", min=0, max=1200, previous_max=600, scan="incremental"),
    Invalidation(id="reorg:1", model="beacon_blocks", start=10, end=20, reason="reorg", source="follower",
                 metadata={"fork_block": 9, "chain": "mainnet", "final": False, "score": 0.5, "note": None}),
    InvalidationRejected(raw="{", reason="not JSON", id=None),
    rejected("cbt.task-requested.default", "worker", b'{"kind": "bounds-updated"}', "kind: expected task-requested"),
)


def message_classes() -> set[type[Message]]:
    """Every message class ``cbt.contract.messages`` defines."""
    return {cls for _, cls in inspect.getmembers(messages, inspect.isclass)
            if issubclass(cls, Message) and cls is not Message}


def committed(kind: str) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((SCHEMAS / schema_file(kind)).read_text(encoding="utf-8"))
    return schema


def test_every_message_kind_has_a_schema() -> None:
    assert set(MESSAGES) == message_classes(), "add the new message to cbt.contract.schemas.MESSAGES"
    assert {type(sample) for sample in SAMPLES} == message_classes(), "add a sample of the new message here"


@pytest.mark.parametrize("name", sorted(message_schemas()))
def test_committed_schema_equals_the_generated_one(name: str) -> None:
    path = SCHEMAS / name
    assert path.is_file(), f"{path} missing: run `cbt schema`"
    assert path.read_text(encoding="utf-8") == schema_text(message_schemas()[name]), (
        f"{path} is out of date with cbt.contract.messages: run `cbt schema`")


def test_no_stale_schema_files() -> None:
    assert {p.name for p in SCHEMAS.glob("*.schema.json")} == set(message_schemas())


@pytest.mark.parametrize("message", MESSAGES, ids=kind_of)
def test_schema_is_valid_json_schema_in_both_dialects(message: type[Message]) -> None:
    schema = committed(kind_of(message))
    Draft202012Validator.check_schema(schema)
    Draft7Validator.check_schema(schema)


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda m: str(m.model_dump()["kind"]))
def test_published_bodies_validate_against_their_schema(sample: Message) -> None:
    body = json.loads(sample.encode())
    schema = committed(body["kind"])
    for validator in (Draft202012Validator(schema), Draft7Validator(schema)):
        assert list(validator.iter_errors(body)) == []


@pytest.mark.parametrize(("kind", "change"), [
    pytest.param("task-requested", {"kind": "interval-completed"}, id="other-kind"),
    pytest.param("task-requested", {"surprise": 1}, id="unknown-field"),
    pytest.param("invalidation", {"start": -1}, id="negative-start"),
    pytest.param("invalidation", {"metadata": {"nested": {"a": 1}}}, id="nested-metadata"),
    pytest.param("bounds-updated", {"scan": "partial"}, id="unknown-scan"),
])
def test_schemas_reject_what_the_models_reject(kind: str, change: dict[str, Any]) -> None:
    sample = next(s for s in SAMPLES if s.model_dump()["kind"] == kind)
    body = {**json.loads(sample.encode()), **change}
    assert list(Draft202012Validator(committed(kind)).iter_errors(body)), f"{change} accepted"
    with pytest.raises(ValueError):
        type(sample).model_validate_json(json.dumps(body))
