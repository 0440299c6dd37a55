"""Changes: re-run a range (with a preview first), skip a range (or stop skipping it), accept intervals failed checks
hold, run a scheduled model now, refresh an external model's bounds.

Each needs a bearer token (``cbt.api.access.auth``) and is recorded in the audit table with who (the token's
fingerprint), when and what. A rerun and a run-now go out as the same messages the CLI and the coordinator send; a
skip and a bounds refresh are written to Redis, where the planners and the bounds-cache read them on their next
round.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import logging
import time
import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from cbt.api.access.auth import authenticate
from cbt.api.common import AUTH_PROBLEMS, blocking, check_range, context, model_of
from cbt.api.context import ApiContext
from cbt.api.problems import ApiProblem, Unavailable, bad_request
from cbt.api.schemas import (
    AcceptRequest,
    ChecksAccepted,
    HeldItem,
    RefreshAccepted,
    RerunAccepted,
    RerunPreview,
    RerunRequest,
    RunNowAccepted,
    SkippedRanges,
    SkipRequest,
)
from cbt.contract.messages import Invalidation
from cbt.models.spec import ExternalModel, IncrementalModel, ModelId, ScheduledModel
from cbt.scheduling.coverage import Range
from cbt.scheduling.invalidation import Impact, impact, reach, why_rejected
from cbt.scheduling.task_runs import all_tasks
from cbt.state.admin_records import AuditAction

log = logging.getLogger("cbt.api")
router = APIRouter(prefix="/api/v1", tags=["actions"], responses=AUTH_PROBLEMS)
Ctx = Annotated[ApiContext, Depends(context)]
_bearer = HTTPBearer(auto_error=False, description="one of api.auth.tokens")


def caller(ctx: Ctx, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]) -> str:
    """The caller's token fingerprint, or 401/403 (``Refused``)."""
    header = None if credentials is None else f"{credentials.scheme} {credentials.credentials}"
    auth = ctx.config.api.auth
    return authenticate(header, auth.tokens, auth.read_tokens)


Who = Annotated[str, Depends(caller)]


async def _record(ctx: ApiContext, who: str, action: str, target: str, detail: dict[str, Any]) -> None:
    """Record a change already made; if the audit table cannot take it, say so (the change stands)."""
    entry = AuditAction(at_ms=int(time.time() * 1000), who=who, action=action, target=target, detail=detail)
    try:
        await blocking(ctx.admin.record_action, entry)
    except Unavailable as e:
        log.error("an API action was made but not recorded", extra={"action": action, "target": target,
                                                                     "who": who, "detail": detail})
        raise Unavailable(f"{action} of {target} was made ({detail}) but could not be recorded in the audit "
                          f"table: {e.detail}") from e


async def preview(ctx: ApiContext, model_id: ModelId, rng: Range, cascade: bool) -> Impact:
    """The tasks the invalidator would re-run now: the same mapping over the same inputs (what is in flight, the
    admin table's live pieces), without publishing anything."""
    chain = (model_id, *ctx.models.descendants(model_id)) if cascade else (model_id,)
    involved = [m for m in chain if isinstance(ctx.models.models[m], IncrementalModel)]
    state = await blocking(ctx.live.read_shown, involved)
    ran = await blocking(ctx.admin.live_pieces, involved, reach(ctx.models, model_id, rng, cascade=cascade))
    mapping = functools.partial(impact, ctx.models, model_id, rng, cascade=cascade, in_flight=state.in_flight, ran=ran)
    return await asyncio.to_thread(mapping)  # (thousands of models: off the event loop, which serves the others)


IdempotencyKey = Annotated[str | None, Header(alias="Idempotency-Key", min_length=1, max_length=200,
                                             description="names this request: a retry with the same key and body "
                                                         "publishes the same invalidation, applied once")]


def rerun_id(who: str, model_id: ModelId, body: RerunRequest, key: str | None) -> str:
    """The invalidation's id: new for each request, or — with an ``Idempotency-Key`` — the same for the same caller,
    key and request, so a retried request publishes an event the invalidator recognises and applies once."""
    if key is None:
        return f"api-{uuid.uuid4().hex}"
    request = json.dumps([who, key, model_id, body.start, body.end, body.cascade, body.reason])
    return f"api-{hashlib.sha256(request.encode()).hexdigest()[:32]}"


def _affected(found: Impact) -> dict[str, list[tuple[int, int]]]:
    """Each model's tasks, one by one (the impact keeps them as runs; ``invalidator.max_tasks`` bounds them)."""
    return {m: list(all_tasks(runs)) for m, runs in found.ranges.items()}


@router.post("/models/{model_id}/rerun", response_model=None, status_code=202,
             responses={200: {"model": RerunPreview, "description": "preview: what would re-run"},
                        202: {"model": RerunAccepted, "description": "the invalidation was published"}},
             summary="Re-run [start, end) of a model (and its descendants with cascade); preview: true shows what "
                     "would re-run without publishing")
async def rerun(ctx: Ctx, who: Who, model_id: str, body: RerunRequest,
                idempotency_key: IdempotencyKey = None) -> JSONResponse:
    done = await rerun_range(ctx, who, model_id, body, idempotency_key)
    return JSONResponse(done.model_dump(mode="json"), status_code=200 if isinstance(done, RerunPreview) else 202)


