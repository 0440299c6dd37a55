"""The CBT-compatible routes against CBT's own published OpenAPI description (tests/fixtures/cbt/openapi.yaml, copied
from ethpandaops/cbt): every path it describes answers, at /api/v1 and at /cbt/api/v1, with a body its schema accepts
(errors too: CBT's ``Error`` members beside the problem's); every CBT admin route acts, so it needs the write token
(the read-only app has none: 403), and with one an override set through CBT's route reads back through ours, run-now
and delete-period go out as ours do; our own /api/v1/models stays ours with CBT's ``total`` and
``type=transformation``; CORS opens to CBT's ``*``.

The app is served by uvicorn and asked over HTTP. It reads a real Redis (coverage, bounds, failures and in-flight
tasks written through the real adapters) and the real Delta admin tables on Spark Connect (a scheduled model's runs),
as the api process does."""

from __future__ import annotations

import json
import re
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import uvicorn
import yaml
from jsonschema import Draft4Validator, FormatChecker
from pyspark.sql import SparkSession
from redis import Redis
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT4

from cbt.adapters.delta_admin import tables_from_config
from cbt.adapters.redis_state import RedisState
from cbt.adapters.spark import SessionPool
from cbt.api.cbt_compat import admin as cbt_admin
from cbt.api.cbt_compat.routes import COMPAT_BASE
from cbt.api.context import ApiContext
from cbt.api.events import EventHub
from cbt.api.offline import Offline
from cbt.api.records import ApiRecords
from cbt.api.web import create_app
from cbt.config.settings import Config, admin_database_overrides
from cbt.contract.messages import BoundsUpdated, Invalidation, Message, TaskFailed, TaskRequested
from cbt.contract.topics import Topics
from cbt.dev.pipeline import free_port
from cbt.models.dag import ModelSet
from cbt.models.spec import ScheduledModel
from cbt.planning.live import LiveStateReader
from cbt.planning.override_sync import LiveOverrides
from cbt.planning.planner import Planner
from cbt.scheduling.snapshot import RawBounds
from cbt.state.admin_records import CompletedInterval, ScheduledRun
from cbt.state.ports import InFlightTask
from tests.conftest import Endpoints
from tests.unit.scheduling.factories import ext, inc, models_of, sched

pytestmark = pytest.mark.integration
SPEC_FILE = Path(__file__).resolve().parents[1] / "fixtures" / "cbt" / "openapi.yaml"
SPEC: dict[str, Any] = yaml.safe_load(SPEC_FILE.read_text(encoding="utf-8"))
SPEC_URI = "urn:cbt:openapi"
REGISTRY: Registry[Any] = Registry().with_resource(SPEC_URI, Resource.from_contents(SPEC, default_specification=DRAFT4))

SRC, OTHER = "src.blocks", "src.slots"
MINUTE, HOUR, FAILING, REPORT = "an.minute", "an.hour", "an.failing", "an.report"
MODELS = models_of(
    ext(SRC, lag=5), ext(OTHER),
    inc(MINUTE, [SRC], imax=10), inc(HOUR, [MINUTE, (SRC, OTHER)], imax=20, limits=(0, None), buffer=2),
    inc(FAILING, [SRC], imax=10), sched(REPORT, "@every 1h"))
COVERED = [(100, 150), (170, 200)]


def pointer(*parts: str) -> str:
    return "/".join(p.replace("~", "~0").replace("/", "~1") for p in parts)


def check(path: str, answer: Answer, status: int = 200) -> Any:
    """``answer``'s body, after checking its status and that CBT's schema for ``path`` and ``status`` accepts it."""
    body = json.loads(answer.body)
    assert answer.status == status, (path, answer.status, body)
    response = SPEC["paths"][path]["get"]["responses"][str(status)]
    if "$ref" in response:  # a shared response (NotFound)
        ref = pointer(*response["$ref"].removeprefix("#/").split("/"), "content", "application/json", "schema")
    else:
        ref = pointer("paths", path, "get", "responses", str(status), "content", "application/json", "schema")
    validator = Draft4Validator({"$ref": f"{SPEC_URI}#/{ref}"}, registry=REGISTRY, format_checker=FormatChecker())
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(body)]
    assert not errors, (path, errors, body)
    return body


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    """Lower-case names."""
    body: bytes


