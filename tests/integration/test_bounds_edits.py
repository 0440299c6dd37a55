"""Bounds edits and consolidation on real Redis, Delta and a real coordinator (issue 26): bounds set through the API
are in Redis and the coordinator plans the dependent with them; deleting them makes the bounds-cache's scanner (its
exec query, a real subprocess) scan again; consolidating merges the completion rows and keeps the coverage; CBT's
admin routes do the same with CBT's bodies; the CLI writes the same stores, and ``cbt status --show`` reads the live
bounds and shows them as the config's interval types do."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import pytest
from pyspark.sql import SparkSession
from redis import Redis

from cbt.adapters.bounds_refresh import RedisRefreshRequests
from cbt.adapters.delta_admin import AdminTables, admin_from_config, tables_from_config
from cbt.adapters.redis_marks import RedisMarks
from cbt.adapters.redis_state import RedisState
from cbt.adapters.spark import SessionPool
from cbt.api.context import ApiContext
from cbt.api.events import EventHub
from cbt.api.records import ApiRecords
from cbt.api.web import create_app
from cbt.bounds_cache.query import SparkBoundsQuery
from cbt.bounds_cache.scanner import BoundsScanner
from cbt.cli import main
from cbt.config.settings import admin_database_overrides, load_config
from cbt.contract.messages import BoundsUpdated, Invalidation, Message, TaskRequested
from cbt.contract.topics import Topics
from cbt.coordinator.app import Coordinator
from cbt.models.dag import ModelSet
from cbt.models.spec import ExecOptions, ScheduledModel
from cbt.models.templates import RenderSettings
from cbt.planning.live import LiveStateReader
from cbt.planning.planner import Planner
from cbt.scheduling.snapshot import RawBounds
from cbt.state.admin_records import CompletedInterval
from tests.conftest import Endpoints
from tests.e2e.harness import CONFIG
from tests.unit.api.asgi import request
from tests.unit.scheduling.factories import ext, inc, models_of

pytestmark = pytest.mark.integration
SRC, HOURLY = "src.blocks", "an.hourly"
SCANNED = RawBounds(1000, 1800)
SOURCE = replace(
    ext(SRC),
    exec=f"echo '{json.dumps({'min': SCANNED.min, 'max': SCANNED.max})}'",
    exec_options=ExecOptions(shell=True),
)
MODELS = ModelSet(models_of(SOURCE, inc(HOURLY, deps=[SRC], imax=100, direction="head")))
TOKEN = "bounds-test-token-0123456789abcdef0123"


@dataclass
class Publisher:
    sent: list[Message] = field(default_factory=list)

    async def publish(self, topic: str, message: Message, key: str) -> None:
        self.sent.append(message)

    def planned(self) -> list[tuple[int, int]]:
        return sorted(
            (m.position, m.position + m.interval)
            for m in self.sent
            if isinstance(m, TaskRequested) and m.model == HOURLY
        )


@dataclass
class ToCoordinator:
    """``Commands``: an announced ``bounds-updated`` goes to the coordinator's event handler, as Kafka would take it."""

    coordinator: Coordinator | None = None
    announced: list[BoundsUpdated] = field(default_factory=list)

    async def announce_bounds(self, event: BoundsUpdated) -> None:
        self.announced.append(event)
        assert self.coordinator is not None
        await self.coordinator.on_event(event.encode(), "t.bounds-updated")

    async def publish_invalidation(self, event: Invalidation) -> None:
        raise AssertionError("not used here")

    async def run_scheduled(self, model: ScheduledModel, fire_unix: int) -> bool:
        raise AssertionError("not used here")


@dataclass
class Stack:
    app: Any
    records: ApiRecords
    tables: AdminTables
    state: RedisState
    publisher: Publisher
    commands: ToCoordinator
    refresh: RedisRefreshRequests

    def call(self, method: str, path: str, body: object = None) -> tuple[int, Any]:
        headers = {"content-type": "application/json", "authorization": f"Bearer {TOKEN}"}
        raw = b"" if body is None else json.dumps(body).encode()
        answer = asyncio.run(request(self.app, method, path, headers, raw))
        return answer.status, json.loads(answer.body or b"null")


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
    publisher, commands = Publisher(), ToCoordinator()
    refresh = RedisRefreshRequests(redis_client, redis_prefix)
    planner = Planner(
        MODELS,
        LiveStateReader.of(MODELS, state),
        state.ledger,
        publisher,
        Topics("t."),
        lambda tags: "default",
        model_concurrency=10,
        task_deadline_ms=60_000,
    )
    admin = admin_from_config(spark, config)
    commands.coordinator = Coordinator(
        config, MODELS, state, planner, RedisMarks(redis_client, redis_prefix), "c1", lambda: admin
    )
    ctx = ApiContext(
        config=config, models=MODELS, hot=state, refresh=refresh, admin=records, commands=commands, events=EventHub()
    )
    yield Stack(create_app(ctx), records, admin.tables, state, publisher, commands, refresh)


