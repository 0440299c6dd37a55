"""``/healthz`` (the process's loops are alive) and ``/readyz`` (what it needs answers) over a minimal HTTP server.

``/healthz`` asks each liveness probe — a loop's heartbeat is recent, a consume loop has not ended — without any
network call: an orchestrator restarts a process whose loop is stuck or dead, never one whose dependency is down.
``/readyz`` runs each named check at once, each bounded by ``CHECK_TIMEOUT_S``. Both name what fails in their 503
body (``{"status": "not ready", "checks": {"kafka": "no answer within 3 s", "redis": "ok"}}``), so an operator reads
which loop or dependency is gone. A check may add a note (``"notes": {"spark_admission": "limit 2, 2 executing,
5 waiting"}``). ``/health`` and ``/ready`` (the original CBT's paths) give the same verdicts with CBT's plain ``OK``
body.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Mapping

from cbt.config.addresses import bind_address

CHECK_TIMEOUT_S = 3.0
Check = Callable[[], Awaitable[str | None]]
"""Returns when its dependency answers — with a note worth showing (``/readyz``'s ``notes``), or ``None`` — and
raises (any error) when it does not."""
CBT_PROBES = {"/health": "/healthz", "/ready": "/readyz"}
"""The original CBT's probe paths: the same verdicts as ours, with its body (``200`` and ``OK``, plain text); when
failing, ``503`` and what fails, one per line."""
Probe = Callable[[], str | None]
"""A liveness probe: ``None`` while its loop is alive, else what is wrong. Local and quick (no network)."""


class Heartbeat:
    """A loop's proof of life: the loop calls ``beat`` every round; the probe fails once no beat came for
    ``allowed_s`` (a round stuck on a call that never returns, or a loop that ended)."""

    def __init__(self, allowed_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.allowed_s = allowed_s
        self._clock = clock
        self._last = clock()

    def beat(self) -> None:
        self._last = self._clock()

    def __call__(self) -> str | None:
        silent_s = self._clock() - self._last
        return f"no beat for {silent_s:.0f} s (allowed {self.allowed_s:g} s)" if silent_s > self.allowed_s else None


class HealthServer:
    def __init__(self, addr: str, checks: Mapping[str, Check], probes: Mapping[str, Probe] | None = None,
                 startup: Callable[[], dict[str, object]] | None = None) -> None:
        self.host, self.port = bind_address(addr)
        self.checks = dict(checks)
        self.probes = dict(probes or {})
        self.startup = startup
        """The start-up step and milestones, shown in both bodies (``cbt.service.startup.Startup.report``)."""
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
        return (await self._assess())[0]

    async def _assess(self) -> tuple[dict[str, str], dict[str, str]]:
        """Each check's verdict, and the notes of those that passed with one."""
        results = await asyncio.gather(*(_verdict(check) for check in self.checks.values()))
        verdicts = {name: verdict for name, (verdict, _) in zip(self.checks, results, strict=True)}
        notes = {name: note for name, (_, note) in zip(self.checks, results, strict=True) if note is not None}
        return verdicts, notes

    def liveness(self) -> dict[str, str]:
        """Each probe's verdict: ``ok`` or what is wrong."""
        return {name: _probed(probe) or "ok" for name, probe in self.probes.items()}

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = (await asyncio.wait_for(reader.readline(), 5)).decode(errors="replace").split()
            path = request[1] if len(request) > 1 else "/"
            if path in CBT_PROBES:
                status, body = await self._answer(CBT_PROBES[path])
                payload, kind = _plain(status, body), "text/plain; charset=utf-8"
            else:
                status, body = await self._answer(path)
                payload, kind = json.dumps(body).encode(), "application/json"
            writer.write(f"HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {len(payload)}\r\n"
                         "Connection: close\r\n\r\n".encode() + payload)
            await writer.drain()
        except (TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()

    async def _answer(self, path: str) -> tuple[str, dict[str, object]]:
        started = {"startup": self.startup()} if self.startup is not None else {}
        if path == "/healthz":
            loops = self.liveness()
            if all(verdict == "ok" for verdict in loops.values()):
                return "200 OK", {"status": "ok", "loops": loops, **started}
            return "503 Service Unavailable", {"status": "not alive", "loops": loops, **started}
        if path == "/readyz":
            checks, notes = await self._assess()
            extra = {**({"notes": notes} if notes else {}), **started}
            if all(verdict == "ok" for verdict in checks.values()):
                return "200 OK", {"status": "ready", "checks": checks, **extra}
            return "503 Service Unavailable", {"status": "not ready", "checks": checks, **extra}
        return "404 Not Found", {"status": "unknown path"}


def _plain(status: str, body: dict[str, object]) -> bytes:
    """CBT's probe body: ``OK``; else what fails, one ``name: verdict`` per line after the status."""
    if status.startswith("200"):
        return b"OK"
    verdicts = body.get("loops") or body.get("checks")
    items = verdicts.items() if isinstance(verdicts, dict) else ()
    failing = [f"{name}: {verdict}" for name, verdict in items if verdict != "ok"]
    return "\n".join([str(body.get("status", "")), *failing]).encode()


async def _verdict(check: Check) -> tuple[str, str | None]:
    """``ok`` or why not, and the check's note."""
    try:
        note = await asyncio.wait_for(check(), CHECK_TIMEOUT_S)
    except TimeoutError:
        return f"no answer within {CHECK_TIMEOUT_S:g} s", None
    except Exception as e:  # any error of the dependency's client means not ready
        return f"{type(e).__name__}: {e}"[:300], None
    return "ok", note


def _probed(probe: Probe) -> str | None:
    try:
        return probe()
    except Exception as e:  # a probe that breaks says so instead of taking /healthz down
        return f"probe failed: {type(e).__name__}: {e}"[:300]