@dataclass
class CbtApi:
    base_url: str

    def call(self, method: str, path: str, headers: dict[str, str] | None = None, body: bytes | None = None) -> Answer:
        request = urllib.request.Request(self.base_url + path, data=body, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return Answer(response.status, {k.lower(): v for k, v in response.headers.items()}, response.read())
        except urllib.error.HTTPError as e:
            return Answer(e.code, {k.lower(): v for k, v in e.headers.items()}, e.read())

    def get(self, base: str, path: str, query: str = "") -> Answer:
        return self.call("GET", base + path + (f"?{query}" if query else ""))


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """``app`` on uvicorn at a free local port, in a thread, as the api process serves it."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, lifespan="off", log_config=None,
                                           access_log=False))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@dataclass(frozen=True)
class Stores:
    spark: SparkSession
    database: str
    redis: Redis
    prefix: str


@pytest.fixture(scope="module")
def stores(spark_sessions: SessionPool, endpoints: Endpoints) -> Iterator[Stores]:
    """Admin tables in a fresh database, a fresh key prefix (each app below takes its own prefix under it)."""
    spark, suffix = spark_sessions.session("tests"), uuid.uuid4().hex[:10]
    database, prefix = f"tcbtapi_{suffix}", f"tcbtapi_{suffix}:"
    spark.sql(f"CREATE DATABASE {database}")
    redis_client = Redis.from_url(endpoints.redis_url)
    try:
        yield Stores(spark, database, redis_client, prefix)
    finally:
        keys = list(redis_client.scan_iter(match=prefix + "*"))
        if keys:
            redis_client.delete(*keys)
        redis_client.close()
        spark.sql(f"DROP DATABASE IF EXISTS {database} CASCADE")


@pytest.fixture(scope="module")
def api(stores: Stores) -> Iterator[CbtApi]:
    """One app for the module whose state is only read (no write token)."""
    with serving(_app(stores.spark, stores.database, stores.redis, stores.prefix + "read:")) as url:
        yield CbtApi(url)


def _config(database: str, prefix: str, tokens: list[str]) -> Config:
    overrides = {k.removeprefix("CBT__ADMIN__").split("__")[0].lower(): {"database": v}
                 for k, v in admin_database_overrides(database).items()}
    return Config.model_validate({"redis": {"key_prefix": prefix}, "admin": overrides,
                                  "api": {"cors_origins": ["*"], "auth": {"tokens": tokens}}})


def _app(spark: SparkSession, database: str, redis_client: Redis, prefix: str) -> Any:
    config = _config(database, prefix, [])
    tables = tables_from_config(spark, config)
    records = ApiRecords(tables)
    records.ensure_tables()
    state = RedisState(redis_client, prefix)
    state.bounds.put_bounds(SRC, RawBounds(90, 300))
    for done in COVERED:
        state.coverage.record_completed(MINUTE, done, 0)
    state.coverage.record_completed(HOUR, (120, 150), 0)
    state.coverage.mark_built(1, "g1")
    state.ledger.claim(HOUR, InFlightTask("an.hour:150", (150, 170), 2**62))
    state.failures.record_failure(TaskFailed(model=FAILING, task_id="an.failing:100", position=100, interval=10,
                                             error="boom", attempts=3, failed_at_ms=1, worker="w1"))
    state.coverage.record_scheduled_run(REPORT, 1_700_000_000)
    tables.scheduled.record_scheduled_run(ScheduledRun(REPORT, 1_700_000_000, "an.report:@1700000000", "success",
                                                       updated_at_ms=1_700_000_005_000))
    return create_app(ApiContext(config=config, models=ModelSet(MODELS), hot=state,
                                 refresh=Offline(), admin=records, commands=Offline(), events=EventHub()))


def concrete(path: str) -> str:
    ids = {"/models/external/{id}": SRC, "/models/external/{id}/bounds": SRC, "/models/transformations/{id}": HOUR,
           "/models/transformations/{id}/coverage": MINUTE, "/models/transformations/{id}/coverage/{position}": HOUR,
           "/models/transformations/{id}/runs": REPORT}
    return path.replace("{id}", ids.get(path, "")).replace("{position}", "150")


@pytest.mark.parametrize("base", ["/api/v1", COMPAT_BASE])
def test_every_path_cbt_describes_answers_with_a_body_its_schema_accepts(api: CbtApi, base: str) -> None:
    for path in SPEC["paths"]:
        if base == "/api/v1" and path == "/models":
            continue  # ours (its superset is checked below)
        check(path, api.get(base, concrete(path)))


def test_the_bodies_say_what_the_state_holds(api: CbtApi) -> None:
    base = COMPAT_BASE
    listing = check("/models", api.get(base, "/models", "type=transformation"))
    assert listing["total"] == 4 and {m["id"] for m in listing["models"]} == {MINUTE, HOUR, FAILING, REPORT}
    assert {m["type"] for m in listing["models"]} == {"transformation"}
    assert check("/models", api.get(base, "/models", "search=SLOTS"))["models"][0]["id"] == OTHER

    coverage = check("/models/transformations/coverage", api.get(base, "/models/transformations/coverage"))
    by_id = {c["id"]: c["ranges"] for c in coverage["coverage"]}
    assert by_id[MINUTE] == [{"position": 100, "interval": 50}, {"position": 170, "interval": 30}]
    assert by_id[FAILING] == [] and coverage["total"] == 3

    bounds = check("/models/external/bounds", api.get(base, "/models/external/bounds"))
    assert bounds == {"bounds": [{"id": SRC, "min": 90, "max": 300, "initial_scan_complete": True}], "total": 1}
    external = check("/models/external/{id}", api.get(base, f"/models/external/{SRC}"))
    assert external["lag"] == 5 and external["interval"] == {"type": "block"}

    statuses = {m["id"]: m["metadata"]["last_run_status"] for m in check(
        "/models/transformations", api.get(base, "/models/transformations"))["models"]}
    assert statuses == {MINUTE: "success", HOUR: "running", FAILING: "failed", REPORT: "success"}
    failed = check("/models/transformations", api.get(base, "/models/transformations", "status=failed"))
    assert [m["id"] for m in failed["models"]] == [FAILING]
    hour = check("/models/transformations/{id}", api.get(base, f"/models/transformations/{HOUR}"))
    assert hour["depends_on"] == [MINUTE, [SRC, OTHER]] and hour["fill"]["buffer"] == 2
    assert hour["interval"] == {"min": 20, "max": 20, "type": "block"} and "schedule" not in hour

    runs = check("/models/transformations/runs", api.get(base, "/models/transformations/runs"))
    assert runs == {"runs": [{"id": REPORT, "last_run": "2023-11-14T22:13:25Z"}], "total": 1}
    types = check("/interval/types", api.get(base, "/interval/types"))
    assert types == {"interval_types": {"block": [{"name": "Position"}]}}


def test_coverage_debug_gives_the_planners_verdict_and_each_dependencys_holes(api: CbtApi) -> None:
    path = "/models/transformations/{id}/coverage/{position}"
    blocked = check(path, api.get(COMPAT_BASE, f"/models/transformations/{HOUR}/coverage/150"))
    assert blocked["interval"] == 20 and blocked["end_position"] == 170 and not blocked["can_process"]
    minute = blocked["dependencies"][0]
    assert minute["id"] == MINUTE and minute["coverage_status"] == "has_gaps" and minute["blocking"]
    assert minute["gaps"] == [{"start": 150, "end": 170, "size": 20, "overlaps_request": True}]
    assert minute["child_dependencies"][0]["bounds"] == {"min": 90, "max": 295, "has_data": True, "lag_applied": 5}
    group = blocked["dependencies"][1]
    assert group["type"] == "or_group" and not group["blocking"] and len(group["or_group_members"]) == 2
    assert blocked["validation"]["has_dependency_gaps"] and blocked["validation"]["next_valid_position"] == 170
    assert any("an.minute has gap from 150 to 170" in r for r in blocked["validation"]["reasons"])
    assert blocked["model_coverage"] == {"has_data": True, "first_position": 120, "last_end_position": 150}

    ready = check(path, api.get(COMPAT_BASE, f"/models/transformations/{HOUR}/coverage/170"))
    assert ready["can_process"] and ready["validation"]["in_bounds"] and ready["validation"]["reasons"] == []
    assert ready["validation"]["valid_range"] == {"min": 100, "max": 198}  # OR group's span, buffer 2
    in_gap = check(path, api.get(COMPAT_BASE, f"/models/transformations/{MINUTE}/coverage/155"))
    assert in_gap["interval"] == 20, "a position inside the model's own gap is checked over the whole gap"


@pytest.mark.parametrize(("path", "url", "status"), [
    pytest.param("/models/external/{id}", f"/models/external/{MINUTE}", 404, id="not-an-external"),
    pytest.param("/models/transformations/{id}", "/models/transformations/no.such", 404, id="unknown"),
    pytest.param("/models/transformations/{id}/coverage", f"/models/transformations/{REPORT}/coverage", 400,
                 id="coverage-of-a-scheduled-model"),
    pytest.param("/models/transformations/{id}/coverage/{position}",
                 f"/models/transformations/{MINUTE}/coverage/soon", 400, id="position-not-an-integer"),
    pytest.param("/models/transformations/{id}/runs", f"/models/transformations/{MINUTE}/runs", 400,
                 id="runs-of-an-incremental-model"),
    pytest.param("/models/external/{id}/bounds", f"/models/external/{OTHER}/bounds", 404, id="never-scanned"),
])
def test_refusals_are_problems_with_cbts_error_members(api: CbtApi, path: str, url: str, status: int) -> None:
    for base in ("/api/v1", COMPAT_BASE):
        answer = api.get(base, url)
        body = check(path, answer, status)
        assert answer.headers["content-type"] == "application/problem+json"
        assert body["status"] == body["code"] == status and body["detail"] == body["error"] != ""


def test_cbts_admin_routes_act_so_they_need_the_write_token(api: CbtApi) -> None:
    bodies = {"/admin/models/{id}/bounds": b'{"min": 1, "max": 2}',
              "/admin/models/{id}/delete-period": b'{"start_pos": 100, "end_pos": 110}',
              "/admin/models/{id}/config-override": b'{"enabled": false}'}
    admin = [(method, path) for method, path, *_ in cbt_admin.ROUTES if path.startswith("/admin/")]
    assert len(admin) == 11
    for method, path in admin:
        model = SRC if "bounds" in path else REPORT if "run-now" in path else MINUTE
        for base in ("/api/v1", COMPAT_BASE):
            url = base + path.replace("{id}", model)
            answer = api.call(method, url, {"Content-Type": "application/json"}, bodies.get(path, b""))
            body = json.loads(answer.body)
            assert answer.status == 403 and body["status"] == 403, (method, url, body)
            assert answer.headers["content-type"] == "application/problem+json" and "api.auth.tokens" in body["detail"]
    assert json.loads(api.get(COMPAT_BASE, f"/models/external/{SRC}/bounds").body)["max"] == 300, "nothing changed"


def test_our_model_list_stays_ours_with_cbts_total_and_type_filter(api: CbtApi) -> None:
    ours = json.loads(api.get("/api/v1", "/models", "type=transformation").body)
    assert ours["total"] == len(ours["models"]) == 4
    assert {m["type"] for m in ours["models"]} == {"incremental", "scheduled"} and "summary" in ours["models"][0]
    assert json.loads(api.get("/api/v1", "/models").body)["total"] == len(MODELS)
    session = json.loads(api.get("/api/v1", "/auth/session").body)
    assert session == {"management_enabled": False, "auth_methods": [], "authenticated": False}


def test_cors_opens_to_any_origin_as_cbt(api: CbtApi) -> None:
    preflight = api.call("OPTIONS", "/api/v1/models/external", {
        "Origin": "http://cbt-frontend.example", "Access-Control-Request-Method": "GET"})
    assert preflight.status == 200 and preflight.headers["access-control-allow-origin"] == "*"
    answer = api.call("GET", "/cbt/api/v1/models", {"Origin": "http://cbt-frontend.example"})
    assert answer.headers["access-control-allow-origin"] == "*"


def test_the_fixture_is_cbts_document_and_every_path_is_served() -> None:
    header = SPEC_FILE.read_text(encoding="utf-8").splitlines()[:5]
    assert re.search(r"ethpandaops/cbt, file api/openapi.yaml at commit [0-9a-f]{40}", " ".join(header))
    assert SPEC["info"]["title"] == "CBT API" and len(SPEC["paths"]) == 13


TOKEN = "cbt-admin-test-token-0123456789abcdef"


@dataclass
class Sent:
    """``Commands``: a run-now claims in the real ledger through the planner; what goes out is kept, not sent."""

    planner: Planner
    invalidations: list[Invalidation] = field(default_factory=list)

    async def publish_invalidation(self, event: Invalidation) -> None:
        self.invalidations.append(event)

    async def run_scheduled(self, model: ScheduledModel, fire_unix: int) -> bool:
        return await self.planner.run_scheduled(model, fire_unix)

    async def announce_bounds(self, event: BoundsUpdated) -> None:
        raise AssertionError("not used here")


@dataclass
class Recorded:
    sent: list[Message] = field(default_factory=list)

    async def publish(self, topic: str, message: Message, key: str) -> None:
        self.sent.append(message)


def test_cbts_override_run_now_and_delete_period_routes_act_through_ours(stores: Stores) -> None:
    """With a write token: an override set through CBT's route reads back through ours (and CBT's read); CBT's
    run-now claims and publishes the scheduled model's run; delete-period publishes our rerun of the range; each
    leaves our audit rows."""
    prefix = stores.prefix + "act:"
    config, models = _config(stores.database, prefix, [TOKEN]), ModelSet(MODELS)
    tables = tables_from_config(stores.spark, config)
    records = ApiRecords(tables)
    records.ensure_tables()  # (once more, if the read-only app made them: idempotent)
    state = RedisState(stores.redis, prefix)
    state.bounds.put_bounds(SRC, RawBounds(90, 300))
    ran = [CompletedInterval(MINUTE, p, 10, f"{MINUTE}:{p}", task_interval=10) for p in range(100, 150, 10)]
    tables.completions.record_completed([*ran, CompletedInterval(HOUR, 120, 20, f"{HOUR}:120", task_interval=20)])
    state.coverage.record_completed(MINUTE, (100, 150), 0)
    state.coverage.record_completed(HOUR, (120, 140), 0)
    state.coverage.mark_built(1, "g1")
    published = Recorded()
    planner = Planner(models, LiveStateReader.of(models, state), state.ledger, published, Topics("t."),
                      lambda tags: "default", model_concurrency=1, task_deadline_ms=60_000)
    commands = Sent(planner)
    app = create_app(ApiContext(config=config, models=models, hot=state, refresh=Offline(), admin=records,
                                commands=commands, events=EventHub(),
                                overrides=LiveOverrides(state.overrides, lambda: records.overrides)))
    auth = {"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"}
    with serving(app) as url:
        api = CbtApi(url)

        def send(method: str, path: str, body: object = None) -> tuple[int, Any]:
            answer = api.call(method, path, auth, None if body is None else json.dumps(body).encode())
            return answer.status, json.loads(answer.body)

        cbt_body = {"enabled": False, "config": {"schedules": {"forwardfill": "@every 30s"}, "limits": {"min": 120}}}
        assert send("PUT", f"/api/v1/admin/models/{MINUTE}/config-override", cbt_body) == (
            200, {"model_id": MINUTE, "updated": True})
        ours = json.loads(api.get("/api/v1", f"/models/{MINUTE}/overrides").body)
        assert ours["override"] == {"enabled": False, **cbt_body["config"]}
        assert ours["effective"]["enabled"] is False and ours["effective"]["limits"]["min"] == 120
        shown = json.loads(api.get(COMPAT_BASE, f"/models/{MINUTE}/config-override").body)  # (CBT's public read)
        assert shown["model_type"] == "transformation" and shown["enabled"] is False
        assert shown["override"] == {"schedules": {"forwardfill": "@every 30s"}, "limits": {"min": 120}}
        assert shown["base_config"]["schedules"]["forwardfill"] == "@every 1m"
        listed = send("GET", "/api/v1/admin/config-overrides")[1]["overrides"]
        assert [o["model_id"] for o in listed] == [MINUTE]

        status, refused = send("PUT", f"/api/v1/admin/models/{MINUTE}/config-override",
                               {"config": {"interval": {"max": 5}}})
        assert status == 400 and "config.interval" in refused["error"] and refused["code"] == 400
        status, refused = send("PUT", f"/api/v1/admin/models/{MINUTE}/config-override",
                               {"config": {"schedules": {"forwardfill": "sometimes"}}})
        assert status == 400 and "schedules.forwardfill" in refused["detail"], "our checks run on the translation"

        assert send("DELETE", f"/api/v1/admin/models/{MINUTE}/config-override") == (
            200, {"model_id": MINUTE, "deleted": True})
        assert send("DELETE", f"/api/v1/admin/models/{MINUTE}/config-override")[1]["deleted"] is False
        assert json.loads(api.get("/api/v1", f"/models/{MINUTE}/overrides").body)["override"] is None

        assert send("POST", f"/api/v1/admin/models/{REPORT}/run-now") == (
            200, {"model_id": REPORT, "status": "enqueued"})
        [run] = [m for m in published.sent if isinstance(m, TaskRequested)]
        assert run.model == REPORT
        assert state.ledger.in_flight([REPORT], int(time.time() * 1000))[REPORT], "claimed in the ledger"
        assert send("POST", f"/api/v1/admin/models/{MINUTE}/run-now")[0] == 400

        period = {"start_pos": 100, "end_pos": 150, "cascade": True}
        preview = send("POST", f"/api/v1/models/{MINUTE}/rerun", {"start": 100, "end": 150, "preview": True})[1]
        status, deleted = send("POST", f"/api/v1/admin/models/{MINUTE}/delete-period", period)
        assert status == 200 and deleted["model_id"] == MINUTE
        assert deleted["deleted_rows"] == len(preview["affected"][MINUTE]) == 5
        assert deleted["cascade_results"] == [{"model_id": HOUR, "deleted_rows": len(preview["affected"][HOUR])}]
        [event] = commands.invalidations
        assert (event.model, event.start, event.end, event.cascade) == (MINUTE, 100, 150, True)
        assert send("POST", f"/api/v1/admin/models/{MINUTE}/delete-period", {"start_pos": 5, "end_pos": 5})[0] == 400

    audit = {(a.action, a.target) for a in records.actions(20)}
    assert {("override-set", MINUTE), ("override-clear", MINUTE), ("run-now", REPORT), ("rerun", MINUTE)} <= audit
