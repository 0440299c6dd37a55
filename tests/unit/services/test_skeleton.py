"""The service skeleton: clients close in order (leases first, Spark last, only what was opened), and the idle watch
stops a service once its groups have no lag and it reports no work, for the whole quiet period."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from cbt.config.settings import Config
from cbt.service import idle
from cbt.service.skeleton import Clients
from tests.twins.memory_state import MemoryState


class Recorded:
    """Stands in for a client: closing it (by any of the names clients have for it) is written in ``order``."""

    def __init__(self, name: str, order: list[str]) -> None:
        self.name, self.order = name, order

    def close(self) -> None:
        self.order.append(self.name)

    def stop(self) -> None:
        self.order.append(self.name)


@pytest.fixture
def clients() -> Clients:
    clients = Clients("worker", Config())
    clients.state = MemoryState()  # type: ignore[assignment]
    return clients


def test_clients_close_the_leases_first_then_the_services_own_then_admission_sessions_and_spark(
        clients: Clients) -> None:
    order: list[str] = []
    leadership = clients.lease("leader", ttl_s=30)
    assert leadership.hold() == "taken"
    clients.on_close(lambda: order.append(f"lease held: {clients.state.leases.acquire('leader', 'other', 1) is None}"))

    async def flush_recorder() -> None:
        order.append("recorder")

    clients.on_close(flush_recorder)
    opened: dict[str, Any] = vars(clients)
    for name in ("spark", "sessions", "admission"):
        opened[name] = Recorded(name, order)
    asyncio.run(clients.close())
    assert order == ["lease held: False", "recorder", "admission", "sessions", "spark"]


def test_clients_close_only_what_was_opened(clients: Clients) -> None:
    order: list[str] = []
    vars(clients)["sessions"] = Recorded("sessions", order)
    vars(clients)["admission"] = None  # admission control off
    asyncio.run(clients.close())
    assert order == ["sessions"], "no Spark session was opened, so none is stopped"


class Lag:
    """Consumer lag read from a list, one value per read (the last one repeats)."""

    def __init__(self, values: list[int]) -> None:
        self.values = values
        self.closed = False

    def behind(self, group: str, topic: str) -> int:
        return self.values.pop(0) if len(self.values) > 1 else self.values[0]

    def close(self) -> None:
        self.closed = True


class Subscriber:
    group_id = "cbt.worker-default"
    topics = ("cbt.task-requested.default",)


def watch(monkeypatch: pytest.MonkeyPatch, lag: Lag, is_busy: Any, idle_s: float, timeout_s: float) -> bool:
    monkeypatch.setattr(idle, "POLL_S", 0.01)
    monkeypatch.setattr(idle, "GroupLag", lambda *_: lag)

    async def scenario() -> bool:
        stop = asyncio.Event()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(idle.stop_when_idle(Config(), [Subscriber()], is_busy, idle_s, stop), timeout_s)
        return stop.is_set()

    return asyncio.run(scenario())


def test_a_drained_service_is_stopped_after_the_quiet_period(monkeypatch: pytest.MonkeyPatch) -> None:
    lag = Lag([3, 1, 0])
    assert watch(monkeypatch, lag, lambda: False, idle_s=0.05, timeout_s=2)
    assert lag.closed


def test_lag_keeps_a_service_running(monkeypatch: pytest.MonkeyPatch) -> None:
    assert not watch(monkeypatch, Lag([1]), lambda: False, idle_s=0.05, timeout_s=0.3)


def test_work_in_flight_keeps_a_service_running(monkeypatch: pytest.MonkeyPatch) -> None:
    assert not watch(monkeypatch, Lag([0]), lambda: True, idle_s=0.05, timeout_s=0.3)


def test_the_groups_and_topics_watched_are_the_subscribers() -> None:
    assert idle.consumed([Subscriber(), Subscriber()]) == [("cbt.worker-default", "cbt.task-requested.default")]
