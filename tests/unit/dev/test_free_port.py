"""free_port never hands out the same port twice in one process: a port handed out is not bound until the service it
was given to has started, and the kernel may offer it again meanwhile."""

from __future__ import annotations

from cbt.dev.pipeline import free_port


def test_no_port_is_handed_out_twice() -> None:
    ports = [free_port() for _ in range(300)]
    assert len(set(ports)) == len(ports)
