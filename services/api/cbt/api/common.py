"""Helpers every router shares: the context, model lookup, blocking calls off the event loop, documented errors."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from fastapi import Request
from redis.exceptions import RedisError

from cbt.adapters.delta_admin import AdminTableError
from cbt.api.context import ApiContext
from cbt.api.in_force import InForce
from cbt.api.problems import ApiProblem, Unavailable, bad_request
from cbt.models.spec import IncrementalModel, Model, ModelId

log = logging.getLogger("cbt.api")

P = ParamSpec("P")
T = TypeVar("T")

PROBLEMS: dict[int | str, dict[str, Any]] = {
    status: {"description": what} for status, what in (
        (400, "Bad request: a range or a model that does not fit the request"),
        (404, "Unknown model"),
        (401, "Reads need a token (api.auth.read_tokens is set) and the request shows none of the configured ones"),
        (422, "Invalid parameters or body: each field and why"),
        (429, "Too many requests from this client (api.rate_limit): retry after Retry-After seconds"),
        (503, "Redis, Kafka or Spark did not answer"),
    )
}
"""Error responses of every endpoint (RFC 9457 problem details; ``web.problem_openapi`` sets their content)."""
AUTH_PROBLEMS: dict[int | str, dict[str, Any]] = {
    **PROBLEMS,
    401: {"description": "No bearer token, or not one of api.auth.tokens"},
    403: {"description": "Mutations are disabled (no token is configured), or the token may only read"},
}


def context(request: Request) -> ApiContext:
    """The request's context: the models with the live overrides in force (``in_force``; a sync dependency, so
    FastAPI runs its once-a-tick Redis read in a thread)."""
    in_force: InForce | None = getattr(request.app.state, "in_force", None)
    if in_force is not None:
        return in_force.current()
    ctx: ApiContext = request.app.state.context
    return ctx


def model_of(ctx: ApiContext, model_id: ModelId) -> Model:
    """The model, or 404 (``UnknownModel``)."""
    return ctx.models.get(model_id)


def incremental_of(ctx: ApiContext, model_id: ModelId, what: str) -> IncrementalModel:
    model = model_of(ctx, model_id)
    if not isinstance(model, IncrementalModel):
        raise bad_request(f"{model_id} is not an incremental model: {what} exists only for incremental models")
    return model


def check_range(start: int, end: int, what: str = "start, end") -> None:
    if end <= start:
        raise bad_request(f"{what}: the range is half-open [start, end), so end must be greater than start; "
                          f"got [{start}, {end})")


async def blocking(call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """Run a blocking Redis or Spark call in a thread; a store that does not answer is a 503 problem."""
    try:
        return await asyncio.to_thread(functools.partial(call, *args, **kwargs))
    except ApiProblem:
        raise
    except (RedisError, AdminTableError, OSError) as e:  # the reason in the log, not to the client (host names, SQL)
        log.warning("a store did not answer", extra={"call": getattr(call, "__qualname__", str(call)),
                                                     "error": f"{type(e).__name__}: {str(e)[:500]}"})
        store = "Redis" if isinstance(e, RedisError) else "the admin tables" if isinstance(e, AdminTableError) else \
            "a store"
        raise Unavailable(f"{store} did not answer; the request may be repeated (the api's log has the reason)") from e
