"""The api service on the real stack (issue 14): the example pipeline runs as separate processes, an api process
serves /api/v1 over it, and every endpoint answers with the contract's shape; changes need the token, a rerun
re-runs its range, run-now runs the scheduled model, a bounds refresh makes the bounds-cache scan, the event stream
delivers Kafka's events, and schemathesis finds no 5xx and no response that breaks the OpenAPI document.

One deployment for the module (the pipeline catches up once); ``api.token`` is the only token the api accepts, a
second api process without any token refuses changes."""

from __future__ import annotations

import functools
import itertools
import json
import threading
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from cbt.adapters.spark import SessionPool
from cbt.api.access.auth import fingerprint
from cbt.base.cron import next_fire
from cbt.scheduling import coverage as cov
from cbt.scheduling.coverage import covers, merge
from tests.conftest import Endpoints
from tests.e2e.api_stack import ApiStack, api_deployment, call, wait_until
from tests.e2e.harness import T0

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]
SOURCE_END = T0 + 240
LAST_SLOT_END = SOURCE_END - 12 + 1
LEAN = ("block_gas", "block_propagation_five_minute", "entity_leaderboard")
"""The API needs a small pipeline that has run, not all of it: the example pipeline without its slowest models (a
Python script's own Spark session, the five-minute chain end and the report over it)."""


@pytest.fixture(scope="module")
def api(endpoints: Endpoints, spark_sessions: SessionPool) -> Iterator[ApiStack]:
    with api_deployment(endpoints, spark_sessions, t0=T0, source_end=SOURCE_END, last_slot_end=LAST_SLOT_END,
                        disabled=LEAN, tokenless=True) as stack:
        yield stack


