"""Pruning the invalidation history (``invalidator.history_retention``).

Only records whose deletion changes nothing are deleted (``DurableRecord.prune_invalidations``): an invalidation
hides the rows computed before it, so deleting one that still hides a stale row would make that row's old data count
as covered again. The durable record goes first (it is the authority); the hot index then forgets the records'
marks and raises its floors, which only refuses completions of tasks that read a sequence older than them. A crash
in between leaves marks in Redis that the durable record no longer has: stricter, never wrong, and gone at the next
rebuild.
"""

from __future__ import annotations

import asyncio
import logging
import time

from cbt.state.ports import CoverageWriter, DurableRecord

log = logging.getLogger("cbt.invalidator")


def prune_history(admin: DurableRecord, coverage: CoverageWriter, retention_s: int, now_ms: int) -> int:
    """Prune the records received more than ``retention_s`` before ``now_ms``; returns how many were deleted."""
    pruned = admin.prune_invalidations(now_ms - retention_s * 1000)
    for record in pruned:
        coverage.forget_invalidation(record.seqs)
    if pruned:
        log.info(
            "invalidation history pruned",
            extra={"records": len(pruned), "retention_s": retention_s, "ids": [r.id for r in pruned[:20]]},
        )
    return len(pruned)


async def prune_step(admin: DurableRecord, coverage: CoverageWriter, retention_s: int) -> None:
    """One round of the invalidator's ``prune-history`` loop, off the event loop; a failure waits for the next."""
    try:
        await asyncio.to_thread(prune_history, admin, coverage, retention_s, int(time.time() * 1000))
    except Exception:  # a busy table or a lost session: the next round tries again, nothing was half-deleted
        log.exception("pruning the invalidation history failed; trying again at the next round")
