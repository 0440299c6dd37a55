"""The original CBT's probes, ``/health`` and ``/ready``: CBT's ``200 OK`` body when ours say so, ``503`` with what
fails when not; and ``:PORT`` listens on every interface, as in CBT."""

from __future__ import annotations

import asyncio
import socket
import urllib.error
import urllib.request

import pytest

from cbt.adapters.health import HealthServer
from cbt.config.addresses import bind_address


async def answers() -> None:
    return None


async def refuses() -> None:
    raise ConnectionRefusedError("[Errno 111] Connection refused")


def get(host: str, port: int, path: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(f"http://{host}:{port}{path}", timeout=10) as response:
            return response.status, response.headers["Content-Type"], response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers["Content-Type"], e.read().decode()


def ask(
    path: str,
    checks: dict[str, object],
    probes: dict[str, object] | None = None,
    addr: str = "127.0.0.1:0",
    host: str = "127.0.0.1",
) -> tuple[int, str, str]:
    async def scenario() -> tuple[int, str, str]:
        server = HealthServer(addr, checks, probes)  # type: ignore[arg-type]
        await server.start()
        try:
            return await asyncio.to_thread(get, host, server.port, path)
        finally:
            await server.stop()

    return asyncio.run(scenario())


@pytest.mark.parametrize("path", ["/health", "/ready"])
def test_cbt_probes_answer_ok_as_cbt_did(path: str) -> None:
    assert ask(path, {"redis": answers}, {"tick": lambda: None}) == (200, "text/plain; charset=utf-8", "OK")


def test_ready_fails_with_what_is_not_ready() -> None:
    assert ask("/ready", {"redis": answers, "spark": refuses}) == (
        503,
        "text/plain; charset=utf-8",
        "not ready\nspark: ConnectionRefusedError: [Errno 111] Connection refused",
    )


def test_health_fails_with_the_stuck_loop_and_ignores_dependencies() -> None:
    assert ask("/health", {"kafka": refuses}, {"tick": lambda: "no beat for 9 s (allowed 3 s)"}) == (
        503,
        "text/plain; charset=utf-8",
        "not alive\ntick: no beat for 9 s (allowed 3 s)",
    )
    assert ask("/health", {"kafka": refuses}, {"tick": lambda: None})[0] == 200


def test_our_probes_keep_their_json() -> None:
    status, kind, body = ask("/readyz", {"redis": answers})
    assert (status, kind, body) == (200, "application/json", '{"status": "ready", "checks": {"redis": "ok"}}')


@pytest.mark.parametrize(
    ("addr", "expected"),
    [
        pytest.param(":9090", ("0.0.0.0", 9090), id="port-only-binds-every-interface"),
        pytest.param("127.0.0.1:9464", ("127.0.0.1", 9464), id="loopback"),
        pytest.param("[::1]:8080", ("::1", 8080), id="ipv6"),
        pytest.param("cbt-api:80", ("cbt-api", 80), id="name"),
    ],
)
def test_bind_address(addr: str, expected: tuple[str, int]) -> None:
    assert bind_address(addr) == expected


def outward_address() -> str | None:
    """An address of this host other than loopback (none in a sandbox without a network)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # (no packet is sent: this only picks the outward interface)
            address = probe.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") else str(address)


def test_a_port_only_address_is_reachable_beyond_loopback() -> None:
    outward = outward_address()
    if outward is None:
        pytest.skip("this host has no address beyond loopback")
    assert ask("/health", {}, addr=":0", host=outward)[0] == 200
    with pytest.raises(urllib.error.URLError):
        ask("/health", {}, addr="127.0.0.1:0", host=outward)
