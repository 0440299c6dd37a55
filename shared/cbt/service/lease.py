"""One lease held by one owner: taken or renewed, kept alive in the background, released.

Three holders use it: the coordinator's and the bounds-cache's leader election (``hold`` on every round), and each of
the worker's task runs (``acquire`` once, ``keep`` while the task runs, ``fence`` for its completion). Leases expire
after ``ttl_s`` unless renewed; each acquisition comes with a fencing token, strictly increasing per lease
(``docs/protocol.md``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Literal

from cbt.state.ports import Fence, Leases

log = logging.getLogger("cbt.service.lease")

Held = Literal["taken", "kept"] | None
"""What ``hold`` did: took the lease now, kept (renewed) it, or neither (another owner holds it)."""


class LeaseHolder:
    """``owner``'s hold on the lease ``name``, as far as this process knows: held from an acquisition until it is
    released or found lost."""

    def __init__(self, leases: Leases, name: str, owner: str, ttl_s: float) -> None:
        self.leases = leases
        self.name = name
        self.owner = owner
        self.ttl_s = ttl_s
        self.token: int | None = None
        """The fencing token of the current acquisition (``None`` while not held)."""
        self.is_lost = False
        """Found expired by ``keep`` (it may have been taken over): whatever this holder does now must not count."""

    @property
    def ttl_ms(self) -> int:
        return int(self.ttl_s * 1000)

    @property
    def is_held(self) -> bool:
        return self.token is not None and not self.is_lost

    @property
    def fence(self) -> Fence:
        """The lease as a completion checks it: this owner, under this acquisition's token."""
        if self.token is None:
            raise RuntimeError(f"lease {self.name!r} is not held")
        return Fence(self.name, self.owner, self.token)

    def acquire(self) -> int | None:
        """Take the lease if nobody holds it: its fencing token, else ``None``."""
        token = self.leases.acquire(self.name, self.owner, self.ttl_ms)
        if token is not None:
            self.token, self.is_lost = token, False
        return token

    def renew(self) -> bool:
        """Whether the lease is still this holder's (renewed now, so it lasts another ttl)."""
        return self.is_held and self.leases.renew(self.name, self.owner, self.ttl_ms)

    def hold(self) -> Held:
        """Renew the lease when held, else try to take it (leader election's round). An error of the lease store is
        raised; the holder then still counts the lease as held, and its next round renews it if it can."""
        if self.renew():
            return "kept"
        self.token = None
        return "taken" if self.acquire() is not None else None

    async def keep(self, every_s: float, on_lost: Callable[[], object] = lambda: None) -> None:
        """Renew the lease every ``every_s`` until cancelled. Errors of the lease store are retried sooner while the
        last renewal is younger than the ttl (past it the lease has expired on the server whatever happens next);
        once the lease is found lost, mark it lost, call ``on_lost`` and return."""
        pause = every_s
        renewed_at = time.monotonic()
        while True:
            await asyncio.sleep(pause)
            try:
                renewed = self.leases.renew(self.name, self.owner, self.ttl_ms)
            except Exception as e:
                renewed = time.monotonic() - renewed_at < self.ttl_s
                log.warning("lease renewal failed; retrying", extra={"lease": self.name, "error": str(e)})
                pause = min(1.0, self.ttl_s / 10)
            else:
                pause = every_s
                renewed_at = time.monotonic() if renewed else renewed_at
            if not renewed:
                self.is_lost = True
                on_lost()
                return

    def release(self) -> None:
        """Give the lease up (a no-op when another owner holds it now)."""
        if self.token is not None:
            self.leases.release(self.name, self.owner)
        self.token = None
