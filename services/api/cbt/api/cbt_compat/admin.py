"""CBT's admin routes (its ``pkg/management/handlers.go``) with CBT's bodies, over the same actions as ours: a bearer
token, the same checks, the same audit rows.

* bounds ``PUT|DELETE /admin/models/{id}/bounds`` and ``POST …/consolidate``: ``routes_bounds``;
* ``POST …/refresh-bounds`` (a full scan now) and ``POST …/run-now``: ``routes_actions``;
* ``POST …/delete-period``: our rerun of the range (``routes_actions.rerun_range``). CBT deletes the model's
  completion rows over ``[start_pos, end_pos)`` (and, with ``cascade``, its incremental dependents'), so the range is
  a gap its backfill fills again. Ours re-runs the range through the invalidator at once, with the same reach (the
  model, and with ``cascade`` its descendants), and keeps the coverage until each re-run commits — dependents never
  see a hole. ``deleted_rows`` counts the tasks queued to re-run (CBT: the completion rows it deleted), per model in
  ``cascade_results``;
* the config-override routes: ``cbt_overrides``.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends
from pydantic import Field, StrictBool, StrictInt

from cbt.api.cbt_compat import overrides as co
from cbt.api.common import context
from cbt.api.context import ApiContext
from cbt.api.problems import bad_request
from cbt.api.routes import actions as routes_actions
from cbt.api.routes.actions import Who
from cbt.api.routes.bounds import consolidate, delete_bounds, set_bounds
from cbt.api.schemas import Body, RerunAccepted, RerunRequest
from cbt.contract.messages import MAX_POSITION

Ctx = Annotated[ApiContext, Depends(context)]


class UpdateBoundsRequest(Body):
    min: StrictInt = Field(description="first position (raw, before lag)")
    max: StrictInt = Field(description="end of the positions, exclusive")


class BoundsUpdatedBody(Body):
    model_id: str
    min: int
    max: int


class BoundsDeletedBody(Body):
    model_id: str
    deleted: bool


class ConsolidatedBody(Body):
    model_id: str
    ranges_merged: int = Field(description="how many fewer completion rows the model has")


async def update_bounds(ctx: Ctx, who: Who, id: str, body: UpdateBoundsRequest) -> BoundsUpdatedBody:
    done = await set_bounds(ctx, who, id, body.min, body.max)
    return BoundsUpdatedBody(model_id=done.model, min=done.min, max=done.max)


async def remove_bounds(ctx: Ctx, who: Who, id: str) -> BoundsDeletedBody:
    done = await delete_bounds(ctx, who, id)
    return BoundsDeletedBody(model_id=done.model, deleted=True)


async def consolidate_model(ctx: Ctx, who: Who, id: str) -> ConsolidatedBody:
    done = await consolidate(ctx, who, id)
    return ConsolidatedBody(model_id=done.model, ranges_merged=done.rows_before - done.rows_after)


class RefreshRequested(Body):
    model_id: str
    scan_type: str = Field(description="always full: the bounds-cache scans the whole table")


class RunEnqueued(Body):
    model_id: str
    status: str = Field(description="always enqueued")


class DeletePeriodRequest(Body):
    start_pos: StrictInt = Field(ge=0, le=MAX_POSITION, description="first position")
    end_pos: StrictInt = Field(ge=0, le=MAX_POSITION, description="end of the range, exclusive")
    cascade: StrictBool = Field(default=False, description="also every incremental descendant")


class CascadeResult(Body):
    model_id: str
    deleted_rows: int = Field(description="tasks of this descendant queued to re-run")


class PeriodDeleted(Body):
    model_id: str
    deleted_rows: int = Field(description="tasks of the model queued to re-run (CBT: completion rows deleted)")
    cascade_results: list[CascadeResult] | None = Field(
        default=None, description="each descendant re-run (cascade), else absent"
    )


async def refresh(ctx: Ctx, who: Who, id: str) -> RefreshRequested:
    done = await routes_actions.refresh_bounds(ctx, who, id)
    return RefreshRequested(model_id=done.model, scan_type="full")


async def run_now(ctx: Ctx, who: Who, id: str) -> RunEnqueued:
    await routes_actions.run_now(ctx, who, id)
    return RunEnqueued(model_id=id, status="enqueued")


async def delete_period(ctx: Ctx, who: Who, id: str, body: DeletePeriodRequest) -> PeriodDeleted:
    if body.start_pos >= body.end_pos:
        raise bad_request("start_pos must be less than end_pos")
    request = RerunRequest(start=body.start_pos, end=body.end_pos, cascade=body.cascade, reason="CBT delete-period")
    done = await routes_actions.rerun_range(ctx, who, id, request)
    assert isinstance(done, RerunAccepted)
    others = [CascadeResult(model_id=m, deleted_rows=len(tasks)) for m, tasks in done.affected.items() if m != id]
    return PeriodDeleted(
        model_id=id, deleted_rows=len(done.affected.get(id, [])), cascade_results=others if body.cascade else None
    )


CONFLICTS: dict[str, dict[int | str, dict[str, str]]] = {
    "runNow": {409: {"description": "a run of this model for this second is already in flight"}},
    "consolidate": {409: {"description": "concurrent completions kept winning; nothing changed, try again"}},
}

ROUTES = (
    (
        "PUT",
        "/admin/models/{id}/bounds",
        update_bounds,
        BoundsUpdatedBody,
        "updateBounds",
        "Set an external model's bounds (as PUT /api/v1/models/{id}/bounds)",
    ),
    (
        "DELETE",
        "/admin/models/{id}/bounds",
        remove_bounds,
        BoundsDeletedBody,
        "deleteBounds",
        "Delete an external model's bounds and rescan it (as DELETE /api/v1/models/{id}/bounds)",
    ),
    (
        "POST",
        "/admin/models/{id}/consolidate",
        consolidate_model,
        ConsolidatedBody,
        "consolidate",
        "Consolidate an incremental model's completion rows now (as POST /api/v1/models/{id}/consolidate)",
    ),
    (
        "POST",
        "/admin/models/{id}/refresh-bounds",
        refresh,
        RefreshRequested,
        "refreshBounds",
        "Ask the bounds-cache for a full scan of an external model now (as POST /api/v1/bounds/{id}/refresh)",
    ),
    (
        "POST",
        "/admin/models/{id}/run-now",
        run_now,
        RunEnqueued,
        "runNow",
        "Run a scheduled model now (as POST /api/v1/models/{id}/run-now)",
    ),
    (
        "POST",
        "/admin/models/{id}/delete-period",
        delete_period,
        PeriodDeleted,
        "deletePeriod",
        "Make [start_pos, end_pos) run again: our rerun of the range (coverage kept until each re-run commits), "
        "not CBT's deletion of its completion rows",
    ),
    (
        "GET",
        "/admin/models/{id}/config-override",
        co.show_admin,
        co.ConfigOverrideShown,
        "getConfigOverrideAdmin",
        "A model's live config override in CBT's shape, with its base config (as GET /api/v1/models/{id}/overrides)",
    ),
    (
        "PUT",
        "/admin/models/{id}/config-override",
        co.set_override,
        co.OverrideUpdated,
        "setConfigOverride",
        "Set a model's live config override from CBT's body {enabled, config} (as PUT /api/v1/models/{id}/overrides)",
    ),
    (
        "DELETE",
        "/admin/models/{id}/config-override",
        co.delete_override,
        co.OverrideDeleted,
        "deleteConfigOverride",
        "Clear a model's live config override (as DELETE /api/v1/models/{id}/overrides)",
    ),
    (
        "GET",
        "/admin/config-overrides",
        co.list_all,
        co.ConfigOverrideList,
        "listConfigOverrides",
        "Every live config override in CBT's shape (as GET /api/v1/overrides)",
    ),
    (
        "DELETE",
        "/admin/config-overrides",
        co.clear_all,
        co.OverridesCleared,
        "clearConfigOverrides",
        "Clear every live config override (one audit row each)",
    ),
    (
        "GET",
        "/models/{id}/config-override",
        co.show,
        co.ConfigOverrideShown,
        "getConfigOverride",
        "A model's live config override in CBT's shape, with its base config (CBT's public read; no token)",
    ),
)
"""(method, CBT path, endpoint, response body, operation id, summary)"""