def test_every_read_endpoint_answers_with_the_contracts_shape(api: ApiStack) -> None:
    minute = api.model("block_propagation_minute")
    status, _, body = call(f"{api.base}/api/v1/models")
    assert status == 200
    models = {m["id"]: m for m in body["models"]}
    assert set(models) == set(api.dep.models.models)
    assert models[minute]["type"] == "incremental" and models[minute]["interval"] == {"max": 60, "min": 12}
    covered = api.dep.coverage(minute)
    assert models[minute]["summary"]["covered"] == [covered[0][0], covered[-1][1]]
    assert models[minute]["summary"]["lag"] is not None and models[minute]["summary"]["lag_seconds"] is not None
    only = call(f"{api.base}/api/v1/models?type=scheduled")[2]["models"]
    assert {m["id"] for m in only} == {api.model("validator_entities")}

    detail = call(f"{api.base}/api/v1/models/{minute}")[2]
    assert detail["path"] == "models/transformations/block_propagation_minute.sql"
    assert detail["config"]["write"]["strategy"] == "replace" and "SELECT" in detail["sql"].upper()
    assert detail["dependencies"] == [api.source("beacon_blocks")]
    assert api.model("block_propagation_two_minute") in detail["dependents"]
    start = covered[0][0]
    rendered = call(f"{api.base}/api/v1/models/{minute}/rendered?start={start}&end={start + 60}")[2]
    assert f"timestamp_seconds({start})" in rendered["sql"] and "REPLACE WHERE" in rendered["sql"]
    txs = call(f"{api.base}/api/v1/models/{api.model('transactions')}/rendered?start={start}&end={start + 60}")[2]
    assert "MERGE INTO" in txs["sql"], "append + unique_key: one MERGE"
    script = call(f"{api.base}/api/v1/models/{api.source('raw_transactions_alt')}/rendered")[2]
    assert script["command"][0] == "python3" and script["env"]["SELF_TABLE"] == "raw_transactions_alt"

    view = call(f"{api.base}/api/v1/models/{minute}/coverage")[2]
    assert view["ranges"][0]["start"] == view["window"][0] and view["ranges"][-1]["end"] == view["window"][1]
    assert [[r["start"], r["end"]] for r in view["ranges"] if r["status"] == "covered"] == [list(r) for r in covered]
    assert view["counts"]["covered"] == sum(e - s for s, e in covered) and view["intervals"]["covered"] > 0
    windowed = call(f"{api.base}/api/v1/models/{minute}/coverage?from={start}&to={start + 30}")[2]
    assert windowed["ranges"] == [{"start": start, "end": start + 30, "status": "covered"}]
    gaps = call(f"{api.base}/api/v1/models/{minute}/gaps")[2]
    assert gaps["gaps"] == [] and gaps["valid_range"] == view["valid_range"]

    explained = call(f"{api.base}/api/v1/models/{minute}/explain?position={start}")[2]
    assert explained["covered"] and explained["interval"] == [start, start + 60]
    assert explained["dependencies"][0]["id"] == api.source("beacon_blocks")
    beyond = call(f"{api.base}/api/v1/models/{minute}/explain?position={SOURCE_END + 600}")[2]
    assert not beyond["ready"] and "outside the valid range" in beyond["reason"]
    assert not beyond["dependencies"][0]["covers"] and beyond["dependencies"][0]["holes"]

    tasks = call(f"{api.base}/api/v1/models/{minute}/tasks?limit=5")[2]["tasks"]
    assert 0 < len(tasks) <= 5 and tasks[0]["status"] == "success" and tasks[0]["worker"]
    assert [t["at_ms"] for t in tasks] == sorted((t["at_ms"] for t in tasks), reverse=True)

    bounds = {b["model"]: b for b in call(f"{api.base}/api/v1/bounds")[2]["bounds"]}
    blocks = api.dep.state.bounds.bounds([api.source("beacon_blocks")])[api.source("beacon_blocks")]
    assert (bounds[api.source("beacon_blocks")]["min"], bounds[api.source("beacon_blocks")]["max"]) == (
        blocks.min, blocks.max)
    runs = call(f"{api.base}/api/v1/scheduled")[2]["runs"]
    assert any(r["model"] == api.model("validator_entities") and r["status"] == "success" for r in runs)
    dag = call(f"{api.base}/api/v1/dag")[2]
    ranks = {n["id"]: n["rank"] for n in dag["nodes"]}
    assert ranks[api.source("beacon_blocks")] == 0 and ranks[api.model("block_propagation_two_minute")] == 2
    assert {"from": api.source("raw_transactions"), "to": api.model("transactions"), "or_group": 0} in dag["edges"]
    assert call(f"{api.base}/api/v1/failures")[2] == {"failures": []}
    assert "invalidations" in call(f"{api.base}/api/v1/invalidations")[2]
    changes = call(f"{api.base}/api/v1/model-changes")[2]  # (the coordinator recorded the versions at its start)
    assert (changes["compared"], changes["first_deployment"], changes["changed"]) == (True, False, []), changes


@pytest.mark.parametrize(("path", "status", "field"), [
    pytest.param("/api/v1/models/nope.nothing", 404, None, id="unknown-model"),
    pytest.param("/api/v1/models/nope.nothing/coverage", 404, None, id="unknown-model-coverage"),
    pytest.param("/api/v1/models/{minute}/explain?position=abc", 422, "query.position", id="non-integer-position"),
    pytest.param("/api/v1/models/{minute}/explain", 422, "query.position", id="missing-position"),
    pytest.param("/api/v1/models/{minute}/explain?position=-5", 422, "query.position", id="negative-position"),
    pytest.param("/api/v1/models/{minute}/rendered?start=100&end=100", 400, None, id="end-not-after-start"),
    pytest.param("/api/v1/models/{minute}/rendered", 400, None, id="render-without-range"),
    pytest.param("/api/v1/models/{minute}/coverage?from=500&to=100", 400, None, id="window-backwards"),
    pytest.param("/api/v1/models/{blocks}/explain?position=1", 400, None, id="explain-an-external"),
    pytest.param("/api/v1/models/{minute}/tasks?limit=0", 422, "query.limit", id="limit-zero"),
    pytest.param("/api/v1/nothing-here", 404, None, id="unknown-path"),
])
def test_bad_input_is_a_4xx_problem_with_the_reason(api: ApiStack, path: str, status: int, field: str | None) -> None:
    url = api.base + path.format(minute=api.model("block_propagation_minute"), blocks=api.source("beacon_blocks"))
    got, content_type, body = call(url)
    assert (got, content_type) == (status, "application/problem+json")
    assert body["status"] == status and body["title"] and body["detail"] and body["type"].startswith("urn:cbt:")
    if field is not None:
        assert any(e["field"] == field for e in body["errors"]), body


