"""``/healthz`` (the process answers) and ``/readyz`` (every dependency answers) over a minimal HTTP server.

``/readyz`` runs each named check at once, each bounded by ``CHECK_TIMEOUT_S``, and names the failing ones in its
503 body (``{"status": "not ready", "checks": {"kafka": "no answer within 3 s", "redis": "ok"}}``): an orchestrator
stops routing to the process meanwhile, and an operator reads which dependency is gone.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping

CHECK_TIMEOUT_S = 3.0
Check = Callable[[], Awaitable[None]]
"""Returns when its dependency answers; raises (any error) when it does not."""


class HealthServer:
    def __init__(self, addr: str, checks: Mapping[str, Check]) -> None:
        host, _, port = addr.rpartition(":")
        self.host, self.port = host or "127.0.0.1", int(port)
        self.checks = dict(checks)
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def readiness(self) -> dict[str, str]:
        """Each check's verdict: ``ok`` or why not."""
        verdicts = await asyncio.gather(*(_verdict(check) for check in self.checks.values()))
        return dict(zip(self.checks, verdicts, strict=True))

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = (await asyncio.wait_for(reader.readline(), 5)).decode(errors="replace").split()
            path = request[1] if len(request) > 1 else "/"
            status, body = await self._answer(path)
            payload = json.dumps(body).encode()
            writer.write(f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
                         "Connection: close\r\n\r\n".encode() + payload)
            await writer.drain()
        except (TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()

    async def _answer(self, path: str) -> tuple[str, dict[str, object]]:
        if path == "/healthz":
            return "200 OK", {"status": "ok"}
        if path == "/readyz":
            checks = await self.readiness()
            if all(verdict == "ok" for verdict in checks.values()):
                return "200 OK", {"status": "ready", "checks": checks}
            return "503 Service Unavailable", {"status": "not ready", "checks": checks}
        return "404 Not Found", {"status": "unknown path"}


async def _verdict(check: Check) -> str:
    try:
        await asyncio.wait_for(check(), CHECK_TIMEOUT_S)
    except TimeoutError:
        return f"no answer within {CHECK_TIMEOUT_S:g} s"
    except Exception as e:  # any error of the dependency's client means not ready
        return f"{type(e).__name__}: {e}"[:300]
    return "ok"
