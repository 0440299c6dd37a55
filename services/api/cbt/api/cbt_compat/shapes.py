"""Our models and state in the original CBT's shapes (``cbt_schemas``). Pure: values in, bodies out.

Positions map one to one; a CBT range is ``{position, interval}`` where ours is ``[start, end)``. A model's coverage
is our merged coverage (CBT lists its admin table's rows; after its consolidation those are merged too)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from datetime import UTC, datetime

from cbt.api import catalog
from cbt.api.cbt_compat import schemas as s
from cbt.config.interval_types import IntervalTypes, Transformation
from cbt.models.spec import ExternalModel, IncrementalModel, Model, ModelId, ScheduledModel, is_time_type
from cbt.scheduling.coverage import Range
from cbt.scheduling.snapshot import StateSnapshot


def summary(model: Model) -> s.ModelSummary:
    return s.ModelSummary(id=model.id, type="external" if isinstance(model, ExternalModel) else "transformation",
                          database=model.database, table=model.table)


def duration(seconds: int) -> str:
    """Seconds as CBT writes a Go duration: ``90`` → ``1m30s``, ``3600`` → ``1h``."""
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    text = "".join(f"{n}{unit}" for n, unit in ((hours, "h"), (minutes, "m"), (secs, "s")) if n)
    return text or "0s"


def external(model: ExternalModel) -> s.ExternalModel:
    return s.ExternalModel(
        id=model.id, database=model.database, table=model.table, interval=s.ExternalInterval(type=model.interval_type),
        cache=s.ExternalCache(incremental_scan_interval=duration(model.cache.incremental_scan_interval_s),
                              full_scan_interval=duration(model.cache.full_scan_interval_s)),
        lag=model.lag)


def run_status(model: IncrementalModel | ScheduledModel, state: StateSnapshot, failed: int) -> s.RunStatus:
    """``failed``: tasks in the failure log; ``running``: tasks in flight; ``pending``: nothing completed yet."""
    if failed:
        return "failed"
    if state.in_flight.get(model.id):
        return "running"
    done = model.id not in state.never_ran if isinstance(model, ScheduledModel) else bool(state.coverage.get(model.id))
    return "success" if done else "pending"


def transformation(model: IncrementalModel | ScheduledModel, state: StateSnapshot,
                   failed: int) -> s.TransformationModel:
    body = s.TransformationModel(
        id=model.id, database=model.database, table=model.table,
        type="incremental" if isinstance(model, IncrementalModel) else "scheduled",
        content_type="sql" if model.sql is not None else "exec", content=model.sql or model.exec or "",
        tags=list(model.tags), depends_on=catalog.dependencies(model),
        metadata=s.TransformationMetadata(last_run_status=run_status(model, state, failed)))
    if isinstance(model, ScheduledModel):
        return body.model_copy(update={"schedule": model.schedule})
    return body.model_copy(update={
        "interval": s.TransformationInterval(min=model.interval.min, max=model.interval.max, type=model.interval.type),
        "schedules": s.TransformationSchedules(forwardfill=model.schedules.forwardfill,
                                               backfill=model.schedules.backfill),
        "limits": s.TransformationLimits(min=model.limits.min, max=model.limits.max),
        "fill": s.TransformationFill(direction=model.fill.direction, allow_gap_skipping=model.fill.allow_gap_skipping,
                                     buffer=model.fill.buffer),
    })


def ranges(coverage: Iterable[Range]) -> list[s.Range]:
    return [s.Range(position=start, interval=end - start) for start, end in coverage]


def external_bounds(model_id: ModelId, state: StateSnapshot) -> s.ExternalBounds | None:
    raw = state.bounds.get(model_id)
    return None if raw is None else s.ExternalBounds(id=model_id, min=raw.min, max=raw.max, initial_scan_complete=True)


TIME_STEPS = [s.IntervalTypeTransformation(name="Datetime", expression="value * 1000", format="datetime"),
              s.IntervalTypeTransformation(name="Unix seconds")]
"""CBT's display pipeline for an interval type whose positions are unix seconds (its ``datetime`` format reads
milliseconds)."""


def interval_types(types: Collection[str],
                   configured: IntervalTypes) -> dict[str, list[s.IntervalTypeTransformation]]:
    """Each interval type the models use or the config lists: the config's ``interval_types`` (CBT's own form;
    our ``label`` and ``number`` format, unknown to CBT, left out), else time types as dates, others as the raw
    number."""
    def cbt_step(t: Transformation) -> s.IntervalTypeTransformation:
        fmt = None if t.format == "number" else t.format
        return s.IntervalTypeTransformation(name=t.name, expression=t.expression, format=fmt)

    def default(kind: str) -> list[s.IntervalTypeTransformation]:
        return list(TIME_STEPS) if is_time_type(kind) else [s.IntervalTypeTransformation(name="Position")]

    return {kind: [cbt_step(t) for t in configured[kind]] if kind in configured else default(kind)
            for kind in sorted({*types, *configured})}


def last_runs(model_ids: Collection[ModelId], successes_ms: Mapping[ModelId, int]) -> list[s.ScheduledRun]:
    return [s.ScheduledRun(id=m, last_run=rfc3339(successes_ms[m]) if m in successes_ms else None)
            for m in model_ids]


def rfc3339(at_ms: int) -> str:
    return datetime.fromtimestamp(at_ms / 1000, tz=UTC).isoformat().replace("+00:00", "Z")