def test_changes_need_a_configured_token(api: ApiStack) -> None:
    url = f"/api/v1/models/{api.model('block_propagation_minute')}/rerun"
    body = {"start": T0, "end": T0 + 60, "preview": True}
    assert api.open_base is not None
    refused = call(api.open_base + url, "POST", body, token=api.token)
    assert refused[0] == 403 and "api.auth.tokens" in refused[2]["detail"]
    for token in (None, "wrong-" + api.token):
        status, content_type, problem = call(api.base + url, "POST", body, token=token)
        assert (status, content_type) == (401, "application/problem+json"), problem
    bad = call(api.base + url, "POST", {"start": T0 + 60, "end": T0}, token=api.token)
    assert bad[0] == 400 and "end must be greater than start" in bad[2]["detail"]
    invalid = call(api.base + url, "POST", {"start": "x", "end": T0}, token=api.token)
    assert invalid[0] == 422 and invalid[2]["errors"][0]["field"] == "body.start"
    accepted = call(api.base + url, "POST", body, token=api.token)
    assert accepted[0] == 200 and accepted[2]["preview"] is True


def test_a_rerun_previews_then_publishes_and_the_range_runs_again(api: ApiStack) -> None:
    minute, two = api.model("block_propagation_minute"), api.model("block_propagation_two_minute")
    url = f"{api.base}/api/v1/models/{minute}/rerun"
    rng = {"start": T0 + 120, "end": T0 + 180}
    status, _, preview = call(url, "POST", {**rng, "preview": True}, token=api.token)
    assert status == 200 and preview["intervals"] >= 2
    assert covers(merge(tuple(r) for r in preview["affected"][minute]), (rng["start"], rng["end"]))
    assert two in preview["affected"], "the cascade reaches the dependents"
    assert api.dep.state.coverage.invalidation_seq(minute) == 0, "a preview publishes nothing"
    published_ms = int(time.time() * 1000)
    once = {"Idempotency-Key": f"e2e-{uuid.uuid4().hex}"}
    status, _, accepted = call(url, "POST", {**rng, "reason": "e2e"}, token=api.token, headers=once)
    assert status == 202 and accepted["id"].startswith("api-") and accepted["affected"] == preview["affected"]
    retried = call(url, "POST", {**rng, "reason": "e2e"}, token=api.token, headers=once)
    assert retried[0] == 202 and retried[2]["id"] == accepted["id"], "a retry publishes the same event"
    api.dep.wait_applied(accepted["id"])
    assert api.dep.state.coverage.invalidation_seq(minute) > 0, "the range was removed from coverage"
    api.dep.wait_quiet(LAST_SLOT_END)
    assert call(f"{api.base}/api/v1/models/{minute}/gaps")[2]["gaps"] == [], "and covered again"
    tasks = call(f"{api.base}/api/v1/models/{minute}/tasks?limit=50")[2]["tasks"]
    reruns = [t for t in tasks if t["direction"] == "rerun" and t["at_ms"] >= published_ms]
    assert covers(merge(tuple(t["range"]) for t in reruns), (rng["start"], rng["end"])), tasks
    recorded = call(f"{api.base}/api/v1/invalidations?model={two}")[2]["invalidations"]
    assert [i["id"] for i in recorded] == [accepted["id"]] and recorded[0]["source"] == "cbt-api"
    audit = call(f"{api.base}/api/v1/audit")[2]["actions"]
    mine = [a for a in audit if a["action"] == "rerun" and a["detail"]["id"] == accepted["id"]]
    assert len(mine) == 2, "each request is audited, the retry too (same id: one invalidation, applied once)"
    assert {m["who"] for m in mine} == {fingerprint(api.token)} and api.token not in json.dumps(audit)


