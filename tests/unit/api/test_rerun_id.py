"""A rerun's invalidation id: new for every request without an ``Idempotency-Key``; with one, the same for the same
caller, key and request — a retried POST publishes an event the invalidator applies once — and different when any of
them differs (a key reused for another request is not silently dropped as a duplicate)."""

from __future__ import annotations

from cbt.api.routes.actions import rerun_id
from cbt.api.schemas import RerunRequest

BODY = RerunRequest(start=0, end=60)


def test_without_a_key_every_request_gets_its_own_id() -> None:
    assert rerun_id("token:a", "an.minute", BODY, None) != rerun_id("token:a", "an.minute", BODY, None)


def test_with_a_key_a_retry_gets_the_same_id_and_anything_else_another() -> None:
    first = rerun_id("token:a", "an.minute", BODY, "k1")
    assert first.startswith("api-") and first == rerun_id("token:a", "an.minute", BODY, "k1")
    others = {rerun_id("token:b", "an.minute", BODY, "k1"), rerun_id("token:a", "an.other", BODY, "k1"),
              rerun_id("token:a", "an.minute", RerunRequest(start=0, end=120), "k1"),
              rerun_id("token:a", "an.minute", BODY, "k2")}
    assert first not in others and len(others) == 4
