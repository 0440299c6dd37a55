"""A caught-up deployment of the example pipeline with an api process in front of it, for the api e2e tests and
the browser tests: the services as separate processes on the real Kafka, Redis and Spark Connect, one api with a
token (and, when asked, a second one with none configured), and a small HTTP client for ``/api/v1``."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from cbt.adapters.spark import SessionPool
from cbt.dev.pipeline import ServiceProcesses, free_port
from tests.conftest import Endpoints
from tests.e2e.harness import CONFIG, Deployment, isolated_deployment

PIPELINE = ("coordinator", "worker", "bounds-cache", "invalidator")
UNHURRIED = {"CBT__API__RATE_LIMIT__PER_CLIENT_PER_S": "10000", "CBT__API__RATE_LIMIT__BURST": "100000"}
"""The api's rate limit, out of the way: schemathesis and the browser drive every route from one address as fast as
they can (thousands of requests), which is the suites' point and no person's pace; the limit itself is tested with a
tight one (``tests/integration/test_api_access.py``, ``tests/unit/api/test_limits.py``)."""


def call(url: str, method: str = "GET", body: object = None, token: str | None = None,
         timeout_s: float = 120, headers: dict[str, str] | None = None) -> tuple[int, str, Any]:
    """(status, content type, parsed JSON body) of one request; error answers are returned, not raised."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return response.status, response.headers.get("Content-Type", ""), json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), json.loads(e.read())


def wait_until(what: str, check: Callable[[], Any], timeout_s: float = 120, pause_s: float = 0.5) -> Any:
    """``check()``'s first truthy value, polled until ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(pause_s)
    raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what}")


@dataclass
class ApiStack:
    """The api's base URL over one deployment, the token it accepts for changes, and the deployment itself."""

    base: str
    token: str
    dep: Deployment
    open_base: str | None = None
    """An api process of the same deployment without any token configured, when one was asked for."""

    def model(self, table: str) -> str:
        return f"{self.dep.output_db}.{table}"

    def source(self, table: str) -> str:
        return f"{self.dep.source_db}.{table}"

    def api(self, path: str, body: object = None, token: str | None = None) -> tuple[int, Any]:
        """(status, JSON body) of one ``/api/v1`` request, a POST when it has a body."""
        status, _, answer = call(f"{self.base}/api/v1{path}", "GET" if body is None else "POST", body, token)
        return status, answer

    def get(self, path: str) -> Any:
        status, body = self.api(path)
        assert status == 200, (path, status, body)
        return body


def start_api(procs: ServiceProcesses, key: str) -> None:
    procs.start("api", key)
    wait_until(f"api{key} to be ready", timeout_s=300,
               check=lambda: (r := procs.readiness(f"api{key}")) and all(v == "ok" for v in r.values()))


@contextmanager
def api_deployment(endpoints: Endpoints, spark_sessions: SessionPool, *, t0: int, source_end: int,
                   last_slot_end: int, disabled: tuple[str, ...], tokenless: bool = False) -> Iterator[ApiStack]:
    """The example pipeline without the models in ``disabled``, over source rows ``[t0, source_end)``, caught up
    to ``last_slot_end``; removed again (processes, databases, keys, topics) on the way out."""
    port, open_port, token = free_port(), free_port(), f"api-{uuid.uuid4().hex}"
    overrides = {"CBT__API__ADDR": f"127.0.0.1:{port}", "CBT__API__AUTH__TOKENS": json.dumps([token]),
                 **UNHURRIED,
                 # no scheduled consolidation: at a wall clock's ten minutes it rewrote the task history a test
                 # was about to read (the api's own consolidate route still works)
                 "CBT__SCHEDULER__CONSOLIDATION": "",
                 "CBT__MODELS__OVERRIDES": "{" + ", ".join(f"{m}: {{enabled: false}}" for m in disabled) + "}"}
    with isolated_deployment(endpoints.kafka_bootstrap, endpoints.redis_url, spark_sessions.session("tests"),
                             endpoints.spark_remote, f"tapi{uuid.uuid4().hex[:8]}", overrides) as dep:
        without_token = ServiceProcesses(CONFIG, {**dep.overrides, "CBT__API__ADDR": f"127.0.0.1:{open_port}",
                                                  "CBT__API__AUTH__TOKENS": "[]"}, dep.log_dir)
        try:
            dep.create_tables()
            dep.write_entities()
            dep.write_sources(t0, source_end)
            dep.start(*PIPELINE)
            start_api(dep.procs, "")
            if tokenless:
                start_api(without_token, "-open")
            dep.wait_quiet(last_slot_end, timeout_s=900)
            yield ApiStack(f"http://127.0.0.1:{port}", token, dep,
                           f"http://127.0.0.1:{open_port}" if tokenless else None)
        finally:
            without_token.stop_all()


@contextmanager
def lone_api(endpoints: Endpoints, spark_sessions: SessionPool, api_overrides: dict[str, str]) -> Iterator[
        tuple[str, Deployment]]:
    """An api process alone (no pipeline, no data: models as configured, empty state) on an isolated deployment,
    ready; its base URL and the deployment. For what the api decides by itself: access, limits, ``/docs``."""
    port = free_port()
    with isolated_deployment(endpoints.kafka_bootstrap, endpoints.redis_url, spark_sessions.session("tests"),
                             endpoints.spark_remote, f"tlone{uuid.uuid4().hex[:8]}",
                             {"CBT__API__ADDR": f"127.0.0.1:{port}", **api_overrides}) as dep:
        start_api(dep.procs, "")
        yield f"http://127.0.0.1:{port}", dep