def test_cors_is_closed_unless_configured(api: ApiStack) -> None:
    request = urllib.request.Request(f"{api.base}/api/v1/models", headers={"Origin": "http://elsewhere.example"})
    with urllib.request.urlopen(request, timeout=300) as response:
        assert response.status == 200 and response.headers.get("Access-Control-Allow-Origin") is None


@dataclass
class EventStream:
    """Reads ``/api/v1/events`` in a thread; ``events`` holds (event name, data) as they arrive."""

    url: str
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    connected: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        with urllib.request.urlopen(self.url, timeout=120) as response:
            self.connected.set()
            name = "message"
            for raw in response:
                line = raw.decode().rstrip("\n")
                if line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: "):
                    self.events.append((name, json.loads(line[6:])))
                    name = "message"


def test_run_now_runs_the_scheduled_model_and_the_stream_carries_its_events(api: ApiStack) -> None:
    stream = EventStream(f"{api.base}/api/v1/events")
    threading.Thread(target=stream.run, daemon=True).start()
    assert stream.connected.wait(30)
    entities = api.model("validator_entities")
    status, _, accepted = run_now(api, entities)
    assert status == 202 and accepted["task_id"].startswith(f"{entities}:@")
    fire = int(accepted["task_id"].rpartition("@")[2])
    wait_until("the run", lambda: api.dep.state.coverage.has_fired(entities, fire), timeout_s=300)
    wait_until("its events on the stream", lambda: {"task-requested", "interval-completed"} <= {
        name for name, data in stream.events if data.get("task_id") == accepted["task_id"]}, timeout_s=30)
    history = call(f"{api.base}/api/v1/models/{entities}/tasks")[2]["tasks"]
    assert any(t["scheduled_unix"] == fire and t["status"] == "success" for t in history)
    assert_schedules_show_the_latest_run_and_the_next(api, entities, fire)
    refused = call(f"{api.base}/api/v1/models/{api.model('block_propagation_minute')}/run-now", "POST",
                   token=api.token)
    assert refused[0] == 400 and "not a scheduled model" in refused[2]["detail"]


def run_now(api: ApiStack, model: str) -> tuple[int, Any, Any]:
    """POST run-now; once more a second later when the coordinator's own fire took this very second (``@every 1m``
    fires on whole seconds, and run-now names its run by the second: the 409 says that run is in flight)."""
    answer = call(f"{api.base}/api/v1/models/{model}/run-now", "POST", token=api.token)
    if answer[0] == 409 and "already in flight" in answer[2]["detail"]:
        time.sleep(1.1)
        answer = call(f"{api.base}/api/v1/models/{model}/run-now", "POST", token=api.token)
    return answer


def assert_schedules_show_the_latest_run_and_the_next(api: ApiStack, model: str, fired: int) -> None:
    """``/schedules`` (the dashboard's last and next runs): every scheduled model the deployment runs, each with its
    schedule, its latest run (this fire or a later one of the coordinator's) and the next fire after it."""
    body = call(f"{api.base}/api/v1/schedules")[2]
    listed = {item["model"]: item for item in body["models"]}
    scheduled = {m.id: m for m in api.dep.models.scheduled}
    assert set(listed) == set(scheduled)
    item = listed[model]
    assert item["enabled"] and item["schedule"] == scheduled[model].schedule
    last = item["last_run"]
    assert last is not None and last["scheduled_unix"] >= fired and last["status"] == "success", item
    assert item["next_unix"] == next_fire(item["schedule"], last["scheduled_unix"])
    assert item["is_due"] == (item["next_unix"] <= body["now_unix"])


def test_a_bounds_refresh_makes_the_bounds_cache_scan_now(api: ApiStack) -> None:
    blocks = api.source("beacon_blocks")

    def scans() -> float:
        return sum(v for labels, v in api.dep.series("bounds-cache", "cbt_bounds_scans_total").items()
                   if ("model", blocks) in labels)

    before = scans()
    status, _, body = call(f"{api.base}/api/v1/bounds/{blocks}/refresh", "POST", token=api.token)
    assert (status, body) == (202, {"model": blocks})
    key = f"{api.dep.config.redis.key_prefix}bounds-refresh"
    wait_until("the scanner to take the request", lambda: not api.dep.redis.sismember(key, blocks), timeout_s=30)
    wait_until("the scan", lambda: scans() > before, timeout_s=60)
    assert call(f"{api.base}/api/v1/bounds/{api.model('transactions')}/refresh", "POST", token=api.token)[0] == 400


