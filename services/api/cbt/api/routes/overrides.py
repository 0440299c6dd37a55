"""Live config overrides (docs/operations/overrides.md): show, set and clear one model's override; list them all.

Setting and clearing need a bearer token and are recorded in the audit table like the other changes. An override is
checked against the model first (``cbt.models.live_overrides``): an unknown field, a bad schedule, a limit out of
range or a field the model's kind does not take is a 400 with the reason. The coordinators apply a change at their
next tick (they poll Redis's override version).
"""

from __future__ import annotations

import logging
import time
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends
from pydantic import BaseModel, ConfigDict

from cbt.api.common import AUTH_PROBLEMS, blocking, context, model_of
from cbt.api.context import ApiContext
from cbt.api.problems import ApiProblem, Unavailable, bad_request
from cbt.api.routes.actions import Who
from cbt.models import live_overrides
from cbt.models.live_overrides import OverrideRejected
from cbt.models.spec import IncrementalModel, Model, ScheduledModel
from cbt.planning.override_sync import LiveOverrides
from cbt.state.admin_records import AuditAction

log = logging.getLogger("cbt.api")
router = APIRouter(prefix="/api/v1", tags=["overrides"], responses=AUTH_PROBLEMS)
Ctx = Annotated[ApiContext, Depends(context)]


class ModelOverride(BaseModel):
    """A model's live override (null: none) and the fields in force with it."""

    model_config = ConfigDict(extra="forbid")
    model: str
    override: dict[str, Any] | None
    effective: dict[str, Any]


class OverrideList(BaseModel):
    overrides: dict[str, dict[str, Any]]


def store_of(ctx: ApiContext) -> LiveOverrides:
    if ctx.overrides is None:
        raise Unavailable("live config overrides are not available in this api (no Redis)")
    return ctx.overrides


def effective(model: Model) -> dict[str, Any]:
    """The overridable fields of a model as they are now (overrides applied)."""
    if isinstance(model, IncrementalModel):
        return {
            "schedules": {"forwardfill": model.schedules.forwardfill, "backfill": model.schedules.backfill},
            "limits": {"min": model.limits.min, "max": model.limits.max},
            "fill": {
                "direction": model.fill.direction,
                "allow_gap_skipping": model.fill.allow_gap_skipping,
                "buffer": model.fill.buffer,
            },
            "tags": list(model.tags),
        }
    if isinstance(model, ScheduledModel):
        return {"schedule": model.schedule, "tags": list(model.tags)}
    return {}


async def _shown(ctx: ApiContext, model_id: str) -> ModelOverride:
    """Read from the store, not the request's context (``in_force``: up to a tick old), so a change shows at once."""
    configured = ctx.config_models
    model = configured.get(model_id)
    _, stored = await blocking(store_of(ctx).current)
    fields = stored.get(model.id)
    shown = model
    enabled = True
    if fields is not None:
        try:
            override = live_overrides.check(configured, model.id, fields)
        except OverrideRejected:
            override = None
        if override is not None:
            applied, paused = live_overrides.apply(configured, {model.id: override})
            shown, enabled = applied.models[model.id], model.id not in paused
    kind = live_overrides.kind_of(model)
    extra = {"enabled": enabled} if live_overrides.APPLIES[kind] else {}
    return ModelOverride(model=model.id, override=fields, effective={**effective(shown), **extra})


async def audit(ctx: ApiContext, who: str, action: str, target: str, detail: dict[str, Any]) -> None:
    entry = AuditAction(at_ms=int(time.time() * 1000), who=who, action=action, target=target, detail=detail)
    try:
        await blocking(ctx.admin.record_action, entry)
    except Unavailable as e:
        log.error("an override change was made but not recorded", extra={"action": action, "target": target})
        raise Unavailable(
            f"{action} of {target} was made but could not be recorded in the audit table: {e.detail}"
        ) from e


@router.get("/overrides", response_model=OverrideList, summary="Every model's live config override")
async def list_overrides(ctx: Ctx) -> OverrideList:
    _, stored = await blocking(store_of(ctx).current)
    return OverrideList(overrides=dict(sorted(stored.items())))


@router.get(
    "/models/{model_id}/overrides",
    response_model=ModelOverride,
    summary="A model's live config override (null: none) and its overridable fields in force",
)
async def show_override(ctx: Ctx, model_id: str) -> ModelOverride:
    return await _shown(ctx, model_id)


@router.put(
    "/models/{model_id}/overrides",
    response_model=ModelOverride,
    summary="Set a model's live config override (replaces the one set before): enabled, schedules, limits, "
    "fill, tags (incremental); enabled, schedule, tags (scheduled). Applied at the next tick",
)
async def set_override(
    ctx: Ctx,
    who: Who,
    model_id: str,
    body: Annotated[
        dict[str, Any], Body(examples=[{"schedules": {"forwardfill": "@every 30s"}, "limits": {"min": 1000}}])
    ],
) -> ModelOverride:
    model = model_of(ctx, model_id)
    try:
        override = await blocking(
            store_of(ctx).set, ctx.config_models, model.id, body, who, int(time.time() * 1000)
        )
    except OverrideRejected as e:
        raise bad_request(str(e)) from e
    await audit(ctx, who, "override-set", model.id, dict(override.fields))
    return await _shown(ctx, model.id)


@router.delete(
    "/models/{model_id}/overrides",
    response_model=ModelOverride,
    responses={404: {"description": "the model has no live override"}},
    summary="Clear a model's live config override: its config applies again at the next tick",
)
async def clear_override(ctx: Ctx, who: Who, model_id: str) -> ModelOverride:
    model = model_of(ctx, model_id)
    if not await blocking(store_of(ctx).clear, model.id, who, int(time.time() * 1000)):
        raise ApiProblem(404, f"{model.id} has no live config override", "not-found")
    await audit(ctx, who, "override-clear", model.id, {})
    return await _shown(ctx, model.id)