async def rerun_range(ctx: ApiContext, who: str, model_id: str, body: RerunRequest,
                      idempotency_key: str | None = None) -> RerunPreview | RerunAccepted:
    """Check, preview and (unless ``body.preview``) publish and audit a rerun; the shared body of our route and
    CBT's delete-period."""
    model = model_of(ctx, model_id)
    if isinstance(model, ScheduledModel):
        raise bad_request(f"{model_id} is a scheduled model: it has no positions to re-run (use run-now)")
    check_range(body.start, body.end)
    event = Invalidation(id=rerun_id(who, model.id, body, idempotency_key), model=model.id, start=body.start,
                         end=body.end, reason=body.reason, source="cbt-api", cascade=body.cascade,
                         metadata={"requested_by": who})
    why = why_rejected(ctx.models, event, ctx.config.invalidator.max_range, ctx.config.invalidator.max_tasks)
    if why is not None:
        raise bad_request(why)
    found = await preview(ctx, model.id, (body.start, body.end), body.cascade)
    affected, intervals = _affected(found), found.task_count
    if body.preview:
        return RerunPreview(affected=affected, intervals=intervals)
    await ctx.commands.publish_invalidation(event)
    await _record(ctx, who, "rerun", model.id, {"id": event.id, "start": body.start, "end": body.end,
                                                "cascade": body.cascade, "reason": body.reason,
                                                "intervals": intervals})
    return RerunAccepted(id=event.id, affected=affected, intervals=intervals)


def _skippable(ctx: ApiContext, model_id: str, body: SkipRequest) -> IncrementalModel:
    model = model_of(ctx, model_id)
    if not isinstance(model, IncrementalModel):
        raise bad_request(f"{model_id} is not an incremental model: only incremental models have ranges to skip")
    check_range(body.start, body.end)
    return model


@router.post("/models/{model_id}/skip", response_model=SkippedRanges,
             summary="Stop trying [start, end): the scheduler never plans it (a range that cannot succeed, e.g. "
                     "broken source rows); it shows as skipped and stays a gap to dependents")
async def skip(ctx: Ctx, who: Who, model_id: str, body: SkipRequest) -> SkippedRanges:
    model = _skippable(ctx, model_id, body)
    after = await blocking(ctx.hot.skips.skip, model.id, (body.start, body.end))
    await _record(ctx, who, "skip", model.id, {"start": body.start, "end": body.end, "reason": body.reason})
    return SkippedRanges(model=model.id, skipped=list(after))


@router.post("/models/{model_id}/unskip", response_model=SkippedRanges,
             summary="Try [start, end) again: the parts of skipped ranges inside it are planned as usual")
async def unskip(ctx: Ctx, who: Who, model_id: str, body: SkipRequest) -> SkippedRanges:
    model = _skippable(ctx, model_id, body)
    after = await blocking(ctx.hot.skips.unskip, model.id, (body.start, body.end))
    await _record(ctx, who, "unskip", model.id, {"start": body.start, "end": body.end, "reason": body.reason})
    return SkippedRanges(model=model.id, skipped=list(after))


@router.post("/models/{model_id}/checks/accept", response_model=ChecksAccepted,
             responses={409: {"description": "no interval a failed check holds overlaps the range"}},
             summary="Publish the intervals of [start, end) that failed checks hold, whatever their error checks "
                     "say: they are planned again, their verdicts recorded as accepted (docs/checks.md)")
async def accept_checks(ctx: Ctx, who: Who, model_id: str, body: AcceptRequest) -> ChecksAccepted:
    model = model_of(ctx, model_id)
    if not isinstance(model, IncrementalModel) or not model.checks:
        raise bad_request(f"{model_id} has no checks: only an incremental model's checks hold intervals")
    check_range(body.start, body.end)
    accepted = await blocking(ctx.hot.holds.accept, model.id, (body.start, body.end), who, None)
    if not accepted:
        raise ApiProblem(409, f"no interval of {model.id} that a failed check holds overlaps [{body.start}, "
                         f"{body.end}) (cbt checks show {model.id})", "conflict")
    spans = [[h.start, h.end] for h in accepted]
    await _record(ctx, who, "checks-accept", model.id, {"start": body.start, "end": body.end,
                                                        "reason": body.reason, "intervals": spans})
    return ChecksAccepted(model=model.id, accepted=[
        HeldItem(range=(h.start, h.end), version=h.version, reason=h.reason, accepted_by=h.accepted_by)
        for h in accepted])


@router.post("/models/{model_id}/run-now", response_model=RunNowAccepted, status_code=202,
             responses={409: {"description": "a run of this model for this second is already in flight, or a "
                                             "live override pauses the model"}},
             summary="Run a scheduled model now (a task-requested, as the coordinator sends for a fire time)")
async def run_now(ctx: Ctx, who: Who, model_id: str) -> RunNowAccepted:
    model = model_of(ctx, model_id)
    if not isinstance(model, ScheduledModel):
        raise bad_request(f"{model_id} is not a scheduled model: run-now runs scheduled models (re-run a range of "
                          "an incremental one instead)")
    if model.id in ctx.paused:
        raise ApiProblem(409, f"{model.id} is paused by a live config override (enabled: false): clear it, or set "
                         "enabled: true, to run it", "conflict")
    fire_unix = int(time.time())
    task_id = f"{model.id}:@{fire_unix}"
    if not await ctx.commands.run_scheduled(model, fire_unix):
        raise ApiProblem(409, f"{task_id} is already in flight", "conflict")
    await _record(ctx, who, "run-now", model.id, {"task_id": task_id})
    return RunNowAccepted(task_id=task_id)


@router.post("/bounds/{model_id}/refresh", response_model=RefreshAccepted, status_code=202,
             summary="Ask the bounds-cache to scan an external model's bounds now (a full scan)")
async def refresh_bounds(ctx: Ctx, who: Who, model_id: str) -> RefreshAccepted:
    model = model_of(ctx, model_id)
    if not isinstance(model, ExternalModel):
        raise bad_request(f"{model_id} is not an external model: only external models have scanned bounds")
    await blocking(ctx.refresh.request, model.id)
    await _record(ctx, who, "bounds-refresh", model.id, {})
    return RefreshAccepted(model=model.id)
