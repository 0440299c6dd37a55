"""CBT's config-override routes (``pkg/management/handlers.go``) with CBT's bodies, over our live config overrides
(``routes_overrides``): the same checks (``live_overrides.check`` after CBT's body is translated by
``cbt_override_shape``; a CBT field with no counterpart here is a 400 naming it), the same stores and the same audit
rows (``override-set``, ``override-clear``). Every ``/admin/…`` route needs a write token, as CBT's admin group needs
its auth; ``GET /models/{id}/config-override`` is CBT's public read.

Two differences from CBT, both of ours: deleting a model's override when it has none answers ``deleted: false``
(CBT: always ``true``), and ``updated_at`` is not given (our hot store keeps no time; the admin table
``cbt_config_overrides`` and the audit log have it).
"""

from __future__ import annotations

import time
from typing import Annotated, Any

from fastapi import Body as JsonBody
from fastapi import Depends
from pydantic import Field

from cbt.api.cbt_compat.override_shape import CbtOverrideRejected, base_config, from_cbt, to_cbt
from cbt.api.common import blocking, context, model_of
from cbt.api.context import ApiContext
from cbt.api.problems import ApiProblem, bad_request
from cbt.api.routes import overrides as routes_overrides
from cbt.api.routes.actions import Who
from cbt.api.schemas import Body

Ctx = Annotated[ApiContext, Depends(context)]


class ConfigOverride(Body):
    """CBT's ``ConfigOverride`` (``updated_at`` left out: see the module)."""

    model_id: str
    model_type: str = Field(description="transformation | external")
    enabled: bool | None = Field(default=None, description="absent: the override does not set it")
    override: dict[str, Any] | None = Field(description="the override's fields besides enabled (CBT's config)")


class ConfigOverrideShown(Body):
    """CBT's answer to reading one model's override: the base config, and the override's members when it has one."""

    base_config: dict[str, Any] | None = Field(
        default=None, description="the model's overridable fields as its file sets them"
    )
    model_id: str | None = None
    model_type: str | None = None
    enabled: bool | None = None
    override: dict[str, Any] | None = None


class ConfigOverrideList(Body):
    overrides: list[ConfigOverride]


class OverrideUpdated(Body):
    model_id: str
    updated: bool


class OverrideDeleted(Body):
    model_id: str
    deleted: bool = Field(description="false: the model had no override")


class OverridesCleared(Body):
    cleared: bool


async def _stored(ctx: ApiContext) -> dict[str, dict[str, Any]]:
    return (await routes_overrides.list_overrides(ctx)).overrides


async def show(ctx: Ctx, id: str) -> ConfigOverrideShown:
    model = ctx.config_models.get(id)  # (the file's fields, not the override's)
    fields = (await _stored(ctx)).get(model.id)
    base = ConfigOverrideShown(base_config=base_config(model))
    if fields is None:
        return base
    return base.model_copy(update=to_cbt(model.id, fields))


async def show_admin(ctx: Ctx, who: Who, id: str) -> ConfigOverrideShown:
    return await show(ctx, id)


async def set_override(
    ctx: Ctx,
    who: Who,
    id: str,
    body: Annotated[
        dict[str, Any],
        JsonBody(
            examples=[
                {"enabled": True, "config": {"schedules": {"forwardfill": "@every 30s"}, "limits": {"min": 1000}}}
            ]
        ),
    ],
) -> OverrideUpdated:
    model = model_of(ctx, id)
    try:
        fields = from_cbt(model, body)
    except CbtOverrideRejected as e:
        raise bad_request(f"{model.id}: {e}") from e
    if not fields:
        raise bad_request(
            f"{model.id}: the body sets nothing (give enabled or config; to remove an override, DELETE it)"
        )
    await routes_overrides.set_override(ctx, who, model.id, fields)
    return OverrideUpdated(model_id=model.id, updated=True)


async def delete_override(ctx: Ctx, who: Who, id: str) -> OverrideDeleted:
    model = model_of(ctx, id)
    try:
        await routes_overrides.clear_override(ctx, who, model.id)
    except ApiProblem as e:
        if e.status != 404:
            raise
        return OverrideDeleted(model_id=model.id, deleted=False)
    return OverrideDeleted(model_id=model.id, deleted=True)


async def list_all(ctx: Ctx, who: Who) -> ConfigOverrideList:
    stored = await _stored(ctx)
    return ConfigOverrideList(overrides=[ConfigOverride.model_validate(to_cbt(m, f)) for m, f in stored.items()])


async def clear_all(ctx: Ctx, who: Who) -> OverridesCleared:
    """Each override cleared as ``DELETE /api/v1/models/{id}/overrides`` clears it (one audit row each)."""
    store = routes_overrides.store_of(ctx)
    for model_id in await _stored(ctx):  # (an override of a model no longer loaded too: by the store, not the model)
        if await blocking(store.clear, model_id, who, int(time.time() * 1000)):
            await routes_overrides.audit(ctx, who, "override-clear", model_id, {})
    return OverridesCleared(cleared=True)
