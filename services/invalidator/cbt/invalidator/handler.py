"""The invalidator's use case: validate one event, apply it to coverage with cascade, record it, re-plan.

Bad input is never retried and never stops the service: a body that is not a valid event, names no model, or
spans an absurd range is published to ``invalidation-rejected`` with the reason and acknowledged. Infrastructure
errors propagate, so the message is redelivered (at-least-once).

Order of effects for an accepted event (``docs/protocol.md``), each step safe to repeat after a crash at any point:

1. wait while the hot index is being rebuilt (Redis emptied): what is in flight cannot be read from it meanwhile;
2. skip the event when its id is marked done (a duplicate);
3. map it to the tasks to re-run per model (``cbt.scheduling.invalidation``): first the in-flight tasks from the
   ledger, then what ran from the durable record (a task that finishes in between is released from the ledger only
   after its row is durable, so it is in one of the two reads);
4. record it in the durable record, which allocates its epoch in the same commit — from this moment the ranges are
   no longer covered there, whatever happens to Redis; an id already recorded comes back with its first epoch and
   ranges, so a redelivery applies exactly what the first delivery did;
5. apply it to the hot index: remove the tasks, list them as re-runs and raise each model's sequence to the
   epoch, atomically and once per epoch — from now on an in-flight task that read an older sequence cannot mark
   these ranges covered; then release the intervals failed checks held over the range (docs/checks.md);
6. mark the id done, then re-plan the affected models at once so their re-runs are enqueued (the coordinator's
   ticks would find them too).
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from typing import Literal

from pydantic import ValidationError

from cbt.contract.messages import (
    RAW_BODY_LIMIT,
    Invalidation,
    InvalidationRejected,
    decode_invalidation,
    describe,
    now_ms,
)
from cbt.contract.topics import Topics
from cbt.models.dag import ModelSet
from cbt.models.spec import IncrementalModel, ModelId
from cbt.observability import metrics
from cbt.scheduling.invalidation import Impact, impact, reach, why_rejected
from cbt.state.admin_records import InvalidationRecord
from cbt.state.ports import CheckHolds, DurableRecord, HotIndex, Publisher, SeenEvents, TaskLedger

log = logging.getLogger("cbt.invalidator")

Outcome = Literal["applied", "duplicate", "rejected"]


@dataclass
class InvalidationHandler:
    models: ModelSet
    coverage: HotIndex
    ledger: TaskLedger
    admin: DurableRecord
    seen: SeenEvents
    publisher: Publisher
    topics: Topics
    replan: Callable[[Collection[ModelId]], Awaitable[int]]
    max_range: int
    max_tasks: int
    counts: Counter[str] = field(default_factory=Counter)
    index_poll_s: float = 0.5
    holds: CheckHolds | None = None
    """The intervals failed checks hold: an invalidation over one releases it (step 5)."""

    async def handle(self, raw: bytes) -> Outcome:
        """One message body from the ``invalidation`` topic."""
        received_at_ms = now_ms()
        try:
            event = decode_invalidation(raw)
        except ValidationError as e:
            return await self.reject(raw, describe(e), _id_of(raw))
        why = why_rejected(self.models, event, self.max_range, self.max_tasks)
        if why is not None:
            return await self.reject(raw, why, event.id)
        await self._wait_for_index()
        if self.seen.is_seen(event.id):
            self.counts["duplicate"] += 1
            log.info("duplicate invalidation ignored", extra={"event_id": event.id, "counts": dict(self.counts)})
            return "duplicate"
        model_id = self.models.resolve(event.model)
        result = await self._apply(event, model_id, received_at_ms)
        self.seen.mark_seen(event.id)
        self.counts["applied"] += 1
        metrics.invalidations.add(1, {"result": "applied", "reason_kind": "none"})
        log.info("invalidation applied", extra={
            "event_id": event.id, "model": event.model, "start": event.start, "end": event.end,
            "reason": event.reason, "tasks": result.task_count,
            "affected": {m: [list(run) for run in runs[:20]] for m, runs in result.ranges.items()},
            "scheduled_not_rerun": list(result.scheduled), "counts": dict(self.counts),
        })
        await self._replan(result)
        return "applied"

    async def _apply(self, event: Invalidation, model_id: ModelId, received_at_ms: int) -> Impact:
        involved = [m for m in (model_id, *self.models.descendants(model_id))
                    if isinstance(self.models.models[m], IncrementalModel)]
        rng = (event.start, event.end)
        running = self.ledger.in_flight(involved, int(time.time() * 1000))
        in_flight = {m: [t.range for t in tasks if t.range is not None] for m, tasks in running.items()}
        window = reach(self.models, model_id, rng, cascade=event.cascade)
        ran = await asyncio.to_thread(self.admin.live_pieces, involved, window)
        result = await asyncio.to_thread(  # (a wide cascade: off the event loop, which keeps the consumer polling)
            functools.partial(impact, self.models, model_id, rng, cascade=event.cascade, in_flight=in_flight, ran=ran))
        record = InvalidationRecord(
            id=event.id, model=model_id, start=event.start, end=event.end, reason=event.reason,
            source=event.source, cascade=event.cascade, metadata=dict(event.metadata), affected=result.ranges,
            received_at_ms=received_at_ms,
        )
        stored = await asyncio.to_thread(self.admin.record_invalidation, record)
        if stored.received_at_ms != received_at_ms:
            log.warning("invalidation already recorded (redelivered, or Redis lost its marker); applying it as "
                        "first recorded", extra={"event_id": event.id, "epoch": stored.epoch})
        self.coverage.apply_invalidation(stored.epoch, stored.affected)
        self._release_holds(involved if event.cascade else [model_id], rng)
        return Impact(dict(stored.affected), result.scheduled)

    def _release_holds(self, models: Collection[ModelId], rng: tuple[int, int]) -> None:
        """The intervals a failed check held over the range are computed again: their inputs changed (or an
        operator asked for a re-run)."""
        if self.holds is None:
            return
        for model in models:
            released = self.holds.release(model, rng)
            if released:
                log.info("intervals held by failed checks released", extra={
                    "model": model, "intervals": [[h.start, h.end] for h in released][:20]})

    async def _wait_for_index(self) -> None:
        if self.coverage.is_built():
            return
        log.warning("waiting for the coordinator to rebuild the hot coverage index before applying invalidations")
        while not self.coverage.is_built():
            await asyncio.sleep(self.index_poll_s)

    async def _replan(self, result: Impact) -> None:
        try:
            published = await self.replan(result.models)
        except Exception:  # the coordinator's backfill tick re-plans these gaps anyway
            log.exception("re-planning after an invalidation failed; the backfill tick will pick it up")
            return
        log.info("re-planned after invalidation", extra={"tasks": published})

    async def reject(self, raw: bytes, reason: str, event_id: str | None) -> Outcome:
        self.counts["rejected"] += 1
        metrics.invalidations.add(1, {"result": "rejected", "reason_kind": metrics.reason_kind(reason)})
        metrics.count_rejected(self.topics.invalidation, "invalidator", reason)
        text = raw.decode("utf-8", errors="replace")[:RAW_BODY_LIMIT]
        log.warning("invalidation rejected", extra={"event_id": event_id, "reason": reason[:500],
                                                    "counts": dict(self.counts)})
        message = InvalidationRejected(raw=text, reason=reason, id=event_id)
        await self.publisher.publish(self.topics.invalidation_rejected, message, key=event_id or "rejected")
        return "rejected"


def _id_of(raw: bytes) -> str | None:
    """The ``id`` of a body that is not a valid event, when it has a readable one."""
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    value = body.get("id") if isinstance(body, dict) else None
    return value[:200] if isinstance(value, str) else None