def test_a_skipped_range_is_not_run_until_it_is_unskipped(api: ApiStack) -> None:
    minute, two = api.model("block_propagation_minute"), api.model("block_propagation_two_minute")
    skipped = (SOURCE_END + 30, SOURCE_END + 90)  # beyond what is covered: new rows arrive over it below
    body = {"start": skipped[0], "end": skipped[1], "reason": "e2e: broken rows"}
    assert call(f"{api.base}/api/v1/models/{minute}/skip", "POST", body)[0] == 401
    status, _, answer = call(f"{api.base}/api/v1/models/{minute}/skip", "POST", body, token=api.token)
    assert (status, answer) == (200, {"model": minute, "skipped": [list(skipped)]})

    more_end = SOURCE_END + 240
    api.dep.write_sources(SOURCE_END, more_end)
    api.dep.wait_quiet(more_end - 12 + 1)
    covered = api.dep.coverage(minute)
    assert cov.intersect(covered, (skipped,)) == (), "a skipped range is never run"
    assert covers(covered, (skipped[1], skipped[1] + 60)), "forward fill went on past it"
    view = call(f"{api.base}/api/v1/models/{minute}/coverage?from={skipped[0] - 10}&to={skipped[1] + 10}")[2]
    assert {"start": skipped[0], "end": skipped[1], "status": "skipped"} in view["ranges"]
    assert view["counts"]["skipped"] == skipped[1] - skipped[0]
    assert not covers(api.dep.coverage(two), skipped), "to a dependent it is a gap"

    status, _, answer = call(f"{api.base}/api/v1/models/{minute}/unskip", "POST", body, token=api.token)
    assert (status, answer) == (200, {"model": minute, "skipped": []})
    api.dep.wait_quiet(more_end - 12 + 1)
    assert covers(api.dep.coverage(minute), skipped) and covers(api.dep.coverage(two), skipped), "filled once unskipped"
    audit = call(f"{api.base}/api/v1/audit")[2]["actions"]
    assert {(a["action"], a["detail"]["start"]) for a in audit if a["target"] == minute} >= {
        ("skip", skipped[0]), ("unskip", skipped[0])}
    refused = call(f"{api.base}/api/v1/models/{api.source('beacon_blocks')}/skip", "POST", body, token=api.token)
    assert refused[0] == 400 and "not an incremental model" in refused[2]["detail"]

@pytest.fixture(scope="module")
def api_schema(api: ApiStack) -> Any:
    """The OpenAPI document the api process serves."""
    import schemathesis

    return schemathesis.openapi.from_url(f"{api.base}/api/v1/openapi.json")


@functools.cache
def _schemathesis_checks() -> list[Any]:
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import (
        content_type_conformance,
        response_schema_conformance,
        status_code_conformance,
    )

    return [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


def _lazy_schema() -> Any:
    import schemathesis

    return schemathesis.pytest.from_fixture("api_schema").exclude(path="/api/v1/events")  # (a stream never ends)


_EXAMPLES = itertools.count()


@_lazy_schema().parametrize()
@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck), database=None)
def test_schemathesis_finds_no_server_error_and_no_response_outside_the_schema(case: Any, api: ApiStack) -> None:
    """Property-based requests to every operation; two of three name a model of the deployment (random ids only
    reach the 404 path), so real responses are checked against the schema too. Changes go without a token (401, as
    documented); a modest example count per operation keeps the run short."""
    if "model_id" in (case.path_parameters or {}) and next(_EXAMPLES) % 3:
        ids = sorted(api.dep.models.models)
        case.path_parameters["model_id"] = ids[next(_EXAMPLES) % len(ids)]
    case.call_and_validate(checks=_schemathesis_checks(), timeout=120)  # (admin-table reads on a busy Spark)
