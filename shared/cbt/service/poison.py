"""Poison messages: a message whose handling keeps failing is set aside, so its stream moves on.

Every consumer handles a message, and commits it only once handled; a handler that raises has the message delivered
again (FastStream's NACK, the worker's rewind). A message that fails because of what it *is* — a bug its content
triggers, a shape the checks did not foresee — would fail forever and hold every later message of its partition.
``PoisonGuard`` counts the failed attempts per delivery (``where``: topic, partition and offset, or a task id), waits
longer between them (exponential backoff), and after ``max_attempts`` sets the message aside — published to the
service's rejected topic with the reason — and lets the stream go on.

Failures of the infrastructure are not the message's fault: an error raised by a client library (Redis, Kafka, Spark
Connect, gRPC), an ``InfraError``, an OS or timeout error — or a ``CbtError`` caused by one (the admin tables') — is
retried with backoff for as long as it lasts and never sets a message aside (an invalidation must not be dropped
because Spark was restarting).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field

from cbt.base.errors import CbtError, InfraError

log = logging.getLogger("cbt.service.poison")

INFRASTRUCTURE_LIBRARIES = frozenset({"redis", "confluent_kafka", "faststream", "pyspark", "grpc", "py4j"})
TRANSIENT_BACKOFF_MAX_S = 5.0
"""The longest wait between attempts while the infrastructure fails (short: it usually comes back soon)."""


def is_transient(error: BaseException) -> bool:
    """Whether ``error`` says the infrastructure failed (retry as long as it lasts), not the message."""
    if isinstance(error, InfraError | OSError | TimeoutError | ConnectionError):
        return True
    if type(error).__module__.split(".")[0] in INFRASTRUCTURE_LIBRARIES:
        return True
    cause = error.__cause__
    return isinstance(error, CbtError) and cause is not None and is_transient(cause)


SetAside = Callable[[bytes, str], Awaitable[object]]
"""Publishes a message's body with the reason to the consumer's rejected topic."""


@dataclass
class PoisonGuard:
    service: str
    max_attempts: int = 5
    backoff_initial_s: float = 0.5
    backoff_max_s: float = 30.0
    failures: dict[Hashable, int] = field(default_factory=dict)
    """Failed attempts per delivery not yet handled or set aside (bounded by the deliveries failing right now)."""
    outages: dict[Hashable, int] = field(default_factory=dict)
    """Attempts per delivery that met an infrastructure failure (for their backoff only)."""

    async def handle(self, where: Hashable, body: bytes, work: Callable[[], Awaitable[object]],
                     set_aside: SetAside) -> None:
        """Run ``work`` for the message at ``where``; on failure wait, then raise (the message is delivered again)
        — or, at its ``max_attempts``-th failure not caused by the infrastructure, set it aside and return."""
        try:
            await work()
        except Exception as e:
            if is_transient(e):
                self.outages[where] = tries = self.outages.get(where, 0) + 1
                await asyncio.sleep(min(TRANSIENT_BACKOFF_MAX_S, self.backoff_initial_s * 2 ** (tries - 1)))
                raise
            self.failures[where] = failed = self.failures.get(where, 0) + 1
            if failed < self.max_attempts:
                log.warning("handling a message failed; it will be delivered again",
                            extra={"where": str(where), "attempt": failed, "error": f"{type(e).__name__}: {e}"[:500]})
                await asyncio.sleep(min(self.backoff_max_s, self.backoff_initial_s * 2 ** (failed - 1)))
                raise
            self._forget(where)
            last = f"{type(e).__name__}: {str(e)[:1000]}"
            reason = (f"{self.service}: handling failed {failed} times (the last: {last}); set aside so the messages "
                      "after it are handled")
            log.error("message set aside after repeated failures", extra={"where": str(where), "reason": reason})
            await set_aside(body, reason)
        else:
            self._forget(where)

    def _forget(self, where: Hashable) -> None:
        self.failures.pop(where, None)
        self.outages.pop(where, None)
