"""With read tokens set, in a real Chromium against a lone api process (real Kafka, Redis, Spark Connect): a page
sends the browser to the login form, the token signs it in, and the pages, their API calls and the live event stream
work on the session cookie; ``/docs`` renders the OpenAPI document with Swagger UI from the api's own files — no
request leaves the api's origin."""

from __future__ import annotations

import json
import urllib.parse
import uuid
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, Request

from cbt.adapters.spark import SessionPool
from tests.browser.conftest import PageErrors, screenshot
from tests.conftest import Endpoints
from tests.e2e.api_stack import lone_api

pytestmark = pytest.mark.e2e

READ = f"read-{uuid.uuid4().hex}"


@pytest.fixture(scope="module")
def base(endpoints: Endpoints, spark_sessions: SessionPool) -> Iterator[str]:
    overrides = {"CBT__API__AUTH__TOKENS": json.dumps([f"write-{uuid.uuid4().hex}"]),
                 "CBT__API__AUTH__READ_TOKENS": json.dumps([READ])}
    with lone_api(endpoints, spark_sessions, overrides) as (url, _):
        yield url


def origins_of(page: Page) -> set[str]:
    """Every origin the page asks anything of, from now on."""
    seen: set[str] = set()

    def record(request: Request) -> None:
        parts = urllib.parse.urlsplit(request.url)
        seen.add(f"{parts.scheme}://{parts.netloc}")

    page.on("request", record)
    return seen


def sign_in(page: Page, base: str, path: str) -> None:
    page.goto(base + path)
    page.wait_for_url(f"{base}/login?next={urllib.parse.quote(path, safe='')}")
    page.fill("input[name=token]", READ)
    page.click("button[type=submit]")
    page.wait_for_url(base + path)


def test_a_page_asks_for_the_token_then_works_on_the_session_cookie(base: str, page: Page,
                                                                    page_errors: PageErrors) -> None:
    page_errors.expected_failures.append(("/login", 401))  # (the wrong token's answer)
    origins = origins_of(page)
    page.goto(base + "/dag")
    page.wait_for_url(f"{base}/login?next=%2Fdag")
    page.fill("input[name=token]", "x" * 40)
    page.click("button[type=submit]")
    page.locator(".problem").wait_for()
    assert "not one of the configured tokens" in page.inner_text(".problem")
    screenshot(page, "login-refused")
    sign_in(page, base, "/dag")
    page.wait_for_selector("#live[data-state=live]")  # the event stream opened with the cookie
    page.wait_for_selector(".dag svg")
    screenshot(page, "dag-signed-in")
    assert origins == {base}
    cookie = next(c for c in page.context.cookies() if c["name"] == "cbt_session")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Lax" and READ not in cookie["value"]


def test_docs_render_the_openapi_document_from_local_assets_only(base: str, page: Page) -> None:
    origins = origins_of(page)
    sign_in(page, base, "/docs")
    page.wait_for_selector(".swagger-ui .info .title")
    assert "cbt" in page.inner_text(".swagger-ui .info .title")
    assert page.locator(".opblock-tag-section").count() >= 3  # the models, state and actions groups
    assert page.locator(".opblock").count() > 10
    assert not page.locator(".swagger-ui .errors-wrapper").count()
    screenshot(page, "docs", full_page=False)
    assert origins == {base}, origins
