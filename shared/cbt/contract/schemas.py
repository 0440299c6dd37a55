"""JSON Schemas of every message body on the topics, generated from the pydantic models. Pure.

``cbt schema`` writes them to ``docs/schemas/<kind>.schema.json``, where ``docs/asyncapi.yaml`` refers to them, so a
system in any language can validate what it publishes (or reads) without this package. The schemas declare draft
2020-12 and use only keywords that mean the same in draft-07 (the JSON Schema version AsyncAPI tools must support).
A few rules live in the models' validators only (a task's id follows from its model and range; an invalidation's
``end`` is greater than its ``start``): the AsyncAPI document's message descriptions say so.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from cbt.contract.messages import (
    BoundsUpdated,
    IntervalCompleted,
    Invalidation,
    InvalidationRejected,
    Message,
    MessageRejected,
    TaskFailed,
    TaskRequested,
)

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_ID_BASE = "https://cbt.invalid/schemas/"
"""Schema ids are names, not addresses (``.invalid`` never resolves): the files lie beside the AsyncAPI document."""

MESSAGES: tuple[type[Message], ...] = (
    TaskRequested, IntervalCompleted, TaskFailed, BoundsUpdated, Invalidation, InvalidationRejected, MessageRejected,
)
"""Every message body, in the order of their topics (``Topics.all``)."""


def kind_of(message: type[Message]) -> str:
    """The ``kind`` a message class carries (its ``kind`` field's only value)."""
    default = message.model_fields["kind"].default
    assert isinstance(default, str), f"{message.__name__} has no kind"
    return default


def schema_file(kind: str) -> str:
    """The file name of a message kind's schema, e.g. ``invalidation.schema.json``."""
    return f"{kind}.schema.json"


def message_schemas() -> dict[str, dict[str, Any]]:
    """The JSON Schema of every message body, by file name."""
    out: dict[str, dict[str, Any]] = {}
    for message in MESSAGES:
        name = schema_file(kind_of(message))
        out[name] = {"$schema": JSON_SCHEMA_DIALECT, "$id": f"{SCHEMA_ID_BASE}{name}",
                     **message.model_json_schema(mode="validation")}
    return out


def schema_text(schema: Mapping[str, Any]) -> str:
    """The committed form of a schema: sorted keys, two-space indent, a final newline."""
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"
