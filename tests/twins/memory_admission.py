"""An in-process permit store (``cbt.concurrency.admission.PermitStore``) for tests only: no service uses it.

It runs the rules of ``cbt.scheduling.admission`` on a ``Board`` under a lock, on this process's monotonic clock;
the same contract test suite runs against it and against Redis (``cbt.adapters.admission``). Several
``SparkAdmission`` objects over one ``MemoryPermitStore`` stand for several processes sharing a cluster.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from cbt.scheduling import admission as rules
from cbt.scheduling.admission import AdmissionStatus, Board


def _monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class MemoryPermitStore:
    def __init__(self, clock_ms: Callable[[], int] = _monotonic_ms) -> None:
        self.board = Board()
        self._clock_ms = clock_ms
        self._lock = threading.Lock()

    def attempt(self, member: str, score: int, ttl_ms: int, waiter_ttl_ms: int, limit: int) -> tuple[bool, int]:
        with self._lock:
            return rules.attempt(self.board, member, score, self._clock_ms(), ttl_ms, waiter_ttl_ms, limit)

    def renew(self, members: list[str], ttl_ms: int, add_missing: bool = False) -> list[str]:
        with self._lock:
            return rules.renew(self.board, members, self._clock_ms(), ttl_ms, add_missing)

    def release(self, member: str) -> None:
        with self._lock:
            rules.release(self.board, member)

    def status(self) -> AdmissionStatus:
        with self._lock:
            return self.board.status(self._clock_ms())
