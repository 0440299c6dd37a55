"""Rebuilding Redis's hot coverage index from the durable record (Redis emptied, first start, on request).

The admin tables are the durable record; the hot index is a cache of them. The index says whether it was built
(``CoverageReader.is_built``): when it was not (Redis was emptied or never filled), the coordinator rebuilds before
planning, and workers and the invalidator wait, so a flushed Redis costs one admin-table read instead of re-running
every interval.

A rebuild may run beside live writers (``cbt admin rebuild-cache`` on a running system, an invalidator applying
an event): it reads each model's version first, then the durable record, and overwrites a model only if its
version did not change meanwhile (``CoverageWriter.replace_coverage``); a model written in between is read again.
The index is marked built only if it was not emptied during the rebuild (``CoverageWriter.mark_built``).
"""

from __future__ import annotations

import logging
from collections.abc import Collection

from cbt.base.errors import CbtError
from cbt.models.spec import ModelId
from cbt.scheduling import coverage as cov
from cbt.scheduling.task_runs import normalize, not_held
from cbt.scheduling.version_pieces import known
from cbt.state.ports import CoverageWriter, DurableRecord

log = logging.getLogger("cbt.planning")
REBUILD_ROUNDS = 5
"""How many times models written to during a rebuild are read again before the rebuild gives up."""


class RebuildIncomplete(CbtError):
    """Some models kept being written to while they were rebuilt, or the index was emptied meanwhile."""


def rebuild(admin: DurableRecord, coverage: CoverageWriter, model_ids: Collection[ModelId],
            scheduled_ids: Collection[ModelId], built_at: int, rounds: int = REBUILD_ROUNDS) -> dict[ModelId, int]:
    """Overwrite every incremental model's hot coverage, sequence, re-runs (the invalidated tasks its coverage
    does not hold again) and the versions that computed its ranges, and every scheduled model's "has run" flag,
    from the durable record, then mark the index built; returns the number of covered ranges per incremental model.

    Raises ``RebuildIncomplete`` (the index stays untrusted) when it cannot finish; calling it again is safe.
    """
    generation = coverage.generation()
    pending, counts = list(model_ids), dict[ModelId, int]()
    for _ in range(rounds):
        if not pending:
            break
        versions = coverage.versions(pending)
        seqs = admin.invalidation_seqs(pending)  # before the coverage: an event recorded in between is then above
        held = admin.version_coverage(pending)   # the sequence written, so its application is not skipped
        invalidated = admin.invalidated_ranges(pending)
        missed = []
        for model_id in pending:
            ranges = cov.union(*held.get(model_id, {}).values())  # (the coverage: every version's, and unknown)
            reruns = normalize(left for run in invalidated.get(model_id, ()) for left in not_held(run, ranges))
            if coverage.replace_coverage(model_id, ranges, seqs.get(model_id, 0), versions[model_id], reruns,
                                         known(held.get(model_id, {}))):
                counts[model_id] = len(ranges)
            else:
                missed.append(model_id)
        if missed:
            log.info("hot index rebuild: %d model(s) written to meanwhile, reading them again", len(missed))
        pending = missed
    if pending:
        raise RebuildIncomplete(f"hot index rebuild: {len(pending)} model(s) kept changing during the rebuild "
                                f"({', '.join(sorted(pending)[:5])}); try again")
    if scheduled_ids:
        for model_id, run in admin.last_scheduled_runs(scheduled_ids, successful_only=True).items():
            coverage.record_scheduled_run(model_id, run.scheduled_unix)
    if not coverage.mark_built(built_at, generation):
        raise RebuildIncomplete("hot index rebuild: Redis was emptied during the rebuild; try again")
    return counts

