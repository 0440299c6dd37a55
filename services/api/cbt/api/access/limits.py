"""What one client can make the api do, bounded, and the headers every response carries.

``RequestLimits`` wraps the whole ASGI app (the routes, the UI, ``/docs``):

- a request body larger than ``api.max_body_bytes`` is refused with 413 before the app reads it — at once when
  ``Content-Length`` says so, else as soon as the received chunks pass the limit (so a token check never waits
  behind a large upload);
- each client (its token's fingerprint when it shows a configured token, else its address) has a token bucket of
  ``api.rate_limit.burst`` requests refilled at ``api.rate_limit.per_client_per_s``; past it, 429 with ``Retry-After``
  (the count is per api process: with N replicas behind a balancer a client may make up to N times as many);
- one client has at most ``api.max_requests_per_client`` requests and ``api.max_event_streams_per_client`` event
  streams at once (429 beyond), so no single client fills the slots below whatever its rate;
- at most ``api.max_concurrent_requests`` requests are handled at once and at most ``api.max_event_streams`` live
  event streams (``/api/v1/events``) are open; beyond that, 503 with ``Retry-After`` instead of queueing;
- a request's body must arrive within ``api.body_timeout_s`` of its headers (408 otherwise, its slot freed): a client
  announcing a body it never sends holds a slot that long at most;
- every response says ``nosniff``, may not be framed by another site, and sends no referrer.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from fastapi.responses import JSONResponse

from cbt.api.access.token_bucket import TokenBuckets
from cbt.api.problems import problem_response
from cbt.config.settings import ApiRateLimit

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

EVENTS_PATH = "/api/v1/events"
RETRY_AFTER_S = 1
SECURITY_HEADERS = (
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy", b"frame-ancestors 'none'"),
    (b"referrer-policy", b"no-referrer"),
)


class RequestLimits:
    def __init__(self, app: App, *, max_body_bytes: int, max_concurrent_requests: int, max_event_streams: int,
                 rate_limit: ApiRateLimit | None = None, identify: Callable[[Scope], str] | None = None,
                 clock: Callable[[], float] = time.monotonic, max_requests_per_client: int | None = None,
                 max_event_streams_per_client: int | None = None, body_timeout_s: float = 10) -> None:
        self.app = app
        self.rate_limit = rate_limit
        self.buckets = None if rate_limit is None else TokenBuckets(rate_limit.per_client_per_s, rate_limit.burst,
                                                                    rate_limit.max_clients)
        self.identify = identify or address_of
        self.clock = clock
        self.max_body_bytes = max_body_bytes
        self.limits = {"requests": max_concurrent_requests, "event streams": max_event_streams}
        self.running = {"requests": 0, "event streams": 0}
        self.client_limits = {"requests": max_requests_per_client or max_concurrent_requests,
                              "event streams": max_event_streams_per_client or max_event_streams}
        self.by_client: dict[tuple[str, str], int] = {}
        """Requests and streams running per (client, kind); a client's entry goes when its last one ends."""
        self.body_timeout_s = body_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        send = with_security_headers(send)
        client = self.identify(scope)
        wait_s = 0.0 if self.buckets is None else self.buckets.take(client, self.clock())
        if wait_s > 0:
            await self._too_many(wait_s)(scope, receive, send)
            return
        kind = "event streams" if scope.get("path") == EVENTS_PATH else "requests"
        if self.running[kind] >= self.limits[kind]:
            busy = problem_response(503, "Too busy", f"the api already serves {self.limits[kind]} {kind}; retry "
                                    "shortly", "too-busy")
            busy.headers["Retry-After"] = str(RETRY_AFTER_S)
            await busy(scope, receive, send)
            return
        mine = (client, kind)
        if self.by_client.get(mine, 0) >= self.client_limits[kind]:
            setting = "max_requests_per_client" if kind == "requests" else "max_event_streams_per_client"
            too_many = problem_response(429, "Too many at once", f"a client may have {self.client_limits[kind]} "
                                        f"{kind} at once (api.{setting}); retry when one has ended",
                                        "too-many-at-once")
            too_many.headers["Retry-After"] = str(RETRY_AFTER_S)
            await too_many(scope, receive, send)
            return
        self.running[kind] += 1
        self.by_client[mine] = self.by_client.get(mine, 0) + 1
        try:
            try:
                async with asyncio.timeout(self.body_timeout_s):
                    body = await self._bounded_body(scope, receive)
            except TimeoutError:
                slow = problem_response(408, "Request body too slow", f"the request's body did not arrive within "
                                        f"{self.body_timeout_s:g} s of its headers (api.body_timeout_s)",
                                        "body-timeout")
                slow.headers["Connection"] = "close"
                await slow(scope, receive, send)
                return
            if body is None:
                too_large = problem_response(413, "Request body too large",
                                             f"a request body may have at most {self.max_body_bytes} bytes "
                                             "(api.max_body_bytes)", "body-too-large")
                await too_large(scope, receive, send)
                return
            await self.app(scope, replay(body, receive), send)
        finally:
            self.running[kind] -= 1
            left = self.by_client.pop(mine) - 1
            if left:
                self.by_client[mine] = left

    def _too_many(self, wait_s: float) -> JSONResponse:
        assert self.rate_limit is not None
        retry_s = math.ceil(wait_s)
        limit = self.rate_limit
        too_many = problem_response(429, "Too many requests", f"a client may make {limit.per_client_per_s:g} "
                                    f"requests a second, {limit.burst} at once (api.rate_limit); retry in "
                                    f"{retry_s} s", "too-many-requests")
        too_many.headers["Retry-After"] = str(retry_s)
        return too_many

    async def _bounded_body(self, scope: Scope, receive: Receive) -> list[Message] | None:
        """The request's body messages, read up to the limit; ``None`` when it is larger. Nothing is read when
        ``Content-Length`` already says it is too large, nor for a request without a body."""
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            return None
        if scope.get("method") in ("GET", "HEAD", "OPTIONS") and declared is None:
            return []
        messages, size = [], 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                return messages
            size += len(message.get("body", b""))
            if size > self.max_body_bytes:
                return None
            if not message.get("more_body", False):
                return messages


def address_of(scope: Scope) -> str:
    client = scope.get("client")
    return f"addr:{client[0] if client else 'unknown'}"


def replay(messages: list[Message], receive: Receive) -> Receive:
    """``receive`` that hands out ``messages`` first, then what the connection sends next (a disconnect)."""
    pending = list(messages)

    async def replayed() -> Message:
        return pending.pop(0) if pending else await receive()

    return replayed


def with_security_headers(send: Send) -> Send:
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            names = {name.lower() for name, _ in message.get("headers", [])}
            message["headers"] = [*message.get("headers", []),
                                  *((name, value) for name, value in SECURITY_HEADERS if name not in names)]
        await send(message)

    return sending
