"""`/readyz` names each dependency's verdict; one gone (an error, no answer in time) makes the process not ready."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request

import pytest

from cbt.adapters import health
from cbt.adapters.health import HealthServer


async def answers() -> None:
    return None


async def refuses() -> None:
    raise ConnectionRefusedError("[Errno 111] Connection refused")


async def hangs() -> None:
    await asyncio.sleep(3600)


def get(port: int, path: str) -> tuple[int, dict[str, object]]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def ask(checks: dict[str, health.Check], path: str = "/readyz",
        probes: dict[str, health.Probe] | None = None) -> tuple[int, dict[str, object]]:
    async def scenario() -> tuple[int, dict[str, object]]:
        server = HealthServer("127.0.0.1:0", checks, probes)
        await server.start()
        try:
            return await asyncio.to_thread(get, server.port, path)
        finally:
            await server.stop()

    return asyncio.run(scenario())


def test_ready_when_every_dependency_answers() -> None:
    assert ask({"redis": answers, "kafka": answers}) == (200, {"status": "ready",
                                                               "checks": {"redis": "ok", "kafka": "ok"}})


async def notes_admission() -> str:
    return "limit 2, 2 executing, 5 waiting"


def test_a_check_s_note_is_shown_beside_its_verdict() -> None:
    assert ask({"redis": answers, "spark_admission": notes_admission}) == (200, {
        "status": "ready", "checks": {"redis": "ok", "spark_admission": "ok"},
        "notes": {"spark_admission": "limit 2, 2 executing, 5 waiting"}})


def test_a_dependency_that_refuses_makes_it_not_ready_and_is_named() -> None:
    status, body = ask({"redis": answers, "spark": refuses})
    assert status == 503
    assert body == {"status": "not ready",
                    "checks": {"redis": "ok", "spark": "ConnectionRefusedError: [Errno 111] Connection refused"}}


def test_a_dependency_that_does_not_answer_in_time_is_not_ready_without_holding_the_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(health, "CHECK_TIMEOUT_S", 0.2)
    status, body = ask({"kafka": hangs, "redis": answers})
    assert status == 503 and body["checks"] == {"kafka": "no answer within 0.2 s", "redis": "ok"}


def test_healthz_answers_whatever_the_dependencies_say() -> None:
    assert ask({"kafka": refuses}, "/healthz", {"tick": lambda: None}) == (200, {"status": "ok",
                                                                              "loops": {"tick": "ok"}})


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_loop_that_stops_beating_makes_healthz_fail_and_is_named() -> None:
    clock = Clock()
    tick, scan = health.Heartbeat(60, clock), health.Heartbeat(60, clock)
    clock.now += 50
    scan.beat()
    assert ask({}, "/healthz", {"tick": tick, "scan": scan})[0] == 200
    clock.now += 20
    status, body = ask({}, "/healthz", {"tick": tick, "scan": scan})
    assert status == 503
    assert body == {"status": "not alive", "loops": {"tick": "no beat for 70 s (allowed 60 s)", "scan": "ok"}}


def test_a_probe_that_raises_reports_it_instead_of_breaking_healthz() -> None:
    def broken() -> str | None:
        raise RuntimeError("consumer gone")

    status, body = ask({}, "/healthz", {"consume": broken})
    assert status == 503 and body["loops"] == {"consume": "probe failed: RuntimeError: consumer gone"}


def test_a_consume_loop_replaced_after_an_error_is_alive_and_an_ended_one_is_not() -> None:
    from types import SimpleNamespace

    from cbt.adapters.kafka_consumers import consume_loops_alive

    async def scenario() -> list[str | None]:
        crashed = asyncio.ensure_future(asyncio.sleep(0))
        await crashed
        running = asyncio.ensure_future(asyncio.sleep(3600))
        restarted = SimpleNamespace(topics=["cbt.task-requested.default"], tasks=[crashed, running])
        ended = SimpleNamespace(topics=["cbt.invalidation"], tasks=[crashed])
        verdicts = [consume_loops_alive([restarted])(), consume_loops_alive([restarted, ended])()]
        running.cancel()
        return verdicts

    assert asyncio.run(scenario()) == [None, "consume loop ended: cbt.invalidation"]