def test_set_bounds_are_planned_with_and_deleted_ones_are_scanned_again(
    stack: Stack, spark_sessions: SessionPool, endpoints: Endpoints
) -> None:
    status, body = stack.call("PUT", f"/api/v1/models/{SRC}/bounds", {"min": 1000, "max": 1300})
    assert (status, body) == (200, {"model": SRC, "min": 1000, "max": 1300, "previous": None})
    assert stack.state.bounds.bounds([SRC]) == {SRC: RawBounds(1000, 1300)}
    assert [(e.model, e.min, e.max) for e in stack.commands.announced] == [(SRC, 1000, 1300)]
    assert stack.publisher.planned() == [(1000, 1100), (1100, 1200), (1200, 1300)], "planned up to the set bounds"

    status, body = stack.call("PUT", f"/api/v1/admin/models/{SRC}/bounds", {"min": 1000, "max": 1500})  # CBT's
    assert (status, body) == (200, {"model_id": SRC, "min": 1000, "max": 1500})
    assert stack.publisher.planned()[-2:] == [(1300, 1400), (1400, 1500)], "the wider bounds planned at once"

    for bad, reason in (
        ({"min": 9, "max": 3}, "min must not exceed max"),
        ({"min": -1, "max": 3}, "min: expected"),
        ({"min": "1", "max": 3}, "min"),
    ):
        status, body = stack.call("PUT", f"/api/v1/models/{SRC}/bounds", bad)
        assert status in (400, 422) and reason in json.dumps(body), body
    assert stack.call("PUT", f"/api/v1/models/{HOURLY}/bounds", {"min": 1, "max": 2})[0] == 400
    assert stack.state.bounds.bounds([SRC]) == {SRC: RawBounds(1000, 1500)}, "a refused edit writes nothing"

    status, body = stack.call("DELETE", f"/api/v1/models/{SRC}/bounds")
    assert (status, body) == (200, {"model": SRC, "removed": {"min": 1000, "max": 1500}, "rescan": True})
    assert stack.state.bounds.bounds([SRC]) == {} and stack.refresh.requested() == {SRC}
    scans = Publisher()
    query = SparkBoundsQuery(spark_sessions, RenderSettings(spark_remote=endpoints.spark_remote))
    scanner = BoundsScanner([SOURCE], stack.state.bounds, query, scans, Topics("t."), refresh=stack.refresh)
    assert asyncio.run(scanner.scan_due()) == 1
    assert stack.refresh.requested() == set() and stack.state.bounds.bounds([SRC]) == {SRC: SCANNED}
    assert [(m.min, m.max, m.previous_max) for m in scans.sent if isinstance(m, BoundsUpdated)] == [(1000, 1800, None)]

    audit = [(a.action, a.target) for a in stack.records.actions(10)]
    assert audit.count(("bounds-set", SRC)) == 2 and ("bounds-delete", SRC) in audit


def done(start: int, end: int) -> CompletedInterval:
    return CompletedInterval(
        HOURLY, start, end - start, f"{HOURLY}:{start}", invalidation_seq=0, task_interval=end - start
    )


def test_consolidate_merges_the_rows_and_keeps_the_coverage(stack: Stack) -> None:
    completions = stack.tables.completions
    completions.record_completed([done(0, 100), done(100, 200), done(200, 300), done(500, 600)])
    covered = completions.coverage([HOURLY])

    status, body = stack.call("POST", f"/api/v1/models/{HOURLY}/consolidate")
    assert (status, body) == (200, {"model": HOURLY, "rows_before": 4, "rows_after": 2})
    assert completions.coverage([HOURLY]) == covered == {HOURLY: ((0, 300), (500, 600))}
    status, body = stack.call("POST", f"/cbt/api/v1/admin/models/{HOURLY}/consolidate")  # CBT's: nothing left
    assert (status, body) == (200, {"model_id": HOURLY, "ranges_merged": 0})
    assert stack.call("POST", f"/api/v1/models/{SRC}/consolidate")[0] == 400
    assert ("consolidate", HOURLY) in [(a.action, a.target) for a in stack.records.actions(10)]


