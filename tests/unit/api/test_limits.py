"""The api's request limits, driven as an ASGI server would: a too-large body is refused before the app reads it, too
many requests or event streams at once are answered 503, a client past its rate limit 429, and every response carries
the security headers."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from cbt.api.access.limits import RequestLimits
from cbt.config.settings import ApiRateLimit
from tests.unit.api.asgi import request


class Recorder:
    """An inner app that reads the whole body and answers 200 with its size; optionally waits until released."""

    def __init__(self, hold: asyncio.Event | None = None) -> None:
        self.calls = 0
        self.hold = hold

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.calls += 1
        size = 0
        while scope["method"] == "POST":
            message = await receive()
            size += len(message.get("body", b""))
            if not message.get("more_body"):
                break
        if self.hold is not None:
            await self.hold.wait()
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"x-frame-options", b"SAMEORIGIN")]})
        await send({"type": "http.response.body", "body": json.dumps({"size": size}).encode()})


async def call(app: Any, method: str = "POST", path: str = "/api/v1/models/x/rerun",
               chunks: tuple[bytes, ...] = (b"{}",), content_length: int | None = None,
               is_finished: bool = True) -> tuple[int, dict[str, str], dict[str, Any], int]:
    """Status, headers, JSON body, and how many body chunks the app side pulled from the connection; with
    ``is_finished`` false the body's last chunk says more follows, and none ever does."""
    headers = [] if content_length is None else [(b"content-length", str(content_length).encode())]
    scope = {"type": "http", "method": method, "path": path, "headers": headers}
    pending = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1 or not is_finished}
               for i, c in enumerate(chunks)]
    pulled = 0
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        nonlocal pulled
        if pending:
            pulled += 1
            return pending.pop(0)
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return (start["status"], {k.decode(): v.decode() for k, v in start["headers"]}, json.loads(body or b"{}"),
            pulled)


def limits(app: Any, body: int = 100, requests: int = 4, streams: int = 4) -> RequestLimits:
    return RequestLimits(app, max_body_bytes=body, max_concurrent_requests=requests, max_event_streams=streams)


def test_a_body_declared_too_large_is_refused_before_any_of_it_is_read() -> None:
    inner = Recorder()
    status, headers, body, pulled = asyncio.run(call(limits(inner), chunks=(b"x" * 101,), content_length=101))
    assert (status, body["title"], pulled, inner.calls) == (413, "Request body too large", 0, 0)
    assert headers["content-type"] == "application/problem+json" and "api.max_body_bytes" in body["detail"]


def test_a_streamed_body_is_refused_once_it_passes_the_limit() -> None:
    inner = Recorder()
    status, _, _, pulled = asyncio.run(call(limits(inner), chunks=(b"x" * 60, b"x" * 60, b"x" * 60)))
    assert (status, pulled, inner.calls) == (413, 2, 0)


def test_a_body_within_the_limit_reaches_the_app_whole() -> None:
    inner = Recorder()
    status, _, body, _ = asyncio.run(call(limits(inner), chunks=(b"x" * 50, b"x" * 50), content_length=100))
    assert (status, body, inner.calls) == (200, {"size": 100}, 1)


def test_past_the_concurrency_limit_a_request_is_answered_503_with_retry_after() -> None:
    async def scenario() -> tuple[tuple[int, dict[str, str]], tuple[int, dict[str, str]], int]:
        release = asyncio.Event()
        app = limits(Recorder(release), requests=1, streams=1)
        first = asyncio.create_task(call(app, "GET", "/api/v1/models"))
        await asyncio.sleep(0.01)  # the first request is inside the app now
        busy = await call(app, "GET", "/api/v1/models")
        stream = asyncio.create_task(call(app, "GET", "/api/v1/events"))  # streams have their own limit
        await asyncio.sleep(0.01)
        busy_stream = await call(app, "GET", "/api/v1/events")
        release.set()
        await first, await stream
        after = await call(app, "GET", "/api/v1/models")
        return busy[:2], busy_stream[:2], after[0]

    (busy, headers), (busy_stream, _), after = asyncio.run(scenario())
    assert (busy, headers["retry-after"], busy_stream, after) == (503, "1", 503, 200)


