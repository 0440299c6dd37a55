"""A service's start-up as /readyz shows it (cbt.service.startup): the step it is in until ready, and each milestone
once, in seconds since the process started."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request

import pytest

from cbt.adapters.health import HealthServer
from cbt.service.startup import Startup, process_started_at


def test_milestones_are_seconds_since_the_process_started_and_kept_from_their_first_time() -> None:
    now = [1000.0]
    startup = Startup(started_at=998.5, clock=lambda: now[0])
    startup.reached("topics created")
    now[0] = 1003.25
    startup.reached("topics created")
    startup.reached("wired")
    startup.ready()
    assert startup.report() == {"step": "running", "seconds_since_process_start": {
        "topics created": 1.5, "wired": 4.75, "ready": 4.75}}


def test_the_check_fails_with_the_current_step_until_ready() -> None:
    startup = Startup(started_at=0.0)
    startup.doing("joining the broker")
    with pytest.raises(LookupError, match="starting: joining the broker"):
        asyncio.run(startup.check())
    startup.ready()
    assert asyncio.run(startup.check()) is None


def test_the_process_start_is_read_from_the_kernel() -> None:
    assert time.time() - 3600 < process_started_at() <= time.time()


def test_readyz_says_the_step_and_the_milestones_while_starting() -> None:
    startup = Startup()
    startup.doing("creating topics")

    async def scenario() -> tuple[int, dict[str, object]]:
        server = HealthServer("127.0.0.1:0", {"startup": startup.check}, startup=startup.report)
        await server.start()
        try:
            def get() -> tuple[int, dict[str, object]]:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/readyz", timeout=5) as answer:
                        return answer.status, json.loads(answer.read())
                except urllib.error.HTTPError as e:
                    return e.code, json.loads(e.read())
            return await asyncio.to_thread(get)
        finally:
            await server.stop()

    status, body = asyncio.run(scenario())
    assert status == 503
    assert body["checks"] == {"startup": "LookupError: starting: creating topics"}
    assert body["startup"] == {"step": "creating topics", "seconds_since_process_start": {}}
