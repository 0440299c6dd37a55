"""Rebuilding Redis's hot coverage index from the Delta admin tables (Redis emptied, first start, on request).

The admin tables are the durable record; the hot index is a cache of them. The index says whether it was built
(``CoverageReader.is_built``): when it was not (Redis was emptied or never filled), the coordinator rebuilds before
planning and workers wait, so a flushed Redis costs one admin-table read instead of re-running every interval.
"""

from __future__ import annotations

from collections.abc import Collection

from cbt.adapters.delta_admin import DeltaAdmin
from cbt.models.spec import ModelId
from cbt.state.ports import CoverageWriter


def rebuild(admin: DeltaAdmin, coverage: CoverageWriter, model_ids: Collection[ModelId],
            scheduled_ids: Collection[ModelId], built_at: int) -> dict[ModelId, int]:
    """Overwrite every incremental model's hot coverage and invalidation sequence, and every scheduled model's
    "has run" flag, from the admin tables; returns the number of covered ranges per incremental model. Stale rows
    (overtaken by a later invalidation) are already excluded by the admin adapter."""
    admin.ensure_tables()
    covered = admin.coverage(model_ids)
    seqs = admin.invalidation_seqs(model_ids)
    for model_id in model_ids:
        coverage.replace_coverage(model_id, covered.get(model_id, ()), seqs.get(model_id, 0))
    if scheduled_ids:
        for model_id in admin.last_scheduled_runs(scheduled_ids, successful_only=True):
            coverage.record_scheduled_run(model_id)
    coverage.mark_built(built_at)
    return {m: len(covered.get(m, ())) for m in model_ids}
