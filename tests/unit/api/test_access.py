"""Reads behind a token (``api.auth.read_tokens``), over the whole app on stand-in ports: without a token the API is
401 and a page redirects to the login form; a read or write token opens every read; the login form sets a session
cookie good for reads only; static assets and the login form stay open; nothing changes when no read token is set."""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

import pytest

from cbt.api.access.auth import SESSION_COOKIE
from cbt.api.context import ApiContext
from cbt.api.events import EventHub
from cbt.api.offline import Offline
from cbt.api.web import create_app
from cbt.config.settings import Config
from cbt.models.dag import ModelSet
from tests.unit.api.asgi import Answer, call

WRITE = "w" * 32
READ = "r" * 32
FORM = {"content-type": "application/x-www-form-urlencoded"}


def make_app(read_tokens: list[str], **api: Any) -> Any:
    config = Config.model_validate({"api": {"auth": {"tokens": [WRITE], "read_tokens": read_tokens}, **api}})
    return create_app(ApiContext(config=config, models=ModelSet({}), hot=Offline(), refresh=Offline(),
                                 admin=Offline(), commands=Offline(), events=EventHub()))


@pytest.fixture(scope="module")
def app() -> Any:
    return make_app([READ])


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def login(app: Any, token: str, next_path: str = "/") -> Answer:
    return call(app, "POST", "/login", FORM, urllib.parse.urlencode({"token": token, "next": next_path}).encode())


@pytest.mark.parametrize("path", ["/api/v1/openapi.json", "/api/v1/models", "/api/v1/events",
                                  "/api/v1/models/x/rendered", "/cbt/api/v1/models"])
def test_the_api_without_a_token_is_401_problem(app: Any, path: str) -> None:
    answer = call(app, "GET", path)
    assert (answer.status, answer.headers["content-type"], answer.headers["www-authenticate"]) == (
        401, "application/problem+json", "Bearer")
    assert "api.auth.read_tokens" in json.loads(answer.body)["detail"]


@pytest.mark.parametrize(("path", "login_at"), [
    ("/", "/login?next=%2F"), ("/dag", "/login?next=%2Fdag"), ("/docs", "/login?next=%2Fdocs"),
    ("/models/a.b?position=3", "/login?next=%2Fmodels%2Fa.b%3Fposition%3D3"),
])
def test_a_page_without_a_token_redirects_to_the_login_form(app: Any, path: str, login_at: str) -> None:
    answer = call(app, "GET", path)
    assert (answer.status, answer.headers["location"]) == (303, login_at)


@pytest.mark.parametrize("token", [READ, WRITE], ids=["read-token", "write-token"])
@pytest.mark.parametrize("path", ["/api/v1/openapi.json", "/docs", "/dag"])
def test_a_read_or_write_token_opens_every_read(app: Any, token: str, path: str) -> None:
    assert call(app, "GET", path, bearer(token)).status == 200


@pytest.mark.parametrize("token", ["x" * 32, READ[:-1], f"{READ} {READ}"], ids=["unknown", "prefix", "doubled"])
def test_any_other_token_is_refused(app: Any, token: str) -> None:
    assert call(app, "GET", "/api/v1/openapi.json", bearer(token)).status == 401


def test_a_read_token_may_not_change_anything(app: Any) -> None:
    body = json.dumps({"start": 0, "end": 60}).encode()
    answer = call(app, "POST", "/api/v1/models/a.b/rerun", {**bearer(READ), "content-type": "application/json"},
                  body)
    assert (answer.status, json.loads(answer.body)["title"]) == (403, "Read-only token")


@pytest.mark.parametrize("path", ["/login", "/ui/static/css/ui.css", "/ui/static/img/favicon.svg"])
def test_the_login_form_and_static_assets_are_open(app: Any, path: str) -> None:
    assert call(app, "GET", path).status == 200


