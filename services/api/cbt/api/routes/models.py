"""``/api/v1/models``: the models, one model's configuration and rendered SQL, its coverage, gaps, the explain tree
of a position and its task history."""

from __future__ import annotations

import asyncio
import time
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query

from cbt.api import catalog
from cbt.api.common import PROBLEMS, blocking, check_range, context, incremental_of, model_of
from cbt.api.context import ApiContext
from cbt.api.coverage_view import STATUSES, Status, coverage_view, default_window, layer, verdict_layers
from cbt.api.explain import explain
from cbt.api.history import merged
from cbt.api.problems import bad_request
from cbt.api.routes.rendering import rendered
from cbt.api.schemas import (
    CheckResultItem,
    CheckResultList,
    CoverageBody,
    ExplainBody,
    GapsBody,
    HeldItem,
    IntervalSettings,
    ModelDetail,
    ModelFilter,
    ModelItem,
    ModelList,
    ModelSummary,
    Rendered,
    StatusRangeBody,
    TaskList,
)
from cbt.api.translate import explanation_body
from cbt.contract.messages import MAX_POSITION
from cbt.models.spec import (
    ExternalModel,
    IncrementalModel,
    Model,
    ModelId,
    ScheduledModel,
    is_time_type,
    model_kind,
)
from cbt.scheduling import bounds as bnd
from cbt.scheduling import coverage as cov
from cbt.scheduling.coverage import Coverage
from cbt.scheduling.snapshot import StateSnapshot
from cbt.scheduling.status import model_status
from cbt.state.ports import CheckFilter

router = APIRouter(prefix="/api/v1/models", tags=["models"], responses=PROBLEMS)
Ctx = Annotated[ApiContext, Depends(context)]
PositionParam = Annotated[int, Query(ge=0, le=MAX_POSITION)]


def _involved(ctx: ApiContext, model_id: ModelId) -> list[ModelId]:
    return [model_id, *ctx.models.ancestors(model_id)]


@router.get("", response_model=ModelList, summary="Models, filtered by type, database, tag or part of the id")
async def list_models(ctx: Ctx, type: ModelFilter | None = None, database: str | None = None, tag: str | None = None,
                      search: str | None = None) -> ModelList:
    chosen = [m for m in ctx.models if catalog.matches(m, type, database, tag, search)]
    ids = list(dict.fromkeys(i for m in chosen for i in _involved(ctx, m.id)))
    state = await blocking(ctx.live.read_shown, ids)
    failed = catalog.failed_counts(await blocking(ctx.hot.failures.recent_failures, [m.id for m in chosen]))
    return ModelList(models=[_item(ctx, m, state, failed.get(m.id, 0)) for m in chosen], total=len(chosen))


def _item(ctx: ApiContext, model: Model, state: StateSnapshot, failed: int) -> ModelItem:
    summary = catalog.summarize(model, ctx.models, state, failed)
    interval = IntervalSettings(max=model.interval.max, min=model.interval.min) if isinstance(
        model, IncrementalModel) else None
    return ModelItem(id=model.id, type=model_kind(model), database=model.database, table=model.table,
                     interval_type=catalog.interval_type(model), interval=interval,
                     tags=[] if isinstance(model, ExternalModel) else list(model.tags),
                     dependencies=catalog.flat_dependencies(model),
                     schedule=model.schedule if isinstance(model, ScheduledModel) else None,
                     summary=ModelSummary(**vars(summary)), **_in_force(ctx, model.id))


def _in_force(ctx: ApiContext, model_id: ModelId) -> dict[str, Any]:
    """Whether a live override pauses the model, and the fields it sets (``in_force`` applied them)."""
    return {"enabled": model_id not in ctx.paused, "overridden": sorted(ctx.overridden.get(model_id, {}))}


@router.get("/{model_id}", response_model=ModelDetail, summary="One model: configuration, SQL, dependencies")
async def get_model(ctx: Ctx, model_id: str) -> ModelDetail:
    model = model_of(ctx, model_id)
    return ModelDetail(id=model.id, type=model_kind(model), database=model.database, table=model.table,
                       path=catalog.relative_path(model.source.path, ctx.config.base_dir),
                       interval_type=catalog.interval_type(model), config=catalog.config_of(model), sql=model.sql,
                       exec=model.exec, dependencies=catalog.dependencies(model),
                       dependents=list(ctx.models.dependents(model.id)), **_in_force(ctx, model.id))


