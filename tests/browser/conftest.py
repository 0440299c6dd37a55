"""Browser tests of the web UI: Debian's Chromium driven by Playwright for Python, against the api process of a real
deployment of the example pipeline (Kafka, Redis, Spark Connect; separate service processes), built once per module.

Chromium is the system package (``deploy/local/install-system-deps.sh`` installs it); Playwright's own browser
download is never used. Each page a test visits is screenshotted under ``var/screenshots/``.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, Playwright, sync_playwright
from redis import Redis

from cbt.adapters.kafka_admin import delete_topics
from cbt.adapters.spark import SessionPool
from cbt.contract.topics import Topics
from cbt.dev.pipeline import free_port
from tests.conftest import Endpoints
from tests.e2e.harness import PROJECT, T0, Deployment, overrides_for

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
SCREENSHOTS = PROJECT / "var" / "screenshots"
VIEWPORT = {"width": 1280, "height": 800}
SOURCE_END = T0 + 300
"""Five minutes of source rows: every model covers some of it, and the interval grids leave missing tails."""
LAST_SLOT_END = SOURCE_END - 12 + 1


@dataclass
class UiStack:
    """The api's base URL over one deployment, and the token it accepts for changes."""

    base: str
    token: str
    dep: Deployment

    def model(self, table: str) -> str:
        return f"{self.dep.output_db}.{table}"

    def source(self, table: str) -> str:
        return f"{self.dep.source_db}.{table}"

    def api(self, path: str, body: object = None, token: str | None = None) -> tuple[int, Any]:
        """(status, JSON body) of one /api/v1 request; error answers are returned, not raised."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.base}/api/v1{path}", data=data, method="POST" if data else "GET")
        request.add_header("Content-Type", "application/json")
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def get(self, path: str) -> Any:
        status, body = self.api(path)
        assert status == 200, (path, status, body)
        return body


def wait_until(what: str, check: Callable[[], Any], timeout_s: float = 120, pause_s: float = 0.5) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(pause_s)
    raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what}")


@pytest.fixture(scope="module")
def stack(endpoints: Endpoints, spark_sessions: SessionPool) -> Iterator[UiStack]:
    """The example pipeline over five minutes of source rows, caught up, with an api process in front of it. The
    exec model (block_gas) is left out: each of its tasks starts a Python process and a Spark session, and no page
    needs it to be tested."""
    spark = spark_sessions.session("tests")
    tag = f"tb{uuid.uuid4().hex[:8]}"
    redis = Redis.from_url(endpoints.redis_url)
    port, token = free_port(), f"ui-{uuid.uuid4().hex}"
    overrides = {**overrides_for(tag, endpoints.kafka_bootstrap, endpoints.redis_url, endpoints.spark_remote),
                 "CBT__API__ADDR": f"127.0.0.1:{port}", "CBT__API__AUTH__TOKENS": json.dumps([token]),
                 "CBT__MODELS__OVERRIDES": "{block_gas: {enabled: false}}"}
    dep = Deployment(spark, redis, overrides, PROJECT / "var" / "e2e-logs" / tag)
    try:
        dep.create_tables()
        dep.write_entities()
        dep.write_sources(T0, SOURCE_END)
        dep.start("coordinator", "worker", "bounds-cache", "invalidator", "api")
        dep.wait_quiet(LAST_SLOT_END)
        wait_until("the api to be ready", timeout_s=300,
                   check=lambda: (r := dep.procs.readiness("api")) and all(v == "ok" for v in r.values()))
        yield UiStack(f"http://127.0.0.1:{port}", token, dep)
    finally:
        dep.stop()
        for database in dep.databases():
            spark.sql(f"DROP DATABASE IF EXISTS `{database}` CASCADE")
        keys = list(redis.scan_iter(match=f"{tag}:*"))
        if keys:
            redis.delete(*keys)
        delete_topics(endpoints.kafka_bootstrap, Topics(f"{tag}.").all(("default", *dep.config.worker.pools)))
        redis.close()


@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    """Module-scoped, not session-scoped: Playwright's sync API keeps an asyncio loop running in the main thread
    until it stops, and every later test that calls asyncio.run() would fail."""
    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    assert CHROMIUM.is_file(), f"{CHROMIUM} is missing: run `make system-deps` (Debian's chromium package)"
    browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
    yield browser
    browser.close()


@dataclass
class PageErrors:
    """Uncaught exceptions and console errors of a page: a UI bug must fail the test that met it."""

    errors: list[str] = field(default_factory=list)
    expected: list[str] = field(default_factory=list)
    """Substrings of console errors a test provokes on purpose (a 401 answer logs a failed resource load)."""

    def console(self, message: ConsoleMessage) -> None:
        if message.type == "error" and not any(e in message.text for e in self.expected):
            self.errors.append(f"console: {message.text}")


@pytest.fixture
def page_errors() -> PageErrors:
    return PageErrors()


@pytest.fixture
def page(browser: Browser, page_errors: PageErrors) -> Iterator[Page]:
    context = browser.new_context(viewport=VIEWPORT)  # type: ignore[arg-type]
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.on("pageerror", lambda error: page_errors.errors.append(f"uncaught: {error}"))
    page.on("console", page_errors.console)
    yield page
    context.close()
    assert not page_errors.errors, page_errors.errors


def screenshot(page: Page, name: str, full_page: bool = False) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path