def test_signing_in_sets_a_session_cookie_for_reads_only(app: Any) -> None:
    signed_in = login(app, READ, "/dag")
    assert (signed_in.status, signed_in.headers["location"]) == (303, "/dag")
    cookie = signed_in.headers["set-cookie"]
    assert cookie.startswith(f"{SESSION_COOKIE}=v2.") and READ not in cookie
    assert "HttpOnly" in cookie and "SameSite=lax" in cookie and "Path=/" in cookie and "Max-Age=43200" in cookie
    assert "Secure" not in cookie  # (over plain HTTP: a browser would not send a Secure cookie back)
    session = {"Cookie": cookie.split(";")[0]}
    for path in ("/dag", "/docs", "/api/v1/openapi.json"):
        assert call(app, "GET", path, session).status == 200, path
    changed = call(app, "POST", "/api/v1/models/a.b/rerun", {**session, "content-type": "application/json"},
                   b'{"start": 0, "end": 60}')
    assert changed.status == 401  # a cookie never authorises a change (another site could make the browser send it)
    assert call(app, "GET", "/dag", {"Cookie": f"{SESSION_COOKIE}={READ}"}).status == 303  # the token is not a session


def test_a_wrong_token_at_the_login_form_is_401_and_the_form_again(app: Any) -> None:
    answer = login(app, "x" * 32)
    assert answer.status == 401 and "set-cookie" not in answer.headers
    assert b"not one of the configured tokens" in answer.body and b'name="token"' in answer.body


@pytest.mark.parametrize("next_path", ["//evil.example/x", "https://evil.example/", "/\\evil.example", ""])
def test_after_signing_in_the_browser_stays_on_this_server(app: Any, next_path: str) -> None:
    assert login(app, WRITE, next_path).headers["location"] == "/"


def test_signing_out_removes_the_cookie_and_ends_the_session(app: Any) -> None:
    """Before, signing out only asked the browser to forget the cookie: a copy of it kept working for good."""
    session = {"Cookie": login(app, READ).headers["set-cookie"].split(";")[0]}
    assert call(app, "GET", "/dag", session).status == 200
    answer = call(app, "POST", "/logout", session)
    assert answer.status == 303 and answer.headers["location"] == "/login"
    assert answer.headers["set-cookie"].startswith(f'{SESSION_COOKIE}=""') and "Max-Age=0" in \
        answer.headers["set-cookie"]
    assert call(app, "GET", "/dag", session).status == 303  # the copy no longer signs in
    assert call(app, "GET", "/api/v1/openapi.json", session).status == 401


def test_the_cookie_is_secure_when_the_browser_reached_the_proxy_over_https() -> None:
    """Behind a proxy listed in api.forwarded_allow_ips, uvicorn takes the scheme from X-Forwarded-Proto: a browser
    on HTTPS gets a Secure cookie though the proxy talks HTTP to the api."""
    from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

    behind_proxy = ProxyHeadersMiddleware(make_app([READ]), trusted_hosts=["10.0.0.0/8"])
    form = {**FORM, "X-Forwarded-Proto": "https", "X-Forwarded-For": "198.51.100.9"}
    body = urllib.parse.urlencode({"token": READ, "next": "/"}).encode()
    through_proxy = call(behind_proxy, "POST", "/login", form, body, client="10.1.2.3")
    assert "Secure" in through_proxy.headers["set-cookie"]
    from_anyone = call(behind_proxy, "POST", "/login", form, body, client="203.0.113.50")
    assert "Secure" not in from_anyone.headers["set-cookie"]  # (a client cannot claim HTTPS for itself)


def test_without_read_tokens_reads_stay_open() -> None:
    app = make_app([])
    for path in ("/dag", "/docs", "/api/v1/openapi.json"):
        assert call(app, "GET", path).status == 200, path
    assert call(app, "GET", "/login?next=/dag").headers["location"] == "/dag"


def test_a_cors_preflight_needs_no_token() -> None:
    app = make_app([READ], cors_origins=["https://ui.example"])
    answer = call(app, "OPTIONS", "/api/v1/models", {"Origin": "https://ui.example",
                                                      "Access-Control-Request-Method": "GET",
                                                      "Access-Control-Request-Headers": "authorization"})
    assert answer.status == 200 and answer.headers["access-control-allow-origin"] == "https://ui.example"


def test_the_rate_limit_counts_a_token_apart_from_its_address_and_a_made_up_token_as_its_address() -> None:
    app = make_app([READ], rate_limit={"per_client_per_s": 0.001, "burst": 2})
    made_up = bearer("x" * 32)
    assert [call(app, "GET", "/login", made_up).status for _ in range(3)] == [200, 200, 429]
    assert call(app, "GET", "/login").status == 429  # the same address, no token
    assert [call(app, "GET", "/login", bearer(READ)).status for _ in range(3)] == [200, 200, 429]
    assert call(app, "GET", "/login", bearer(WRITE)).status == 200
    assert call(app, "GET", "/login", client="198.51.100.1").status == 200
