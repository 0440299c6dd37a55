"""The api process on real Kafka, Redis and Spark Connect with read tokens and a tight rate limit: reads without a
token are refused (401 for the API and its event stream, a redirect to the login form for pages and ``/docs``) while
the probes and metrics stay open; a read or a write token reads everything, a read token changes nothing; the login
form's session cookie opens the pages, the event stream and ``/docs``; and a client past its rate limit gets 429 with
``Retry-After`` while other clients go on. Only the api runs: nothing here needs the pipeline."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from redis import Redis

from cbt.adapters.session_revocations import RedisSessionRevocations
from cbt.adapters.spark import SessionPool
from tests.conftest import Endpoints
from tests.e2e.api_stack import lone_api
from tests.e2e.harness import Deployment

WRITE = f"write-{uuid.uuid4().hex}"
READ = f"read-{uuid.uuid4().hex}"
HAMMER = f"hammer-{uuid.uuid4().hex}"
"""A read token only the rate-limit test uses: its bucket is its own."""
BURST = 20


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> dict[str, object]:
        return dict(json.loads(self.body))


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *_: object, **__: object) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirects)


def request(url: str, method: str = "GET", headers: dict[str, str] | None = None, body: bytes | None = None,
            read: bool = True) -> Answer:
    """One request, redirects not followed; an event stream is not read (``read=False``: its headers only)."""
    try:
        with _OPENER.open(urllib.request.Request(url, data=body, method=method, headers=headers or {}),
                          timeout=60) as response:
            return Answer(response.status, {k.lower(): v for k, v in response.headers.items()},
                          response.read() if read else b"")
    except urllib.error.HTTPError as e:
        return Answer(e.code, {k.lower(): v for k, v in e.headers.items()}, e.read())


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@dataclass(frozen=True)
class Api:
    base: str
    dep: Deployment

    def get(self, path: str, headers: dict[str, str] | None = None, read: bool = True) -> Answer:
        return request(self.base + path, headers=headers, read=read)


@pytest.fixture(scope="module")
def api(endpoints: Endpoints, spark_sessions: SessionPool) -> Iterator[Api]:
    overrides = {"CBT__API__AUTH__TOKENS": json.dumps([WRITE]),
                 "CBT__API__AUTH__READ_TOKENS": json.dumps([READ, HAMMER]),
                 "CBT__API__RATE_LIMIT__PER_CLIENT_PER_S": "0.5", "CBT__API__RATE_LIMIT__BURST": str(BURST)}
    with lone_api(endpoints, spark_sessions, overrides) as (base, dep):
        yield Api(base, dep)


def test_without_a_token_reads_are_refused_but_probes_and_metrics_answer(api: Api) -> None:
    for path in ("/api/v1/models", "/api/v1/openapi.json", "/api/v1/events"):
        refused = api.get(path)
        assert (refused.status, refused.headers["content-type"], refused.headers["www-authenticate"]) == (
            401, "application/problem+json", "Bearer"), path
    for path in ("/", "/dag", "/docs"):
        redirected = api.get(path)
        assert (redirected.status, redirected.headers["location"]) == (
            303, f"/login?next={urllib.parse.quote(path, safe='')}"), path
    assert api.get("/login").status == 200 and api.get("/ui/static/css/ui.css").status == 200
    assert api.dep.procs.readiness("api") == {k: "ok" for k in api.dep.procs.readiness("api") or {}}
    assert api.dep.procs.metrics("api")  # /metrics answers without a token


@pytest.mark.parametrize("token", [READ, WRITE], ids=["read-token", "write-token"])
def test_a_read_or_write_token_reads_the_api_the_stream_and_the_pages(api: Api, token: str) -> None:
    models = api.get("/api/v1/models", bearer(token))
    assert models.status == 200 and models.json()["models"], models.body[:200]
    stream = api.get("/api/v1/events", bearer(token), read=False)
    assert (stream.status, stream.headers["content-type"].split(";")[0]) == (200, "text/event-stream")
    for path in ("/dag", "/docs"):
        assert api.get(path, bearer(token)).status == 200, path


def test_a_read_token_changes_nothing_and_a_write_token_still_may(api: Api) -> None:
    model = api.dep.models.incrementals[0].id
    url = f"{api.base}/api/v1/models/{model}/rerun"
    body = json.dumps({"start": 120, "end": 60}).encode()  # an empty range: refused before anything is published
    headers = {"Content-Type": "application/json"}
    read_only = request(url, "POST", {**headers, **bearer(READ)}, body)
    assert (read_only.status, read_only.json()["title"]) == (403, "Read-only token")
    written = request(url, "POST", {**headers, **bearer(WRITE)}, body)
    assert written.status == 400 and "half-open" in str(written.json()["detail"])


def test_the_login_forms_cookie_opens_the_pages_the_stream_and_docs_but_no_change(api: Api) -> None:
    form = urllib.parse.urlencode({"token": READ, "next": "/dag"}).encode()
    signed_in = request(f"{api.base}/login", "POST", {"Content-Type": "application/x-www-form-urlencoded"}, form)
    assert (signed_in.status, signed_in.headers["location"]) == (303, "/dag")
    cookie = signed_in.headers["set-cookie"].split(";")[0]
    assert READ not in cookie and "HttpOnly" in signed_in.headers["set-cookie"]
    session = {"Cookie": cookie}
    assert api.get("/dag", session).status == 200 and api.get("/docs", session).status == 200
    assert api.get("/api/v1/models", session).status == 200
    assert api.get("/api/v1/events", session, read=False).status == 200
    change = request(f"{api.base}/api/v1/bounds/x/refresh", "POST", session)
    assert change.status == 401
    wrong = request(f"{api.base}/login", "POST", {"Content-Type": "application/x-www-form-urlencoded"},
                    urllib.parse.urlencode({"token": "x" * 40}).encode())
    assert wrong.status == 401 and "set-cookie" not in wrong.headers


def test_signing_out_revokes_the_session_in_redis_for_every_replica(api: Api) -> None:
    """The cookie of a signed-out browser stops working, here and — through Redis — on any other replica."""
    form = urllib.parse.urlencode({"token": READ, "next": "/"}).encode()
    cookie = request(f"{api.base}/login", "POST", {"Content-Type": "application/x-www-form-urlencoded"},
                     form).headers["set-cookie"].split(";")[0]
    session = {"Cookie": cookie}
    assert api.get("/api/v1/models", session).status == 200
    assert request(f"{api.base}/logout", "POST", session).status == 303
    assert api.get("/api/v1/models", session).status == 401
    nonce = cookie.split(".")[2]
    stored = RedisSessionRevocations(api.dep.redis, api.dep.config.redis.key_prefix)
    deadline = time.monotonic() + 10
    while nonce not in stored.current(int(time.time())) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert nonce in stored.current(int(time.time()))


def test_the_redis_revocations_keep_a_session_until_it_would_have_expired(redis_client: Redis,
                                                                           redis_prefix: str) -> None:
    store = RedisSessionRevocations(redis_client, f"{redis_prefix}revocations-{uuid.uuid4().hex[:6]}:")
    store.add("a" * 32, 1_700_000_100)
    store.add("b" * 32, 1_700_000_200)
    assert store.current(1_700_000_100) == {"a" * 32: 1_700_000_100, "b" * 32: 1_700_000_200}
    assert store.current(1_700_000_101) == {"b" * 32: 1_700_000_200}
    assert store.current(1_700_000_000) == {"b" * 32: 1_700_000_200}, "an expired one is forgotten for good"


def test_past_its_rate_limit_a_client_gets_429_with_retry_after_and_others_go_on(api: Api) -> None:
    answers = [api.get("/api/v1/openapi.json", bearer(HAMMER)) for _ in range(BURST + 5)]
    statuses = [a.status for a in answers]
    assert statuses.count(200) >= BURST and 429 in statuses, statuses
    limited = next(a for a in answers if a.status == 429)
    assert int(limited.headers["retry-after"]) >= 1 and limited.headers["content-type"] == "application/problem+json"
    assert limited.json()["type"] == "urn:cbt:problem:too-many-requests"
    assert "api.rate_limit" in str(limited.json()["detail"])
    assert api.get("/api/v1/openapi.json", bearer(READ)).status == 200  # another client: its own bucket


def test_behind_a_listed_proxy_each_forwarded_address_is_its_own_client(api: Api) -> None:
    """The test talks from 127.0.0.1, which ``api.forwarded_allow_ips`` lists by default (as a proxy on the same host
    would be): ``X-Forwarded-For`` names the client, so one address past its limit leaves another untouched."""
    statuses = [api.get("/login", {"X-Forwarded-For": "198.51.100.7"}).status for _ in range(BURST + 5)]
    assert statuses.count(200) >= BURST and 429 in statuses, statuses
    assert api.get("/login", {"X-Forwarded-For": "198.51.100.8"}).status == 200