def test_every_response_carries_the_security_headers_once() -> None:
    status, headers, _, _ = asyncio.run(call(limits(Recorder()), "GET", "/"))
    assert status == 200
    assert headers["x-content-type-options"] == "nosniff" and headers["referrer-policy"] == "no-referrer"
    assert headers["content-security-policy"] == "frame-ancestors 'none'"
    assert headers["x-frame-options"] == "SAMEORIGIN"  # what the app set is kept, not doubled
    status, headers, _, _ = asyncio.run(call(limits(Recorder(), body=1), content_length=5))
    assert status == 413 and headers["x-frame-options"] == "DENY"


class Clock:
    def __init__(self) -> None:
        self.now_s = 100.0

    def __call__(self) -> float:
        return self.now_s


def rate_limited(per_s: float, burst: int, clock: Clock) -> RequestLimits:
    return RequestLimits(Recorder(), max_body_bytes=100, max_concurrent_requests=4, max_event_streams=4,
                         rate_limit=ApiRateLimit(per_client_per_s=per_s, burst=burst),
                         identify=lambda scope: scope["path"], clock=clock)


def test_past_its_burst_a_client_is_answered_429_with_retry_after_and_a_problem() -> None:
    clock = Clock()
    app = rate_limited(0.5, 2, clock)
    statuses = [asyncio.run(call(app, "GET", "/a"))[0] for _ in range(2)]
    status, headers, body, _ = asyncio.run(call(app, "GET", "/a"))
    assert statuses == [200, 200] and (status, headers["retry-after"]) == (429, "2")
    assert headers["content-type"] == "application/problem+json" and headers["x-content-type-options"] == "nosniff"
    assert (body["type"], body["status"]) == ("urn:cbt:problem:too-many-requests", 429)
    assert "api.rate_limit" in body["detail"] and "retry in 2 s" in body["detail"]
    assert asyncio.run(call(app, "GET", "/b"))[0] == 200  # another client has its own bucket
    clock.now_s += 2
    assert asyncio.run(call(app, "GET", "/a"))[0] == 200


def test_a_refused_request_reads_no_body_and_reaches_no_app() -> None:
    clock = Clock()
    app = rate_limited(1, 1, clock)
    inner = app.app
    assert asyncio.run(call(app))[0] == 200
    status, _, _, pulled = asyncio.run(call(app))
    assert (status, pulled, inner.calls) == (429, 0, 1)  # type: ignore[attr-defined]


def test_a_body_announced_and_never_sent_is_answered_408_and_frees_its_slot() -> None:
    """Issue 33: thirty-two connections announcing 64 KiB bodies they never send held every request slot."""
    async def scenario() -> tuple[int, str, int]:
        app = RequestLimits(Recorder(), max_body_bytes=100, max_concurrent_requests=1, max_event_streams=1,
                            body_timeout_s=0.2)
        status, _, body, _ = await asyncio.wait_for(
            call(app, chunks=(b"{",), content_length=64, is_finished=False), timeout=5)
        after = (await call(app, "GET", "/api/v1/models"))[0]
        return status, body["detail"], after

    status, detail, after = asyncio.run(scenario())
    assert status == 408 and "api.body_timeout_s" in detail and after == 200


def test_one_client_cannot_hold_every_slot() -> None:
    """Per-client caps: a client past its concurrent requests or streams gets 429, another client is still served
    (before, one client could take all 32 request slots and all 64 stream slots inside its burst)."""
    async def scenario() -> list[int]:
        release = asyncio.Event()
        app = RequestLimits(Recorder(release), max_body_bytes=100, max_concurrent_requests=10, max_event_streams=10,
                            identify=lambda scope: dict(scope["headers"]).get(b"x-client", b"").decode(),
                            max_requests_per_client=2, max_event_streams_per_client=1)

        def as_client(name: str, path: str) -> Any:
            return _call_as(app, name, path)

        held = [asyncio.create_task(as_client("a", "/api/v1/models")) for _ in range(2)]
        held.append(asyncio.create_task(as_client("a", "/api/v1/events")))
        await asyncio.sleep(0.01)
        refused = [await as_client("a", "/api/v1/models"), await as_client("a", "/api/v1/events")]
        other = asyncio.create_task(as_client("b", "/api/v1/models"))
        await asyncio.sleep(0.01)
        release.set()
        done = await asyncio.gather(*held, other)
        again = await as_client("a", "/api/v1/models")
        return [*refused, *done, again]

    assert asyncio.run(scenario()) == [429, 429, 200, 200, 200, 200, 200]


async def _call_as(app: Any, client: str, path: str) -> int:
    return (await request(app, "GET", path, {"x-client": client})).status
