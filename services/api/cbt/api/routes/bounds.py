"""Bounds edits and consolidation on request (docs/operations/overrides.md#bounds-edits-and-consolidation).

* ``PUT /models/{id}/bounds``: store an external model's raw bounds ``[min, max)`` in Redis, as a scan would, and
  announce them (``bounds-updated``) so the coordinators plan its dependents at once. CBT's semantics: an edit is
  the cached bounds until the next scan, which treats it as its previous bounds (an incremental scan widens it, a
  full scan replaces it) — a correction of the cache, not a pin.
* ``DELETE /models/{id}/bounds``: forget them (the model reads as not scanned: its dependents wait) and ask the
  bounds-cache for a full scan now (the refresh-bounds request).
* ``POST /models/{id}/consolidate``: merge one incremental model's completion rows now, in this process. It is the
  transaction the coordinator's scheduled consolidation runs (one Delta commit that keeps coverage and task
  boundaries; a concurrent append makes it retry or give up, never lose a row), so running it beside the
  coordinator is safe, and the caller gets the result instead of a queued request.

Each needs a bearer token and is recorded in the audit table (``bounds-set``, ``bounds-delete``, ``consolidate``).
The CBT-compatible admin routes (``routes_cbt``) call the same functions.
"""

from __future__ import annotations

import logging
import time
from typing import Annotated, Any

from fastapi import APIRouter, Depends
from pydantic import Field, StrictInt

from cbt.api.common import AUTH_PROBLEMS, blocking, context, model_of
from cbt.api.context import ApiContext
from cbt.api.problems import ApiProblem, Unavailable, bad_request
from cbt.api.routes.actions import Who
from cbt.api.schemas import Body
from cbt.contract.messages import BoundsUpdated
from cbt.models.spec import ExternalModel, IncrementalModel
from cbt.scheduling.bounds_edit import BoundsRejected, checked_bounds
from cbt.scheduling.snapshot import RawBounds
from cbt.state.admin_records import AuditAction, Consolidation

log = logging.getLogger("cbt.api")
router = APIRouter(prefix="/api/v1", tags=["actions"], responses=AUTH_PROBLEMS)
Ctx = Annotated[ApiContext, Depends(context)]


class BoundsEdit(Body):
    min: StrictInt = Field(description="first position the external table holds (raw, before its lag)")
    max: StrictInt = Field(description="end of its positions, exclusive: [min, max)")


class Bounds(Body):
    min: int
    max: int


class BoundsSet(Body):
    model: str
    min: int
    max: int
    previous: Bounds | None = Field(description="the bounds stored before (null: none)")


class BoundsDeleted(Body):
    model: str
    removed: Bounds | None = Field(description="the bounds removed (null: none were stored)")
    rescan: bool = Field(description="a full scan was requested from the bounds-cache")


class Consolidated(Body):
    model: str
    rows_before: int
    rows_after: int


def _shown(bounds: RawBounds | None) -> Bounds | None:
    return None if bounds is None else Bounds(min=bounds.min, max=bounds.max)


async def _audit(ctx: ApiContext, who: str, action: str, target: str, detail: dict[str, Any]) -> None:
    entry = AuditAction(at_ms=int(time.time() * 1000), who=who, action=action, target=target, detail=detail)
    try:
        await blocking(ctx.admin.record_action, entry)
    except Unavailable as e:
        log.error(
            "a bounds or consolidation change was made but not recorded",
            extra={"action": action, "target": target, "detail": detail},
        )
        raise Unavailable(
            f"{action} of {target} was made but could not be recorded in the audit table: {e.detail}"
        ) from e


def _external(ctx: ApiContext, model_id: str) -> ExternalModel:
    model = model_of(ctx, model_id)
    if not isinstance(model, ExternalModel):
        raise bad_request(f"{model_id} is not an external model: only external models have bounds")
    return model


async def set_bounds(ctx: ApiContext, who: str, model_id: str, low: object, high: object) -> BoundsSet:
    """Check, store, announce, audit; the shared body of our route and CBT's."""
    model = _external(ctx, model_id)
    try:
        bounds = checked_bounds(low, high)
    except BoundsRejected as e:
        raise bad_request(str(e)) from e
    previous = await blocking(ctx.hot.bounds.put_bounds, model.id, bounds)
    await ctx.commands.announce_bounds(
        BoundsUpdated(
            model=model.id,
            min=bounds.min,
            max=bounds.max,
            previous_min=previous.min if previous else None,
            previous_max=previous.max if previous else None,
            scan="full",
        )
    )
    await _audit(
        ctx,
        who,
        "bounds-set",
        model.id,
        {"min": bounds.min, "max": bounds.max, "previous": None if previous is None else [previous.min, previous.max]},
    )
    return BoundsSet(model=model.id, min=bounds.min, max=bounds.max, previous=_shown(previous))


async def delete_bounds(ctx: ApiContext, who: str, model_id: str) -> BoundsDeleted:
    model = _external(ctx, model_id)
    removed = await blocking(ctx.hot.bounds.delete_bounds, model.id)
    await blocking(ctx.refresh.request, model.id)
    await _audit(
        ctx, who, "bounds-delete", model.id, {"removed": None if removed is None else [removed.min, removed.max]}
    )
    return BoundsDeleted(model=model.id, removed=_shown(removed), rescan=True)


async def consolidate(ctx: ApiContext, who: str, model_id: str) -> Consolidation:
    model = model_of(ctx, model_id)
    if not isinstance(model, IncrementalModel):
        raise bad_request(
            f"{model_id} is not an incremental model: only incremental models have completion rows to consolidate"
        )
    done = await blocking(ctx.admin.consolidate, model.id)
    if done.is_deferred:
        raise ApiProblem(
            409,
            f"{model.id}: concurrent completions kept winning over the rewrite; nothing changed, "
            "try again (the coordinator's next consolidation also will)",
            "conflict",
        )
    await _audit(ctx, who, "consolidate", model.id, {"rows_before": done.rows_before, "rows_after": done.rows_after})
    return done


@router.put(
    "/models/{model_id}/bounds",
    response_model=BoundsSet,
    summary="Set an external model's bounds [min, max) (raw, before lag) and plan its dependents with them; "
    "the next scan starts from them (an incremental scan widens them, a full scan replaces them)",
)
async def put_bounds(ctx: Ctx, who: Who, model_id: str, body: BoundsEdit) -> BoundsSet:
    return await set_bounds(ctx, who, model_id, body.min, body.max)


@router.delete(
    "/models/{model_id}/bounds",
    response_model=BoundsDeleted,
    summary="Delete an external model's bounds and ask the bounds-cache for a full scan now; until it "
    "ends, the model reads as not scanned (its dependents wait)",
)
async def remove_bounds(ctx: Ctx, who: Who, model_id: str) -> BoundsDeleted:
    return await delete_bounds(ctx, who, model_id)


@router.post(
    "/models/{model_id}/consolidate",
    response_model=Consolidated,
    responses={409: {"description": "concurrent completions kept winning; nothing changed, try again"}},
    summary="Merge an incremental model's completion rows now (coverage and task boundaries unchanged)",
)
async def consolidate_now(ctx: Ctx, who: Who, model_id: str) -> Consolidated:
    done = await consolidate(ctx, who, model_id)
    return Consolidated(model=done.model, rows_before=done.rows_before, rows_after=done.rows_after)
