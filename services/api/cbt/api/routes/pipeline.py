"""``/api/v1`` across the pipeline: failures, invalidations, external bounds, scheduled runs, the DAG, the audit log,
live events and how positions of each interval type are shown."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.sse import EventSourceResponse, ServerSentEvent

from cbt.api import catalog, interval_display
from cbt.api.common import PROBLEMS, blocking, context, model_of
from cbt.api.context import ApiContext
from cbt.api.history import failures_known
from cbt.api.problems import ApiProblem
from cbt.api.schemas import (
    AuditItem,
    AuditList,
    BoundsItem,
    BoundsList,
    DagBody,
    DagEdge,
    DagNode,
    FailureList,
    IntervalTypeList,
    InvalidationList,
    ModelChangesBody,
    ModelVersionItem,
    ModelVersionsBody,
    ScheduledList,
    ScheduledRunItem,
    ScheduleItem,
    ScheduleList,
    ShownPosition,
)
from cbt.api.translate import failure_item, invalidation_item
from cbt.contract.messages import MAX_POSITION
from cbt.models.deployment import DeployedVersion
from cbt.models.spec import model_kind
from cbt.models.versions import short_version
from cbt.scheduling import bounds as bnd
from cbt.scheduling.coverage import Coverage
from cbt.scheduling.next_run import next_run
from cbt.service import model_changes

if TYPE_CHECKING:
    from cbt.state.admin_records import ScheduledRun

router = APIRouter(prefix="/api/v1", tags=["state"], responses=PROBLEMS)
Ctx = Annotated[ApiContext, Depends(context)]
Limit = Annotated[int, Query(ge=1, le=1000)]


@router.get("/failures", response_model=FailureList,
            summary="Tasks that failed their last attempt, newest first (admin tables, and the coordinator's "
                    "failure log for those not recorded yet)")
async def get_failures(ctx: Ctx, model: str | None = None, limit: Limit = 100) -> FailureList:
    ids = None if model is None else [model_of(ctx, model).id]
    recorded, hot = await asyncio.gather(blocking(ctx.admin.failures, ids, limit),
                                         blocking(ctx.hot.failures.recent_failures, ids or [m.id for m in ctx.models]))
    known = failures_known(recorded, (f for fs in hot.values() for f in fs), limit)
    return FailureList(failures=[failure_item(f) for f in known])


@router.get("/invalidations", response_model=InvalidationList,
            summary="Accepted invalidations (reruns) and what they affected, newest first")
async def get_invalidations(ctx: Ctx, model: str | None = None, limit: Limit = 100) -> InvalidationList:
    wanted = None if model is None else model_of(ctx, model).id
    records = await blocking(ctx.admin.invalidations, limit)
    chosen = [r for r in records if wanted is None or r.model == wanted or wanted in r.affected]
    return InvalidationList(invalidations=[invalidation_item(r) for r in chosen])


@router.get("/model-changes", response_model=ModelChangesBody,
            summary="The loaded model files against the deployed versions: what changed, why, and what a deployment "
                    "of these files recomputes (docs/changing-models.md)")
async def get_model_changes(ctx: Ctx) -> ModelChangesBody:
    covered = await blocking(ctx.hot.coverage.coverages, [m.id for m in ctx.config_models.incrementals])
    changes = await blocking(model_changes.compare, ctx.config, ctx.config_models, covered)
    return ModelChangesBody.model_validate(model_changes.to_json(changes))


@router.get("/model-versions", response_model=ModelVersionsBody,
            summary="Every model's deployed versions and their states: the live one, a build in progress and how far "
                    "it covers, the versions a rollback can go back to (docs/changing-models.md)")
async def get_model_versions(ctx: Ctx) -> ModelVersionsBody:
    every = await blocking(model_changes.read_versions, ctx.config)
    if every is None:
        return ModelVersionsBody(recorded=False, versions=[])
    builds = [v.build_table for v in every if v.state == "building" and v.build_table]
    incrementals = sorted({v.model for v in every} & {m.id for m in ctx.models.incrementals})
    covered, held = await asyncio.gather(
        blocking(ctx.hot.coverage.coverages, [*builds, *(v.model for v in every if v.state == "building")]),
        blocking(ctx.hot.coverage.version_coverage, incrementals))
    return ModelVersionsBody(recorded=True, versions=[_version_item(v, covered, held.get(v.model, {})) for v in sorted(
        every, key=lambda v: (v.model, -v.version))])


def _version_item(version: DeployedVersion, covered: Mapping[str, Coverage],
                  held: Mapping[str | None, Coverage]) -> ModelVersionItem:
    building = version.state == "building" and version.build_table is not None
    return ModelVersionItem(
        model=version.model, version=version.version, state=version.state, category=version.category,
        reasons=list(version.reasons), deployed_at_ms=version.deployed_ms, build_table=version.build_table,
        build_covered=[list(r) for r in covered.get(version.build_table or "", ())] if building else None,
        live_covered=[list(r) for r in covered.get(version.model, ())] if building else None,
        table_version=version.table_version,
        holds=[list(r) for r in held.get(short_version(version.data_hash), ())])


@router.get("/bounds", response_model=BoundsList, summary="Every external model's scanned bounds")
async def get_bounds(ctx: Ctx) -> BoundsList:
    externals = ctx.models.externals
    raw = await blocking(ctx.hot.bounds.bounds, [m.id for m in externals])
    items = []
    for model in externals:
        scanned = raw.get(model.id)
        items.append(BoundsItem(model=model.id, min=scanned.min if scanned else None,
                                max=scanned.max if scanned else None, lag=model.lag,
                                valid_range=bnd.external_range(scanned, model.lag), scanned_at_ms=None))
    return BoundsList(bounds=items)


@router.get("/scheduled", response_model=ScheduledList, summary="Scheduled models' latest runs, newest first")
async def get_scheduled(ctx: Ctx, limit: Annotated[int, Query(ge=1, le=100)] = 20) -> ScheduledList:
    ids = [m.id for m in ctx.models.scheduled]
    runs = await blocking(ctx.admin.recent_scheduled_runs, ids, limit) if ids else []
    items = [_run_item(r) for r in runs]
    return ScheduledList(runs=sorted(items, key=lambda r: (-r.scheduled_unix, r.model)))


def _run_item(run: ScheduledRun) -> ScheduledRunItem:
    return ScheduledRunItem(model=run.model, scheduled_unix=run.scheduled_unix, status=run.status,
                            error=run.error or None, duration_ms=run.duration_ms, at_ms=run.updated_at_ms)


@router.get("/schedules", response_model=ScheduleList,
            summary="Each scheduled model's schedule in force, latest run and next run (computed from the schedule)")
async def get_schedules(ctx: Ctx) -> ScheduleList:
    models, paused = list(ctx.models.scheduled), ctx.paused  # (live overrides applied: ``in_force``)
    ids = [m.id for m in models]
    runs = await blocking(ctx.admin.recent_scheduled_runs, ids, 1) if ids else []
    latest = {r.model: r for r in runs}
    now_unix = int(time.time())
    items = []
    for model in sorted(models, key=lambda m: m.id):
        last = latest.get(model.id)
        upcoming = next_run(model.schedule, last.scheduled_unix if last else None, now_unix,
                                          model.id not in paused)
        items.append(ScheduleItem(model=model.id, schedule=model.schedule, enabled=model.id not in paused,
                                  last_run=_run_item(last) if last else None, next_unix=upcoming.next_unix,
                                  is_due=upcoming.is_due, problem=upcoming.problem))
    return ScheduleList(now_unix=now_unix, models=items)


@router.get("/dag", response_model=DagBody, summary="Models and their dependency edges, with a rank and a status")
async def get_dag(ctx: Ctx) -> DagBody:
    ids = [m.id for m in ctx.models]
    state = await blocking(ctx.live.read_shown, ids)
    failed = catalog.failed_counts(await blocking(ctx.hot.failures.recent_failures, ids))
    ranks = catalog.ranks(ctx.models)
    nodes = [DagNode(id=m.id, type=model_kind(m), rank=ranks.get(m.id, 0),
                     status=catalog.node_status(m, catalog.summarize(m, ctx.models, state, failed.get(m.id, 0))))
             for m in ctx.models]
    edges = [DagEdge.model_validate({"from": e.source, "to": e.target, "or_group": e.or_group})
             for e in catalog.edges(ctx.models)]
    return DagBody(nodes=nodes, edges=edges)


@router.get("/audit", response_model=AuditList, summary="Changes made through the API: who, when, what")
async def get_audit(ctx: Ctx, limit: Limit = 100) -> AuditList:
    actions = await blocking(ctx.admin.actions, limit)
    return AuditList(actions=[AuditItem(at_ms=a.at_ms, who=a.who, action=a.action, target=a.target,
                                        detail=dict(a.detail)) for a in actions])


RECONNECT_MS = 1000
"""How long a browser waits before opening a stream again once one ended."""


@router.get("/events", response_class=EventSourceResponse,
            summary="Server-sent events from Kafka: interval-completed, task-failed, invalidation, bounds-updated, "
                    "task-requested (data: the message JSON)")
async def get_events(request: Request) -> AsyncIterator[ServerSentEvent]:
    """The stream ends after ``api.max_event_stream_s`` (its slot is never held for good); the browser's
    EventSource reconnects by itself after the ``retry`` it was given."""
    ctx = context(request)
    ends_at = time.monotonic() + ctx.config.api.max_event_stream_s
    with ctx.events.subscribe() as queue:
        yield ServerSentEvent(comment="connected", retry=RECONNECT_MS)
        while True:
            try:
                event = await asyncio.wait_for(queue.get(), max(0.0, ends_at - time.monotonic()))
            except TimeoutError:
                yield ServerSentEvent(comment="stream lifetime reached (api.max_event_stream_s): reconnect")
                return
            if event is None:
                return
            name, data = event
            yield ServerSentEvent(event=name, data=data)


@router.get("/interval-types", response_model=IntervalTypeList,
            summary="How positions of each interval type are shown (config interval_types, else the default: time "
                    "types as times, others as numbers)")
async def get_interval_types(ctx: Ctx) -> IntervalTypeList:
    used = (t for t in (catalog.interval_type(m) for m in ctx.models) if t is not None)
    return interval_display.interval_type_list(used, ctx.config.interval_types)


@router.get("/interval-types/{interval_type}/show", response_model=ShownPosition,
            summary="One position shown by each transformation of its interval type")
async def show_position(ctx: Ctx, interval_type: str,
                        position: Annotated[int, Query(ge=0, le=MAX_POSITION)]) -> ShownPosition:
    used = {t for t in (catalog.interval_type(m) for m in ctx.models) if t is not None}
    if interval_type not in used and interval_type not in ctx.config.interval_types:
        raise ApiProblem(404, f"no model uses the interval type {interval_type!r} and the config does not list it")
    return interval_display.shown(interval_type, position, ctx.config.interval_types, int(time.time() * 1000))
