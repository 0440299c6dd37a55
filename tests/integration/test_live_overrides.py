"""Live config overrides on real Redis and Delta (issue 26): set through the API, applied by a coordinator at its next
tick without a restart, and still there after the test's Redis keys are flushed (restored from the admin table)."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from pyspark.sql import SparkSession
from redis import Redis

from cbt.adapters.admin_tables.overrides import overrides_table
from cbt.adapters.delta_admin import admin_from_config, tables_from_config
from cbt.adapters.redis_marks import RedisMarks
from cbt.adapters.redis_state import RedisState
from cbt.adapters.redis_stores.overrides import RedisOverrides
from cbt.api.context import ApiContext
from cbt.api.events import EventHub
from cbt.api.offline import Offline
from cbt.api.records import ApiRecords
from cbt.api.web import create_app
from cbt.config.settings import admin_database_overrides, load_config
from cbt.contract.messages import Message
from cbt.contract.topics import Topics
from cbt.coordinator.app import Coordinator
from cbt.models.dag import ModelSet
from cbt.models.spec import IncrementalModel
from cbt.planning.live import LiveStateReader
from cbt.planning.override_sync import LiveOverrides, ModelView, follow
from cbt.planning.planner import Planner
from tests.e2e.harness import CONFIG
from tests.unit.api.asgi import request
from tests.unit.scheduling.factories import ext, inc, models_of, sched

pytestmark = pytest.mark.integration
HOURLY, REPORT = "an.hourly", "an.report"
MODELS = ModelSet(
    models_of(ext("src.blocks"), inc(HOURLY, forward="@every 1m", backfill="@every 5m"), sched(REPORT, "@hourly"))
)
TOKEN = "override-test-token-0123456789abcdef0123"


@dataclass
class Publisher:
    sent: list[Message] = field(default_factory=list)

    async def publish(self, topic: str, message: Message, key: str) -> None:
        self.sent.append(message)


@dataclass
class Stack:
    app: Any
    coordinator: Coordinator
    records: ApiRecords
    state: RedisState

    def call(self, method: str, path: str, body: object = None, token: str | None = TOKEN) -> tuple[int, Any]:
        headers = {"content-type": "application/json"}
        if token:
            headers["authorization"] = f"Bearer {token}"
        raw = b"" if body is None else json.dumps(body).encode()
        answer = asyncio.run(request(self.app, method, path, headers, raw))
        return answer.status, json.loads(answer.body or b"null")

    def tick(self) -> None:
        asyncio.run(self.coordinator.tick())

    def schedules(self) -> dict[tuple[str, str], str]:
        assert self.coordinator.tracker is not None
        return dict(self.coordinator.tracker.schedules)


@pytest.fixture
def stack(spark: SparkSession, spark_database: str, redis_client: Redis, redis_prefix: str) -> Iterator[Stack]:
    environ = {
        **os.environ,
        "CBT__REDIS__KEY_PREFIX": redis_prefix,
        "CBT__API__AUTH__TOKENS": f'["{TOKEN}"]',
        **admin_database_overrides(spark_database),
    }
    config = load_config(CONFIG, environ=environ)
    records = ApiRecords(tables_from_config(spark, config))
    records.ensure_tables()
    state = RedisState(redis_client, redis_prefix)
    state.coverage.mark_built(int(time.time()), state.coverage.generation())
    ctx = ApiContext(
        config=config,
        models=MODELS,
        hot=state,
        refresh=Offline(),
        admin=records,
        commands=Offline(),
        events=EventHub(),
        overrides=LiveOverrides(state.overrides, lambda: records.overrides),
    )
    admin = admin_from_config(spark, config)
    durable = overrides_table(admin.tables.session, admin.tables.completions.database)
    planner = Planner(
        MODELS,
        LiveStateReader.of(MODELS, state),
        state.ledger,
        Publisher(),
        Topics("t."),
        lambda tags: "default",
        model_concurrency=1,
        task_deadline_ms=60_000,
    )
    coordinator = Coordinator(
        config,
        MODELS,
        state,
        planner,
        RedisMarks(redis_client, redis_prefix),
        "c1",
        lambda: admin,
        view=ModelView(MODELS, LiveOverrides(state.overrides, lambda: durable)),
    )
    yield Stack(create_app(ctx), coordinator, records, state)


def test_an_override_set_through_the_api_is_applied_at_the_next_tick(stack: Stack) -> None:
    stack.tick()
    assert stack.schedules()[(HOURLY, "forward")] == "@every 1m"

    status, body = stack.call(
        "PUT",
        f"/api/v1/models/{HOURLY}/overrides",
        {"schedules": {"forwardfill": "@every 7s"}, "limits": {"min": 1000}, "tags": ["heavy"]},
    )
    assert status == 200, body
    assert body["override"] == {"schedules": {"forwardfill": "@every 7s"}, "limits": {"min": 1000}, "tags": ["heavy"]}
    assert body["effective"]["schedules"] == {"forwardfill": "@every 7s", "backfill": "@every 5m"}

    stack.tick()  # one tick: no restart, no new coordinator
    assert stack.schedules()[(HOURLY, "forward")] == "@every 7s"
    hourly = stack.coordinator.planner.models.models[HOURLY]
    assert isinstance(hourly, IncrementalModel)
    assert hourly.limits.min == 1000 and hourly.tags == ("heavy",)

    assert stack.call("PUT", f"/api/v1/models/{REPORT}/overrides", {"enabled": False})[0] == 200
    stack.tick()
    assert (REPORT, "scheduled") not in stack.schedules() and REPORT in stack.coordinator.planner.paused

    status, body = stack.call("DELETE", f"/api/v1/models/{HOURLY}/overrides")
    assert status == 200 and body["override"] is None
    stack.tick()
    assert stack.schedules()[(HOURLY, "forward")] == "@every 1m"
    assert stack.call("DELETE", f"/api/v1/models/{HOURLY}/overrides")[0] == 404

    audit = [(a.action, a.target) for a in stack.records.actions(10)]
    assert ("override-set", HOURLY) in audit and ("override-clear", HOURLY) in audit
    assert ("override-set", REPORT) in audit


def test_the_apis_own_views_show_the_override_in_force_without_a_restart(stack: Stack) -> None:
    """The api's listings, model pages, schedules and run-now apply the overrides in force (re-read from Redis at
    most once per ``scheduler.tick_s``), and drop them once cleared — the same app, never rebuilt."""

    def model(model_id: str) -> dict[str, Any]:
        status, body = stack.call("GET", f"/api/v1/models/{model_id}", token=None)
        assert status == 200, body
        return body

    def eventually(check: Callable[[], bool]) -> None:
        deadline = time.monotonic() + 5  # (a tick is 1 s here)
        while not check():
            assert time.monotonic() < deadline, "the api did not show the change within a few ticks"
            time.sleep(0.2)

    hourly = model(HOURLY)
    assert hourly["config"]["schedules"]["forwardfill"] == "@every 1m" and hourly["overridden"] == []
    assert model(REPORT)["enabled"] is True

    faster = {"schedules": {"forwardfill": "@every 7s"}}
    assert stack.call("PUT", f"/api/v1/models/{HOURLY}/overrides", faster)[0] == 200
    assert stack.call("PUT", f"/api/v1/models/{REPORT}/overrides", {"enabled": False})[0] == 200
    eventually(lambda: model(HOURLY)["config"]["schedules"]["forwardfill"] == "@every 7s")
    assert model(HOURLY)["overridden"] == ["schedules"] and model(HOURLY)["config"]["schedules"]["backfill"] == (
        "@every 5m"
    )
    eventually(lambda: model(REPORT)["enabled"] is False)
    listing = {m["id"]: m for m in stack.call("GET", "/api/v1/models", token=None)[1]["models"]}
    assert listing[REPORT]["enabled"] is False and listing[REPORT]["overridden"] == ["enabled"]
    assert listing[HOURLY]["enabled"] is True and listing[HOURLY]["overridden"] == ["schedules"]
    schedules = {m["model"]: m for m in stack.call("GET", "/api/v1/schedules", token=None)[1]["models"]}
    assert schedules[REPORT]["enabled"] is False and schedules[REPORT]["next_unix"] is None
    status, refused = stack.call("POST", f"/api/v1/models/{REPORT}/run-now")
    assert status == 409 and "paused by a live config override" in refused["detail"]
    shown = stack.call("GET", f"/api/v1/models/{HOURLY}/overrides", token=None)[1]
    assert shown["effective"]["schedules"]["forwardfill"] == "@every 7s"

    assert stack.call("DELETE", f"/api/v1/models/{HOURLY}/overrides")[0] == 200
    assert stack.call("DELETE", f"/api/v1/models/{REPORT}/overrides")[0] == 200
    eventually(lambda: model(HOURLY)["config"]["schedules"]["forwardfill"] == "@every 1m")
    eventually(lambda: model(REPORT)["enabled"] is True)
    assert model(HOURLY)["overridden"] == [] and model(REPORT)["overridden"] == []


@pytest.mark.parametrize(
    ("model_id", "body", "reason"),
    [
        pytest.param(HOURLY, {"schedules": {"forwardfill": "sometimes"}}, "schedules.forwardfill", id="bad-schedule"),
        pytest.param(HOURLY, {"schedules": {"forwardfill": "0 0 30 2 *"}}, "never fires", id="never-fires"),
        pytest.param(REPORT, {"schedule": "0 0 30 2 *"}, "never fires", id="scheduled-never-fires"),
        pytest.param(HOURLY, {"limits": {"min": -1}}, "limits.min", id="limit-out-of-range"),
        pytest.param(HOURLY, {"colour": "red"}, "colour: unknown field", id="unknown-field"),
        pytest.param(REPORT, {"fill": {"buffer": 1}}, "does not apply to scheduled models", id="wrong-kind"),
    ],
)
def test_an_invalid_override_is_a_400_with_the_reason_and_nothing_is_stored(
    stack: Stack, model_id: str, body: dict[str, Any], reason: str
) -> None:
    status, problem = stack.call("PUT", f"/api/v1/models/{model_id}/overrides", body)
    assert status == 400 and reason in problem["detail"]
    assert stack.state.overrides.overrides() == {}


def test_setting_needs_a_write_token_and_an_unknown_model_is_a_404(stack: Stack) -> None:
    assert stack.call("PUT", f"/api/v1/models/{HOURLY}/overrides", {"enabled": False}, token=None)[0] == 401
    assert stack.call("PUT", "/api/v1/models/an.nope/overrides", {"enabled": False})[0] == 404


def test_overrides_survive_a_redis_flush(stack: Stack, redis_client: Redis, redis_prefix: str) -> None:
    assert stack.call("PUT", f"/api/v1/models/{HOURLY}/overrides", {"schedules": {"backfill": "@every 9s"}})[0] == 200
    stack.tick()
    keys = list(redis_client.scan_iter(match=redis_prefix + "*"))  # FLUSHDB, of this test's keys only
    redis_client.delete(*keys)
    assert stack.state.overrides.version() is None
    stack.state.coverage.mark_built(int(time.time()), stack.state.coverage.generation())  # (the hot index's own test)

    stack.tick()
    assert stack.schedules()[(HOURLY, "backfill")] == "@every 9s"
    status, body = stack.call("GET", "/api/v1/overrides")
    assert status == 200 and body == {"overrides": {HOURLY: {"schedules": {"backfill": "@every 9s"}}}}


def test_a_restore_from_an_older_read_of_the_record_does_not_undo_a_change_made_meanwhile(
    redis_client: Redis, redis_prefix: str
) -> None:
    """After a flush, a reader restores what it read from the admin table (seconds on Spark); an override set in
    those seconds (record, then Redis) must survive: the stale restore stands aside, and the next one reads it."""
    store = RedisOverrides(redis_client, redis_prefix)
    assert store.version() is None
    before_the_read = store.counter()
    store.put(HOURLY, {"enabled": False})  # set by the api while the reader was reading the record

    assert store.restore({}, before_the_read) is None
    assert store.overrides() == {HOURLY: {"enabled": False}} and store.version() is None
    assert store.restore({HOURLY: {"enabled": False}}, store.counter()) is not None
    assert store.overrides() == {HOURLY: {"enabled": False}} and store.version() is not None


def test_a_service_that_only_plans_follows_the_overrides_at_its_next_tick(stack: Stack) -> None:
    """The invalidator's loop: its planner plans with the overridden models and skips a paused one."""
    assert stack.coordinator.view is not None
    view = ModelView(MODELS, stack.coordinator.view.overrides)
    planner = Planner(
        MODELS,
        LiveStateReader.of(MODELS, stack.state),
        stack.state.ledger,
        Publisher(),
        Topics("t."),
        lambda tags: "heavy" if "heavy" in tags else "default",
        model_concurrency=1,
        task_deadline_ms=60_000,
    )
    assert stack.call("PUT", f"/api/v1/models/{HOURLY}/overrides", {"enabled": False, "tags": ["heavy"]})[0] == 200
    asyncio.run(follow(view, planner))
    hourly = planner.models.models[HOURLY]
    assert isinstance(hourly, IncrementalModel) and hourly.tags == ("heavy",)
    assert planner.paused == {HOURLY} and asyncio.run(planner.replan([HOURLY])) == 0