def test_the_cli_sets_and_deletes_bounds_and_consolidates(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    spark: SparkSession,
    spark_database: str,
    redis_client: Redis,
    redis_prefix: str,
) -> None:
    monkeypatch.setenv("CBT__REDIS__KEY_PREFIX", redis_prefix)
    for name, value in admin_database_overrides(spark_database).items():
        monkeypatch.setenv(name, value)
    state, source = RedisState(redis_client, redis_prefix), "ethereum.beacon_blocks"

    def cbt(*argv: str) -> tuple[int, str]:
        code = main([*argv, "--config", str(CONFIG)])
        out, err = capsys.readouterr()
        return code, out + err

    code, out = cbt("bounds", "set", "beacon_blocks", "--min", "50", "--max", "10")
    assert code == 1 and "min must not exceed max" in out and state.bounds.bounds([source]) == {}
    assert cbt("bounds", "set", "analytics.transactions", "--min", "1", "--max", "2")[0] == 1
    code, out = cbt("bounds", "set", "beacon_blocks", "--min", "10", "--max", "50")
    assert (
        code == 0 and "bounds set to [10, 50)" in out and state.bounds.bounds([source]) == {source: RawBounds(10, 50)}
    )
    code = main(["status", "block_propagation_minute", "--show", "Slot", "--json", "--config",
                 str(CONFIG)])
    out = capsys.readouterr().out
    shown = json.loads(out)["models"][0]
    slot = next(t for t in load_config(str(CONFIG)).interval_types["timestamp"] if t.name == "Slot")
    assert code == 0 and shown["valid_range"] is not None, out
    assert shown["valid_range_shown"] == [slot.show(p, 0) for p in shown["valid_range"]]
    assert shown["valid_range_shown"][0].startswith("slot -"), "the live bounds, [10, 50), shown as slots"
    assert_status_lists_the_scheduled_models_last_and_next_runs(capsys, state)
    code, out = cbt("bounds", "delete", source)
    assert code == 0 and "were [10, 50)" in out and state.bounds.bounds([source]) == {}
    assert RedisRefreshRequests(redis_client, redis_prefix).requested() == {source}
    code, out = cbt("admin", "consolidate", "block_propagation_minute")
    assert code == 0 and "analytics.block_propagation_minute: no completion rows" in out
    by_cli = [(r["action"], r["target"]) for r in spark.sql(
        f"SELECT action, target FROM `{spark_database}`.cbt_api_actions WHERE who LIKE 'cli:%'").collect()]
    assert ("bounds-set", source) in by_cli and ("bounds-delete", source) in by_cli, "each change, an audit row"
    assert ("consolidate", "analytics.block_propagation_minute") in by_cli


def assert_status_lists_the_scheduled_models_last_and_next_runs(capsys: pytest.CaptureFixture[str],
                                                                state: RedisState) -> None:
    """``cbt status``: each scheduled model's schedule, its latest successful fire (from Redis) and the next fire
    after it, a live override's pause in force — what the dashboard shows."""
    entities, leaderboard = "analytics.validator_entities", "analytics.entity_leaderboard"
    fire = (int(time.time()) // 60 - 2) * 60
    state.coverage.record_scheduled_run(entities, fire)
    state.coverage.record_scheduled_run(entities, fire - 60)
    state.overrides.put(leaderboard, {"enabled": False})
    assert main(["status", "--config", str(CONFIG), "--json"]) == 0
    scheduled = {s["id"]: s for s in json.loads(capsys.readouterr().out)["scheduled"]}
    assert scheduled[entities] == {"id": entities, "schedule": "@every 1m", "enabled": True, "last_fire_unix": fire,
                                   "next_unix": fire + 60, "is_due": True}
    assert scheduled[leaderboard]["enabled"] is False and scheduled[leaderboard]["next_unix"] is None
    assert main(["status", "--config", str(CONFIG)]) == 0
    table = capsys.readouterr().out
    assert f"{entities}  @every 1m    {time.strftime('%Y-%m-%d %H:%M:%SZ', time.gmtime(fire))}" in table, table
    assert f"{leaderboard}  */5 * * * *  never" in table and "paused (live override)" in table, table
