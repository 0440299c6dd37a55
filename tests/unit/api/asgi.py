"""Driving an ASGI app as a server would, without a network: one request in, status, headers and body out."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    """Lower-case names; a repeated header's values joined with ``\\n``."""
    body: bytes


async def request(app: Any, method: str, path: str, headers: dict[str, str] | None = None, body: bytes = b"",
                  client: str = "203.0.113.7") -> Answer:
    target, _, query = path.partition("?")
    raw = [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    if body:
        raw.append((b"content-length", str(len(body)).encode()))
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "http",
             "path": target, "raw_path": target.encode(), "query_string": query.encode(), "root_path": "",
             "headers": raw, "client": (client, 50000), "server": ("testserver", 80)}
    pending = [{"type": "http.request", "body": body, "more_body": False}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if pending:
            return pending.pop(0)
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    out: dict[str, str] = {}
    for name, value in start["headers"]:
        key = name.decode().lower()
        out[key] = f"{out[key]}\n{value.decode()}" if key in out else value.decode()
    return Answer(start["status"], out, b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body"))


def call(app: Any, method: str, path: str, headers: dict[str, str] | None = None, body: bytes = b"",
         client: str = "203.0.113.7") -> Answer:
    return asyncio.run(request(app, method, path, headers, body, client))
