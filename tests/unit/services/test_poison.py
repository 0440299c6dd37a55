"""Poison messages (``cbt.service.poison``): a message whose handling keeps failing is set aside after the configured
attempts, with backoff between them, and its stream goes on; failures of the infrastructure are retried for as long
as they last and never set a message aside."""

from __future__ import annotations

import asyncio

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from cbt.adapters.delta_admin import AdminTableError
from cbt.base.errors import InfraError
from cbt.service.poison import PoisonGuard, is_transient


class Handler:
    def __init__(self, error: Exception | None) -> None:
        self.error, self.calls = error, 0

    async def __call__(self) -> None:
        self.calls += 1
        if self.error is not None:
            raise self.error


def deliver(guard: PoisonGuard, handler: Handler, times: int) -> list[tuple[bytes, str]]:
    """Deliver one message ``times`` times, as a consumer does after each raise; what was set aside."""
    aside: list[tuple[bytes, str]] = []

    async def set_aside(body: bytes, reason: str) -> None:
        aside.append((body, reason))

    async def scenario() -> None:
        for _ in range(times):
            try:
                await guard.handle(("t", 0, 7), b"body", handler, set_aside)
            except Exception:
                continue
            break

    asyncio.run(scenario())
    return aside


def test_a_message_that_keeps_failing_is_set_aside_at_its_last_attempt_with_the_reason() -> None:
    guard, handler = PoisonGuard("coordinator", max_attempts=3, backoff_initial_s=0), Handler(KeyError("x"))
    aside = deliver(guard, handler, times=10)
    assert handler.calls == 3 and len(aside) == 1
    body, reason = aside[0]
    assert body == b"body" and reason.startswith("coordinator: handling failed 3 times (the last: KeyError: 'x')")
    assert guard.failures == {} and guard.outages == {}, "nothing kept for a message set aside"


@pytest.mark.parametrize("error", [
    RedisConnectionError("Connection refused"), InfraError("kafka down"), TimeoutError(),
    AdminTableError("record invalidation failed"),
])
def test_infrastructure_failures_are_retried_and_never_set_a_message_aside(error: Exception) -> None:
    if isinstance(error, AdminTableError):
        error.__cause__ = ConnectionRefusedError("spark connect restarting")
    guard, handler = PoisonGuard("invalidator", max_attempts=2, backoff_initial_s=0), Handler(error)
    assert deliver(guard, handler, times=12) == [] and handler.calls == 12


def test_a_handled_message_leaves_nothing_behind() -> None:
    guard = PoisonGuard("worker", max_attempts=3, backoff_initial_s=0)
    assert deliver(guard, Handler(ValueError("once")), times=1) == []
    assert guard.failures == {("t", 0, 7): 1}
    assert deliver(guard, Handler(None), times=1) == [] and guard.failures == {}


def test_what_counts_as_the_infrastructures_failure() -> None:
    assert is_transient(RedisConnectionError()) and is_transient(OSError()) and is_transient(InfraError("x"))
    caused = AdminTableError("read failures failed")
    caused.__cause__ = RedisConnectionError()
    assert is_transient(caused)
    assert not is_transient(AdminTableError("no cause")) and not is_transient(ValueError("bad"))
