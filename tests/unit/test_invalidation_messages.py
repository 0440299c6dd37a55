"""Invalidation event bodies: what is accepted, and every kind of bad input rejected with a reason."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from cbt.contract.messages import InvalidationRejected, decode_invalidation

GOOD: dict[str, object] = {"kind": "invalidation", "schema_version": 1, "id": "reorg:994", "model": "eth.blocks",
                           "start": 995, "end": 1006, "reason": "reorg", "source": "block-follower"}


def body(**changes: object) -> bytes:
    fields = {**GOOD, **changes}
    return json.dumps({k: v for k, v in fields.items() if v is not ...}).encode()


def test_a_good_event_decodes_with_defaults() -> None:
    event = decode_invalidation(body(metadata={"fork_block": 994, "old_tip": "0xabc", "depth": 1.5, "x": None}))
    assert (event.model, event.start, event.end, event.cascade) == ("eth.blocks", 995, 1006, True)
    assert event.metadata["fork_block"] == 994
    assert event.created_at_ms > 0


def test_encode_decode_round_trip() -> None:
    event = decode_invalidation(body(cascade=False))
    assert decode_invalidation(event.encode()) == event


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        pytest.param(b"{not json", "Invalid JSON", id="invalid-json"),
        pytest.param(b"\xff\xfe", "Invalid JSON", id="not-utf8"),
        pytest.param(b"[1, 2]", "should be an object", id="not-an-object"),
        pytest.param(body(start="995"), "start", id="start-as-string"),
        pytest.param(body(end=1006.5), "end", id="end-as-float"),
        pytest.param(body(cascade="yes"), "cascade", id="cascade-as-string"),
        pytest.param(body(end=995), "end must be greater than start", id="end-equals-start"),
        pytest.param(body(end=10), "end must be greater than start", id="end-before-start"),
        pytest.param(body(start=-1), "start", id="negative-start"),
        pytest.param(body(end=2**53 + 1), "end", id="beyond-exact-positions"),
        pytest.param(body(id=""), "id", id="empty-id"),
        pytest.param(body(id="x" * 201), "id", id="id-too-long"),
        pytest.param(body(reason=""), "reason", id="empty-reason"),
        pytest.param(body(model=...), "model", id="missing-model"),
        pytest.param(body(source=...), "source", id="missing-source"),
        pytest.param(body(metadata={"nested": {"a": 1}}), "metadata", id="nested-metadata"),
        pytest.param(body(metadata=[1]), "metadata", id="metadata-not-an-object"),
        pytest.param(body(kind="task-requested"), "kind", id="wrong-kind"),
        pytest.param(body(schema_version=2), "schema_version", id="future-schema-version"),
        pytest.param(body(blocks=[995, 1005]), "blocks", id="unknown-field"),
    ],
)
def test_bad_bodies_are_rejected_naming_the_problem(raw: bytes, problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        decode_invalidation(raw)


def test_rejection_keeps_the_body_and_reason() -> None:
    rejected = InvalidationRejected(raw="{not json", reason="Invalid JSON", id=None)
    assert InvalidationRejected.model_validate_json(rejected.encode()) == rejected


def test_rejection_body_longer_than_64_kib_is_refused_so_callers_truncate() -> None:
    with pytest.raises(ValidationError):
        InvalidationRejected(raw="x" * (64 * 1024 + 1), reason="too big")
