"""Rebuilding Redis's hot coverage index from the Delta admin tables (Redis emptied, first start, on request).

The admin table is the durable record; the hot index is a cache of it. A marker key says the index was built:
when it is missing (Redis was emptied or never filled), the coordinator rebuilds before planning, so a flushed
Redis costs one admin-table read instead of re-running every interval.
"""

from __future__ import annotations

from collections.abc import Collection

from cbt.adapters.delta_admin import DeltaAdmin
from cbt.adapters.redis_marks import RedisMarks
from cbt.models.spec import ModelId
from cbt.ports import CoverageWriter

BUILT_MARK = "hot-index-built"


def is_built(marks: RedisMarks) -> bool:
    return marks.get(BUILT_MARK) is not None


def rebuild(admin: DeltaAdmin, coverage: CoverageWriter, marks: RedisMarks, model_ids: Collection[ModelId],
            built_at: int) -> dict[ModelId, int]:
    """Overwrite every model's hot coverage and invalidation sequence from the admin tables; returns the number of
    covered ranges per model. Stale rows (overtaken by a later invalidation) are already excluded by the admin
    adapter."""
    admin.ensure_tables()
    covered = admin.coverage(model_ids)
    seqs = admin.invalidation_seqs(model_ids)
    for model_id in model_ids:
        coverage.replace_coverage(model_id, covered.get(model_id, ()), seqs.get(model_id, 0))
    marks.put(BUILT_MARK, built_at)
    return {m: len(covered.get(m, ())) for m in model_ids}
