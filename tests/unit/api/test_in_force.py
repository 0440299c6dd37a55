"""The api's models in force (``cbt.api.in_force``): the overrides applied, re-read at most once per tick, and the
last ones kept when Redis does not answer."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from redis.exceptions import ConnectionError as RedisConnectionError

from cbt.api.context import ApiContext
from cbt.api.events import EventHub
from cbt.api.in_force import InForce
from cbt.api.offline import Offline
from cbt.config.settings import Config
from cbt.models.dag import ModelSet
from cbt.models.spec import IncrementalModel
from cbt.planning.override_sync import LiveOverrides
from tests.unit.scheduling.factories import inc, models_of, sched

HOURLY, REPORT = "an.hourly", "an.report"
MODELS = ModelSet(models_of(inc(HOURLY), sched(REPORT)))


@dataclass
class Store:
    """An ``OverrideStore`` in memory that counts its version reads and can be made to fail."""

    stored: dict[str, dict[str, Any]] = field(default_factory=dict)
    counter_value: int = 1
    reads: int = 0
    is_down: bool = False

    def version(self) -> int | None:
        self.reads += 1
        if self.is_down:
            raise RedisConnectionError("down")
        return self.counter_value

    def overrides(self) -> dict[str, dict[str, Any]]:
        return {m: dict(f) for m, f in self.stored.items()}

    def put(self, model_id: str, fields: Mapping[str, Any]) -> int:
        self.stored[model_id] = dict(fields)
        self.counter_value += 1
        return self.counter_value

    def clear(self, model_id: str) -> int:
        self.stored.pop(model_id, None)
        self.counter_value += 1
        return self.counter_value

    def counter(self) -> int:
        return self.counter_value

    def restore(self, overrides: Mapping[str, Mapping[str, Any]], counter: int) -> int | None:
        return self.counter_value


@dataclass
class Clock:
    now_s: float = 100.0

    def __call__(self) -> float:
        return self.now_s


def in_force(store: Store, clock: Clock) -> InForce:
    ctx = ApiContext(config=Config(), models=MODELS, hot=Offline(), refresh=Offline(), admin=Offline(),
                     commands=Offline(), events=EventHub(), overrides=LiveOverrides(store, Offline))
    return InForce(ctx, tick_s=1.0, clock=clock)


def test_overrides_apply_and_are_read_at_most_once_per_tick() -> None:
    store, clock = Store(), Clock()
    view = in_force(store, clock)
    assert view.current().models is MODELS
    reads = store.reads

    store.put(HOURLY, {"schedules": {"forwardfill": "@every 7s"}})
    store.put(REPORT, {"enabled": False})
    clock.now_s += 0.5
    assert view.current().models is MODELS and store.reads == reads, "within the tick: no read, the last models"

    clock.now_s += 0.6
    ctx = view.current()
    hourly = ctx.models.models[HOURLY]
    assert isinstance(hourly, IncrementalModel) and hourly.schedules.forwardfill == "@every 7s"
    assert ctx.paused == {REPORT} and dict(ctx.overridden) == {
        HOURLY: {"schedules": {"forwardfill": "@every 7s"}}, REPORT: {"enabled": False}}
    assert ctx.config_models is MODELS, "what overrides are checked against stays the config's"

    store.clear(HOURLY)
    store.clear(REPORT)
    clock.now_s += 1.0
    cleared = view.current()
    assert cleared.models.models[HOURLY] == MODELS.models[HOURLY] and cleared.paused == frozenset()


def test_redis_down_keeps_the_last_models_in_force() -> None:
    store, clock = Store(), Clock()
    view = in_force(store, clock)
    store.put(REPORT, {"enabled": False})
    assert view.current().paused == {REPORT}

    store.is_down = True
    clock.now_s += 2
    reads = store.reads
    assert view.current().paused == {REPORT} and view.current().paused == {REPORT}
    assert store.reads == reads + 1, "a request within the tick does not wait on Redis again"
    store.is_down = False
    clock.now_s += 1.0
    assert view.current().paused == {REPORT} and store.reads == reads + 2, "retried a tick later"


def test_without_overrides_the_loaded_context_is_used() -> None:
    ctx = ApiContext(config=Config(), models=MODELS, hot=Offline(), refresh=Offline(), admin=Offline(),
                     commands=Offline(), events=EventHub())
    assert InForce(ctx, tick_s=1.0).current() is ctx
