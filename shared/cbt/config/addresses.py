"""Listen addresses (``metrics_addr``, ``health_addr``, ``api.addr``): ``HOST:PORT``, or ``:PORT`` for every interface.

``:PORT`` binds every interface (``0.0.0.0``), as the original CBT (Go's ``net.Listen``) does, so a config written
for it (``metricsAddr: ":9090"``) is reachable from a remote Prometheus or a load balancer. The defaults we ship
name ``127.0.0.1``: nothing is exposed unless the config says so.
"""

from __future__ import annotations

EVERY_INTERFACE = "0.0.0.0"


def bind_address(addr: str) -> tuple[str, int]:
    """The host and port to listen on for ``addr`` (``[::1]:80`` gives ``::1``; ``:80`` every interface)."""
    host, _, port = addr.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    return host or EVERY_INTERFACE, int(port)
