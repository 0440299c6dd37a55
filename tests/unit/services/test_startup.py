"""A service whose dependency is not there yet at start-up waits for it, instead of exiting into a crash loop."""

from __future__ import annotations

import asyncio
import logging

import pytest

from cbt.adapters import runtime

log = logging.getLogger("test")


@pytest.fixture(autouse=True)
def quick_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime, "STARTUP_BACKOFF_S", (0.01, 0.02))


def test_a_failing_start_up_step_is_retried_until_it_works() -> None:
    calls: list[int] = []

    def create_topics() -> None:
        calls.append(1)
        if len(calls) < 4:
            raise ConnectionError("broker not reachable")

    assert asyncio.run(runtime.until_it_works(create_topics, "create topics", asyncio.Event(), log)) is True
    assert len(calls) == 4


def test_a_stop_ends_the_wait() -> None:
    async def scenario() -> bool:
        stop = asyncio.Event()
        asyncio.get_running_loop().call_later(0.05, stop.set)
        return await runtime.until_it_works(lambda: 1 / 0, "create tables", stop, log)

    assert asyncio.run(scenario()) is False


def test_a_periodic_step_still_running_at_stop_is_abandoned_after_a_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 24: a coordinator tick reading the admin tables on a busy Spark held its stop for minutes."""
    monkeypatch.setattr(runtime, "STEP_STOP_GRACE_S", 0.05)
    ended: list[str] = []

    async def long_step() -> None:
        try:
            await asyncio.sleep(60)
        finally:
            ended.append("cancelled")

    async def scenario() -> float:
        stop = asyncio.Event()
        asyncio.get_running_loop().call_later(0.05, stop.set)
        began = asyncio.get_running_loop().time()
        await asyncio.wait_for(runtime.every(0.01, stop, long_step, log), 5)
        return asyncio.get_running_loop().time() - began

    assert asyncio.run(scenario()) < 1
    assert ended == ["cancelled"]


def test_a_step_that_ends_within_the_grace_is_not_cancelled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime, "STEP_STOP_GRACE_S", 1.0)
    ended: list[str] = []

    async def short_step() -> None:
        await asyncio.sleep(0.2)
        ended.append("finished")

    async def scenario() -> None:
        stop = asyncio.Event()
        asyncio.get_running_loop().call_later(0.05, stop.set)
        await runtime.every(0.01, stop, short_step, log)

    asyncio.run(scenario())
    assert ended == ["finished"]
