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
