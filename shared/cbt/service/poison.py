"""Poison messages: a message whose handling keeps failing is set aside, so its stream moves on.

Every consumer handles a message, and commits it only once handled; a handler that raises has the message delivered
again (FastStream's NACK, the worker's rewind). A message that fails because of what it *is* — a bug its content
triggers, a shape the checks did not foresee — would fail forever and hold every later message of its partition.
``PoisonGuard`` counts the failed attempts per delivery (``where``: topic, partition and offset, or a task id), waits
longer between them (exponential backoff), and after ``max_attempts`` sets the message aside — published to the
service's rejected topic with the reason — and lets the stream go on.

What a failure says is decided by its type (``cbt.adapters.failures.classify``), not by the library that raised it:

- **transient**: the infrastructure is away or slow — a connection refused, reset or timed out, a Redis that is
  loading or busy, gRPC ``UNAVAILABLE`` / ``DEADLINE_EXCEEDED``, Spark Connect's retries exhausted, a Kafka error the
  client calls retriable. Retried with backoff for as long as it lasts; it never sets a message aside (an
  invalidation must not be dropped because Spark was restarting).
- **ambiguous**: a client library's error that names neither (a bare Spark Connect error, a Spark job aborted, a
  Kafka error of unknown kind). Retried like a transient one, but for at most ``ambiguous_max_s`` per message; past
  that it is set aside with the reason, so a deterministic error in disguise cannot hold its partition for good.
- **message**: anything else — a Redis script's ``ResponseError``, a ``DataError``, Spark's ``AnalysisException``, a
  ``ValueError`` of our own: the message's failure, through the attempts-then-set-aside path.

A ``CbtError`` raised because of another error (``raise ... from``) is classified by that cause.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field

from cbt.adapters.failures import FailureClass, classify
from cbt.observability import metrics

log = logging.getLogger("cbt.service.poison")

TRANSIENT_BACKOFF_MAX_S = 5.0
"""The longest wait between attempts while the infrastructure fails (short: it usually comes back soon)."""


def is_transient(error: BaseException) -> bool:
    """Whether ``error`` says the infrastructure failed (retry as long as it lasts), not the message."""
    return classify(error) == "transient"


SetAside = Callable[[bytes, str], Awaitable[object]]
"""Publishes a message's body with the reason to the consumer's rejected topic."""


@dataclass
class PoisonGuard:
    service: str
    max_attempts: int = 5
    backoff_initial_s: float = 0.5
    backoff_max_s: float = 30.0
    ambiguous_max_s: float = 600.0
    """How long errors that may or may not be the infrastructure's may hold one message (and its partition)."""
    clock: Callable[[], float] = time.monotonic
    failures: dict[Hashable, int] = field(default_factory=dict)
    """Failed attempts per delivery not yet handled or set aside (bounded by the deliveries failing right now)."""
    outages: dict[Hashable, int] = field(default_factory=dict)
    """Attempts per delivery that met an infrastructure failure (for their backoff only)."""
    ambiguous_since: dict[Hashable, float] = field(default_factory=dict)
    """When each delivery first met an ambiguous failure (its cap is counted from there)."""

    async def handle(self, where: Hashable, body: bytes, work: Callable[[], Awaitable[object]],
                     set_aside: SetAside) -> None:
        """Run ``work`` for the message at ``where``; on failure wait, then raise (the message is delivered again)
        — or, at its ``max_attempts``-th failure of the message's own, or once ambiguous failures have held it for
        ``ambiguous_max_s``, set it aside and return."""
        try:
            await work()
        except Exception as e:
            kind = classify(e)
            metrics.message_handling_failures.add(1, {"service": self.service, "error_class": kind})
            if kind != "message" and not self._ambiguous_too_long(where, kind):
                self.outages[where] = tries = self.outages.get(where, 0) + 1
                await asyncio.sleep(min(TRANSIENT_BACKOFF_MAX_S, self.backoff_initial_s * 2 ** (tries - 1)))
                raise
            if kind == "ambiguous":
                return await self._set_aside(where, body, set_aside, e, f"errors that may or may not be the "
                                             f"infrastructure's held it for {self.ambiguous_max_s:.0f} s")
            self.failures[where] = failed = self.failures.get(where, 0) + 1
            if failed < self.max_attempts:
                log.warning("handling a message failed; it will be delivered again",
                            extra={"where": str(where), "attempt": failed, "error": f"{type(e).__name__}: {e}"[:500]})
                await asyncio.sleep(min(self.backoff_max_s, self.backoff_initial_s * 2 ** (failed - 1)))
                raise
            await self._set_aside(where, body, set_aside, e, f"handling failed {failed} times")
        else:
            self._forget(where)

    def _ambiguous_too_long(self, where: Hashable, kind: FailureClass) -> bool:
        if kind != "ambiguous":
            return False
        since = self.ambiguous_since.setdefault(where, self.clock())
        return self.clock() - since >= self.ambiguous_max_s

    async def _set_aside(self, where: Hashable, body: bytes, set_aside: SetAside, error: Exception,
                         why: str) -> None:
        self._forget(where)
        last = f"{type(error).__name__}: {str(error)[:1000]}"
        reason = f"{self.service}: {why} (the last: {last}); set aside so the messages after it are handled"
        log.error("message set aside after repeated failures", extra={"where": str(where), "reason": reason})
        await set_aside(body, reason)

    def _forget(self, where: Hashable) -> None:
        self.failures.pop(where, None)
        self.outages.pop(where, None)
        self.ambiguous_since.pop(where, None)
