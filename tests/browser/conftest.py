"""Browser tests of the web UI: Debian's Chromium driven by Playwright for Python, against the api process of a real
deployment of the example pipeline (Kafka, Redis, Spark Connect; separate service processes), built once per module.

Chromium is the system package (``deploy/local/install-system-deps.sh`` installs it); Playwright's own browser
download is never used. Each page a test visits is screenshotted under ``var/screenshots/``; the screenshots the docs
show are copied into ``docs/img/`` too, but only when ``CBT_UPDATE_DOCS_SCREENSHOTS=1`` is set (``docs_screenshot``),
so an ordinary test run leaves the tracked images alone.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, Playwright, Request, Response, sync_playwright

from cbt.adapters.spark import SessionPool
from tests.conftest import Endpoints
from tests.e2e.api_stack import ApiStack, api_deployment
from tests.e2e.harness import PROJECT, T0

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
SCREENSHOTS = PROJECT / "var" / "screenshots"
DOCS_IMAGES = PROJECT / "docs" / "img"
UPDATE_DOCS_SCREENSHOTS = "CBT_UPDATE_DOCS_SCREENSHOTS"
"""Set to 1 to have ``docs_screenshot`` copy its screenshots into ``docs/img/`` (then review and commit them)."""
VIEWPORT = {"width": 1280, "height": 800}
SOURCE_END = T0 + 300
"""Five minutes of source rows: every model covers some of it, and the interval grids leave missing tails."""
LAST_SLOT_END = SOURCE_END - 12 + 1


@pytest.fixture(scope="module")
def stack(endpoints: Endpoints, spark_sessions: SessionPool) -> Iterator[ApiStack]:
    """The example pipeline over five minutes of source rows, caught up, with an api process in front of it. The
    exec model (block_gas) is left out: each of its tasks starts a Python process and a Spark session, and no page
    needs it to be tested."""
    with api_deployment(endpoints, spark_sessions, t0=T0, source_end=SOURCE_END, last_slot_end=LAST_SLOT_END,
                        disabled=("block_gas",)) as deployment:
        yield deployment


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
    """Uncaught exceptions, console errors and failed requests of a page: a UI bug must fail the test that met it.
    A request answered 4xx or 5xx fails the test unless the test said it expects exactly that answer to that path
    (``expected_failures``); the console line a failed load logs is judged by its request, not by its text."""

    errors: list[str] = field(default_factory=list)
    expected: list[str] = field(default_factory=list)
    """Substrings of console errors (not failed loads) a test provokes on purpose."""
    expected_failures: list[tuple[str, int]] = field(default_factory=list)
    """(a substring of the URL, the status) of each failing request a test provokes on purpose."""

    def console(self, message: ConsoleMessage) -> None:
        if message.type != "error" or message.text.startswith("Failed to load resource"):
            return
        if not any(e in message.text for e in self.expected):
            self.errors.append(f"console: {message.text}")

    def response(self, response: Response) -> None:
        if response.status >= 400 and not any(path in response.url and status == response.status
                                              for path, status in self.expected_failures):
            self.errors.append(f"request: {response.request.method} {response.url} answered {response.status}")

    def request_failed(self, request: Request) -> None:
        failure = request.failure or ""
        if "ERR_ABORTED" not in failure:  # (a stream or fetch cut short by leaving the page is no failure)
            self.errors.append(f"request: {request.method} {request.url} failed: {failure}")


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
    page.on("response", page_errors.response)
    page.on("requestfailed", page_errors.request_failed)
    yield page
    context.close()
    assert not page_errors.errors, page_errors.errors


def screenshot(page: Page, name: str, full_page: bool = False, element: str | None = None) -> Path:
    """``var/screenshots/<name>.png``: the viewport, the whole page, or only the ``element`` selected."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    if element is not None:
        page.locator(element).screenshot(path=str(path))
    else:
        page.screenshot(path=str(path), full_page=full_page)
    return path


def docs_screenshot(page: Page, name: str, full_page: bool = False, element: str | None = None) -> Path:
    """A screenshot the docs show: taken like the others (``var/screenshots/<name>.png``), and copied to
    ``docs/img/<name>.png`` only when ``CBT_UPDATE_DOCS_SCREENSHOTS=1``."""
    path = screenshot(page, name, full_page, element)
    if os.environ.get(UPDATE_DOCS_SCREENSHOTS) == "1":
        DOCS_IMAGES.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, DOCS_IMAGES / f"{name}.png")
    return path