@router.get("/{model_id}/rendered", response_model=Rendered,
            summary="What a worker runs for [start, end) (incremental), a scheduled run, or a bounds scan")
async def get_rendered(ctx: Ctx, model_id: str, start: PositionParam | None = None,
                       end: PositionParam | None = None) -> Rendered:
    model = model_of(ctx, model_id)  # (rendered in a thread: a template's work never holds the event loop)
    return await asyncio.to_thread(rendered, ctx.config, model, start, end, int(time.time()))


VERDICTS_SHOWN = 5000
"""The most check verdicts a timeline reads (newest first); older covered intervals show as covered."""


@router.get("/{model_id}/coverage", response_model=CoverageBody,
            summary="Coverage in a window as merged ranges with a status, and counts")
async def get_coverage(ctx: Ctx, model_id: str, from_: Annotated[int | None, Query(alias="from", ge=0,
                                                                                     le=MAX_POSITION)] = None,
                       to: PositionParam | None = None,
                       checks: Annotated[bool, Query(description="split covered intervals by their latest checks: "
                                                                 "passed, warned, accepted (a model with checks)")]
                       = False) -> CoverageBody:
    model = model_of(ctx, model_id)
    if isinstance(model, ScheduledModel):
        raise bad_request(f"{model_id} is a scheduled model: it runs at times, it has no positions to cover")
    state = await blocking(ctx.live.read_shown, _involved(ctx, model_id))
    if isinstance(model, ExternalModel):
        data = bnd.external_range(state.bounds.get(model.id), model.lag)
        layers: dict[Status, Coverage] = {"covered": layer([data] if data else [])}
        valid, imax, lag, frontier = data, None, None, None
    else:
        failures = (await blocking(ctx.hot.failures.recent_failures, [model_id])).get(model_id, [])
        status = model_status(model, ctx.models.models, state)
        layers = {"covered": status.coverage, "in_flight": layer(status.in_flight),
                  "failed": layer((f.position, f.position + f.interval) for f in failures
                                  if f.position is not None and f.interval is not None),
                  "invalidated_pending": layer(state.reruns.get(model_id, ())),
                  "skipped": state.skipped.get(model_id, cov.EMPTY),
                  "held": layer((h.start, h.end) for h in await blocking(ctx.live.held, model_id))}
        valid, imax, lag, frontier = status.valid, model.interval.max, status.lag, cov.frontier(status.coverage)
    window = _window(from_, to, default_window(valid, layers.values()))
    if checks and window is not None and isinstance(model, IncrementalModel) and model.checks:
        results = await blocking(ctx.admin.check_results, [model_id], VERDICTS_SHOWN, CheckFilter(window=window))
        layers |= verdict_layers(((r.position, r.end, r.task_id, r.status) for r in results), layers["covered"])
    view = None if window is None else coverage_view(window, layers, imax)
    seconds = lag if lag is not None and _is_time(model) else None
    return CoverageBody(
        model=model_id, window=window, valid_range=valid, interval_type=catalog.interval_type(model),
        ranges=[] if view is None else [StatusRangeBody(start=r.start, end=r.end, status=r.status)
                                        for r in view.ranges],
        counts={s: 0 if view is None else view.counts[s] for s in STATUSES},
        intervals=None if view is None or view.intervals is None else {s: view.intervals[s] for s in STATUSES},
        lag=lag, lag_seconds=seconds, frontier=frontier)


def _is_time(model: Model) -> bool:
    kind = catalog.interval_type(model)
    return kind is not None and is_time_type(kind)


def _window(start: int | None, end: int | None, default: tuple[int, int] | None) -> tuple[int, int] | None:
    if start is None and end is None:
        return default
    low = start if start is not None else default[0] if default is not None else None
    high = end if end is not None else default[1] if default is not None else None
    if low is None or high is None:
        raise bad_request("from, to: the model has no valid range or coverage to default to; give both")
    check_range(low, high, "from, to")
    return (low, high)


