"""``/healthz`` (the process answers) and ``/readyz`` (its dependencies answer) over a minimal HTTP server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable


class HealthServer:
    def __init__(self, addr: str, is_ready: Callable[[], bool]) -> None:
        host, _, port = addr.rpartition(":")
        self.host, self.port = host or "127.0.0.1", int(port)
        self.is_ready = is_ready
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = (await asyncio.wait_for(reader.readline(), 5)).decode(errors="replace").split()
            path = request[1] if len(request) > 1 else "/"
            status, body = self._answer(path)
            payload = json.dumps(body).encode()
            writer.write(f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
                         "Connection: close\r\n\r\n".encode() + payload)
            await writer.drain()
        except (TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()

    def _answer(self, path: str) -> tuple[str, dict[str, str]]:
        if path == "/healthz":
            return "200 OK", {"status": "ok"}
        if path == "/readyz":
            return ("200 OK", {"status": "ready"}) if self.is_ready() else ("503 Service Unavailable",
                                                                            {"status": "not ready"})
        return "404 Not Found", {"status": "unknown path"}
