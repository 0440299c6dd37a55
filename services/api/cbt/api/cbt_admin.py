"""CBT's admin routes for bounds and consolidation (``PUT|DELETE /admin/models/{id}/bounds``,
``POST /admin/models/{id}/consolidate``) with CBT's bodies (its ``pkg/management/handlers.go``), over the same
actions as ours (``routes_bounds``): a bearer token, the same checks, the same audit rows."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends
from pydantic import Field, StrictInt

from cbt.api.common import context
from cbt.api.context import ApiContext
from cbt.api.routes_actions import Who
from cbt.api.routes_bounds import consolidate, delete_bounds, set_bounds
from cbt.api.schemas import Body

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
)
"""(method, CBT path, endpoint, response body, operation id, summary)"""