@router.get("/{model_id}/gaps", response_model=GapsBody, summary="Uncovered ranges inside the valid range")
async def get_gaps(ctx: Ctx, model_id: str) -> GapsBody:
    model = model_of(ctx, model_id)
    if isinstance(model, ScheduledModel):
        raise bad_request(f"{model_id} is a scheduled model: it has no positions, so no gaps")
    state = await blocking(ctx.live.read_shown, _involved(ctx, model_id))
    if isinstance(model, ExternalModel):
        return GapsBody(model=model_id, gaps=[], valid_range=bnd.external_range(state.bounds.get(model_id), model.lag))
    status = model_status(model, ctx.models.models, state)
    return GapsBody(model=model_id, gaps=list(status.gaps), valid_range=status.valid)


@router.get("/{model_id}/explain", response_model=ExplainBody,
            summary="Why [position, position + interval.max) can or cannot run: the dependency tree")
async def get_explain(ctx: Ctx, model_id: str, position: PositionParam) -> ExplainBody:
    model = incremental_of(ctx, model_id, "explain")
    state, held = await asyncio.gather(blocking(ctx.live.read_shown, _involved(ctx, model_id)),
                                       blocking(ctx.live.held, model_id))
    return explanation_body(explain(model, ctx.models.models, state, position, held))


@router.get("/{model_id}/checks", response_model=CheckResultList,
            summary="Interval checks: the verdicts recorded (newest first) and the intervals held now")
async def get_checks(ctx: Ctx, model_id: str,
                     status: Annotated[Literal["passed", "warned", "failed", "accepted"] | None, Query()] = None,
                     check: Annotated[str | None, Query(max_length=200)] = None,
                     low: Annotated[int | None, Query(alias="from", ge=0, le=MAX_POSITION)] = None,
                     high: Annotated[int | None, Query(alias="to", ge=0, le=MAX_POSITION)] = None,
                     limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> CheckResultList:
    model = model_of(ctx, model_id)
    checks = [c.name for c in model.checks] if isinstance(model, IncrementalModel) else []
    if check is not None and check not in checks:
        raise bad_request(f"check: {model_id} has no check {check!r}; its checks: {', '.join(checks) or 'none'}")
    window = None
    if low is not None or high is not None:
        window = (low or 0, MAX_POSITION if high is None else high)
        check_range(*window, "from, to")
    if not checks:
        return CheckResultList(checks=[], held=[], results=[])
    where = CheckFilter(status, check, window)
    results, held = await asyncio.gather(blocking(ctx.admin.check_results, [model_id], limit, where),
                                         blocking(ctx.live.held, model_id))
    return CheckResultList(
        checks=checks,
        held=[HeldItem(range=(h.start, h.end), version=h.version, reason=h.reason, accepted_by=h.accepted_by)
              for h in held],
        results=[CheckResultItem(range=(r.position, r.end), check=r.check, severity=r.severity,  # type: ignore[arg-type]
                                 status=r.status, violations=r.violations, rows=r.rows,  # type: ignore[arg-type]
                                 sample=list(r.sample), version=r.version, task_id=r.task_id,
                                 duration_ms=r.duration_ms, checked_at_ms=r.checked_at_ms) for r in results])


@router.get("/{model_id}/tasks", response_model=TaskList, summary="Task history, newest first (admin tables)")
async def get_tasks(ctx: Ctx, model_id: str, limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> TaskList:
    model = model_of(ctx, model_id)
    if isinstance(model, ExternalModel):
        return TaskList(tasks=[])
    retries = blocking(ctx.admin.retries, [model_id], limit)
    if isinstance(model, ScheduledModel):
        runs, retried = await asyncio.gather(blocking(ctx.admin.recent_scheduled_runs, [model_id], limit), retries)
        return TaskList(tasks=merged([], [], runs, limit, retried))
    completions, failures, retried = await asyncio.gather(blocking(ctx.admin.completions, model_id, limit),
                                                          blocking(ctx.admin.failures, [model_id], limit), retries)
    return TaskList(tasks=merged(completions, failures, [], limit, retried))
