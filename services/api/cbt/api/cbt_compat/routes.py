"""The original CBT's REST API (ethpandaops/cbt ``api/openapi.yaml`` and its management routes), under CBT's paths with
CBT's bodies, for the tools and the frontend built against it. Read from what the other routes read: the models, the
hot state in Redis and, for scheduled runs, the admin table the ``/scheduled`` route reads.

Two bases. ``/api/v1``: every CBT path except ``GET /api/v1/models``, which stays ours (a superset: ``total`` and the
``type=transformation`` filter, but our ``type`` values ``incremental``/``scheduled``). ``/cbt/api/v1``: all of CBT's
paths, ``/models`` included with CBT's own ``type`` (``external``/``transformation``): the base to give a client that
checks the listing's enum, such as CBT's frontend. The ``/api/v1`` copies are documented (tag "CBT compatible").

CBT's admin routes (bounds, consolidate, refresh-bounds, run-now, delete-period, the config overrides) act over our
actions with CBT's bodies (``cbt_admin``, ``cbt_overrides``): a bearer token from ``api.auth.tokens``, our checks and
audit rows. delete-period is our rerun of the range (the range runs again; coverage is kept until it does), not a
deletion of completion rows; ``cbt_admin`` says how the answers differ.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Path

from cbt.api import catalog
from cbt.api.cbt_compat import admin as cbt_admin
from cbt.api.cbt_compat import schemas as s
from cbt.api.cbt_compat import shapes as cbt_shapes
from cbt.api.cbt_compat.debug import coverage_debug
from cbt.api.cbt_compat.errors import CbtRoute
from cbt.api.common import AUTH_PROBLEMS, PROBLEMS, blocking, context
from cbt.api.context import ApiContext
from cbt.api.problems import ApiProblem, bad_request
from cbt.contract.messages import MAX_POSITION
from cbt.models.spec import ExternalModel, IncrementalModel, Model, ModelId, ScheduledModel, model_kind
from cbt.scheduling import coverage as cov
from cbt.scheduling.snapshot import StateSnapshot

TAG = "CBT compatible"
BASE = "/api/v1"
COMPAT_BASE = "/cbt/api/v1"
TAG_DOC = {
    "name": TAG,
    "description": "The original CBT's API (ethpandaops/cbt `api/openapi.yaml`): its paths, bodies and error "
                   "members (`error`, `code`, beside the problem's). Every operation here also answers under "
                   f"`{COMPAT_BASE}`, where `GET {COMPAT_BASE}/models` is CBT's own listing (`type`: external | "
                   f"transformation); `GET {BASE}/models` stays ours. CBT's admin routes act over ours (a bearer token "
                   "from api.auth.tokens; the same checks and audit rows); delete-period re-runs the range rather "
                   "than deleting its completion rows.",
}
Ctx = Annotated[ApiContext, Depends(context)]
Position = Annotated[int, Path(ge=0, le=MAX_POSITION)]
NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"description": "Unknown model, or not of this kind"}}
ERRORS: dict[int | str, dict[str, Any]] = {
    **{status: what for status, what in PROBLEMS.items() if status not in (404, 422)},  # (invalid input is 400 here)
    400: {"description": "Invalid parameters, or a model of the wrong kind (CBT's Error members included)"},
    503: {"description": "Redis or the admin tables did not answer"},
}


def _of_kind(ctx: ApiContext, model_id: ModelId, kind: type[Model] | tuple[type[Model], ...]) -> Model:
    model = ctx.models.models.get(model_id)
    if model is None or not isinstance(model, kind):
        raise ApiProblem(404, f"Model not found: {model_id}", "unknown-model")
    return model


def _transformation(ctx: ApiContext, model_id: ModelId) -> IncrementalModel | ScheduledModel:
    model = _of_kind(ctx, model_id, (IncrementalModel, ScheduledModel))
    assert isinstance(model, IncrementalModel | ScheduledModel)
    return model


def _incremental(ctx: ApiContext, model_id: ModelId) -> IncrementalModel:
    model = _transformation(ctx, model_id)
    if not isinstance(model, IncrementalModel):
        raise bad_request(f"model is not incremental type: {model_id} is a scheduled model")
    return model


async def list_models(ctx: Ctx, type: Literal["external", "transformation"] | None = None,
                      database: str | None = None, search: str | None = None) -> s.ModelSummaryList:
    chosen = [cbt_shapes.summary(m) for m in ctx.models
              if catalog.matches(m, None, database, None, search)]
    models = [m for m in chosen if type is None or m.type == type]
    return s.ModelSummaryList(models=models, total=len(models))


async def list_external(ctx: Ctx, database: str | None = None) -> s.ExternalModelList:
    models = [cbt_shapes.external(m) for m in ctx.models.externals if database is None or m.database == database]
    return s.ExternalModelList(models=models, total=len(models))


async def get_external(ctx: Ctx, id: str) -> s.ExternalModel:
    model = _of_kind(ctx, id, ExternalModel)
    assert isinstance(model, ExternalModel)
    return cbt_shapes.external(model)


async def _transformation_state(ctx: ApiContext, ids: list[ModelId]) -> tuple[StateSnapshot, dict[ModelId, int]]:
    state, failures = await asyncio.gather(blocking(ctx.live.read_shown, ids),
                                           blocking(ctx.hot.failures.recent_failures, ids))
    return state, catalog.failed_counts(failures)


async def list_transformations(ctx: Ctx, database: str | None = None,
                               type: Literal["scheduled", "incremental"] | None = None,
                               status: s.RunStatus | None = None) -> s.TransformationModelList:
    every: list[IncrementalModel | ScheduledModel] = [*ctx.models.incrementals, *ctx.models.scheduled]
    chosen = [m for m in every if (database is None or m.database == database)
              and (type is None or model_kind(m) == type)]
    state, failed = await _transformation_state(ctx, [m.id for m in chosen])
    bodies = [cbt_shapes.transformation(m, state, failed.get(m.id, 0)) for m in chosen]
    models = [b for b in bodies if status is None or b.metadata.last_run_status == status]
    return s.TransformationModelList(models=models, total=len(models))


async def get_transformation(ctx: Ctx, id: str) -> s.TransformationModel:
    model = _transformation(ctx, id)
    state, failed = await _transformation_state(ctx, [model.id])
    return cbt_shapes.transformation(model, state, failed.get(model.id, 0))


async def list_external_bounds(ctx: Ctx) -> s.ExternalBoundsList:
    externals = [m.id for m in ctx.models.externals]
    raw = await blocking(ctx.hot.bounds.bounds, externals)
    state = StateSnapshot(bounds=raw)
    bounds = [b for b in (cbt_shapes.external_bounds(m, state) for m in externals) if b is not None]
    return s.ExternalBoundsList(bounds=bounds, total=len(bounds))


async def get_external_bounds(ctx: Ctx, id: str) -> s.ExternalBounds:
    model = _of_kind(ctx, id, ExternalModel)
    found = cbt_shapes.external_bounds(model.id, StateSnapshot(bounds=await blocking(ctx.hot.bounds.bounds,
                                                                                     [model.id])))
    if found is None:
        raise ApiProblem(404, f"no bounds scanned yet for {model.id}", "not-found")
    return found


async def list_coverage(ctx: Ctx, database: str | None = None) -> s.CoverageList:
    ids = [m.id for m in ctx.models.incrementals if database is None or m.database == database]
    coverage = await blocking(ctx.hot.coverage.coverages, ids)
    items = [s.CoverageSummary(id=m, ranges=cbt_shapes.ranges(coverage.get(m, cov.EMPTY))) for m in ids]
    return s.CoverageList(coverage=items, total=len(items))


async def get_coverage(ctx: Ctx, id: str) -> s.CoverageSummary:
    model = _incremental(ctx, id)
    coverage = await blocking(ctx.hot.coverage.coverage, model.id)
    return s.CoverageSummary(id=model.id, ranges=cbt_shapes.ranges(coverage))


async def debug_coverage(ctx: Ctx, id: str, position: Position) -> s.CoverageDebug:
    model = _incremental(ctx, id)
    state = await blocking(ctx.live.read_shown, [model.id, *ctx.models.ancestors(model.id)])
    return coverage_debug(model, ctx.models.models, state, position)


async def interval_types(ctx: Ctx) -> s.IntervalTypes:
    kinds = {t for t in (catalog.interval_type(m) for m in ctx.models) if t is not None}
    return s.IntervalTypes(interval_types=cbt_shapes.interval_types(kinds, ctx.config.interval_types))


async def _last_runs(ctx: ApiContext, ids: list[ModelId]) -> list[s.ScheduledRun]:
    runs = await blocking(ctx.admin.recent_scheduled_runs, ids, 20) if ids else []
    latest: dict[ModelId, int] = {}
    for run in runs:
        if run.status == "success":
            latest[run.model] = max(latest.get(run.model, 0), run.updated_at_ms)
    return cbt_shapes.last_runs(ids, latest)


async def list_runs(ctx: Ctx, database: str | None = None) -> s.ScheduledRunList:
    runs = await _last_runs(ctx, [m.id for m in ctx.models.scheduled if database is None or m.database == database])
    return s.ScheduledRunList(runs=runs, total=len(runs))


async def get_runs(ctx: Ctx, id: str) -> s.ScheduledRun:
    model = _transformation(ctx, id)
    if not isinstance(model, ScheduledModel):
        raise bad_request(f"model is not scheduled type: {id} is an incremental model")
    return (await _last_runs(ctx, [model.id]))[0]


async def auth_session() -> s.AuthSession:
    return s.AuthSession(management_enabled=False, auth_methods=[], authenticated=False)


READS: tuple[tuple[str, Callable[..., Any], type[s.CbtBody], str, str], ...] = (
    ("/models", list_models, s.ModelSummaryList, "listAllModels", "Every model, lightweight (CBT's listing)"),
    ("/models/external", list_external, s.ExternalModelList, "listExternalModels", "External models"),
    ("/models/external/bounds", list_external_bounds, s.ExternalBoundsList, "listExternalBounds",
     "Scanned bounds of every external model that has them (raw, before lag)"),
    ("/models/external/{id}", get_external, s.ExternalModel, "getExternalModel", "One external model"),
    ("/models/external/{id}/bounds", get_external_bounds, s.ExternalBounds, "getExternalBounds",
     "One external model's scanned bounds"),
    ("/models/transformations", list_transformations, s.TransformationModelList, "listTransformations",
     "Incremental and scheduled transformations"),
    ("/models/transformations/coverage", list_coverage, s.CoverageList, "listTransformationCoverage",
     "Every incremental transformation's completed ranges"),
    ("/models/transformations/runs", list_runs, s.ScheduledRunList, "listScheduledRuns",
     "Every scheduled transformation's latest successful run"),
    ("/models/transformations/{id}", get_transformation, s.TransformationModel, "getTransformation",
     "One transformation"),
    ("/models/transformations/{id}/coverage", get_coverage, s.CoverageSummary, "getTransformationCoverage",
     "One incremental transformation's completed ranges"),
    ("/models/transformations/{id}/coverage/{position}", debug_coverage, s.CoverageDebug,
     "debugCoverageAtPosition", "Why a position can or cannot be processed: coverage, dependencies, verdict"),
    ("/models/transformations/{id}/runs", get_runs, s.ScheduledRun, "getScheduledRun",
     "One scheduled transformation's latest successful run"),
    ("/interval/types", interval_types, s.IntervalTypes, "getIntervalTypes",
     "Display transformations of each interval type the models use"),
    ("/auth/session", auth_session, s.AuthSession, "getAuthSession",
     "CBT's management session: management is not enabled here (its frontend hides its admin actions)"),
)
OURS = {f"{BASE}/models"}
"""CBT paths whose ``/api/v1`` form is one of our own routes."""

def _register(router: APIRouter, base: str, documented: bool) -> None:
    for path, endpoint, body, operation, summary in READS:
        if base + path in OURS:
            continue
        router.add_api_route(base + path, endpoint, methods=["GET"], response_model=body,
                             response_model_exclude_none=True, summary=summary, include_in_schema=documented,
                             operation_id=operation if documented else None,
                             responses={**ERRORS, **(NOT_FOUND if "{id}" in path else {})})
    for method, path, action, shape, operation, summary in cbt_admin.ROUTES:
        router.add_api_route(base + path, action, methods=[method], response_model=shape, summary=summary,
                             response_model_exclude_none=True, include_in_schema=documented,
                             operation_id=operation if documented else None,
                             responses={**ERRORS, **NOT_FOUND, **{k: AUTH_PROBLEMS[k] for k in (401, 403)},
                                        **cbt_admin.CONFLICTS.get(operation, {})})


def build_router() -> APIRouter:
    router = APIRouter(tags=[TAG], route_class=CbtRoute)
    _register(router, BASE, documented=True)
    _register(router, COMPAT_BASE, documented=False)
    return router


router = build_router()
