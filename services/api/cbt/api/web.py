"""The ASGI app: ``/api/v1`` routers, problem details for every error, CORS closed unless configured, OpenAPI at
``/api/v1/openapi.json`` (Swagger UI at ``/docs``), and the web UI. Built by ``create_app`` from an ``ApiContext``;
nothing happens at import time."""

from __future__ import annotations

import functools
from typing import Any

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.openapi.utils import get_openapi

from cbt.api.access.limits import RequestLimits
from cbt.api.access.read_access import client_key, install_access
from cbt.api.cbt_compat import routes as routes_cbt
from cbt.api.context import ApiContext
from cbt.api.in_force import InForce
from cbt.api.problems import MEDIA_TYPE, install_problem_handlers
from cbt.api.routes import actions as routes_actions
from cbt.api.routes import bounds as routes_bounds
from cbt.api.routes import models as routes_models
from cbt.api.routes import overrides as routes_overrides
from cbt.api.routes import pipeline as routes_pipeline
from cbt.api.schemas import Problem
from cbt.api.tables import routes as routes_rows
from cbt.api.ui import install_ui

TITLE = "cbt"
VERSION = "1"
OPENAPI_URL = "/api/v1/openapi.json"
DESCRIPTION = (
    "CBT on Kafka and Spark: models, coverage, the explain tree of a position, task history, failures, "
    "invalidations, bounds, scheduled runs, the DAG, live events, and operator actions. Positions are integers; "
    "every range is half-open [start, end) written as a two-item array. Errors are RFC 9457 problem details. "
    "Changes (POST) need `Authorization: Bearer <token>` with one of `api.auth.tokens`; none configured means "
    "changes are disabled. When `api.auth.read_tokens` is set, reads need a token too (a read or a write token; "
    "a browser signs in at `/login`). Each client may make `api.rate_limit` requests; past it, 429 with "
    "`Retry-After`."
)
ROUTERS = (routes_cbt.router, routes_models.router, routes_pipeline.router, routes_actions.router,
           routes_overrides.router, routes_bounds.router)  # CBT's first: its
# /api/v1/models/external… must not be read as our /api/v1/models/{model_id}…


def create_app(ctx: ApiContext) -> FastAPI:
    app = FastAPI(title=TITLE, version=VERSION, description=DESCRIPTION, openapi_url=OPENAPI_URL, docs_url=None,
                  redoc_url=None)  # (/docs is the UI's, from local assets)
    app.state.context = ctx
    app.state.in_force = InForce(ctx, ctx.config.scheduler.tick_s)  # (what the routes see: overrides applied)
    readers = install_access(app, ctx.config.api.auth, ctx.sessions)  # before CORS: a preflight needs no token
    if ctx.config.api.cors_origins:
        app.add_middleware(CORSMiddleware, allow_origins=list(ctx.config.api.cors_origins),  # ["*"]: as CBT
                           allow_methods=["GET", "POST", "PUT", "DELETE"],
                           allow_headers=["Authorization", "Content-Type"])
    limits = ctx.config.api
    app.add_middleware(RequestLimits, max_body_bytes=limits.max_body_bytes,  # outermost: before any route reads
                       max_concurrent_requests=limits.max_concurrent_requests,
                       max_event_streams=limits.max_event_streams, rate_limit=limits.rate_limit,
                       identify=functools.partial(client_key, readers),
                       max_requests_per_client=limits.max_requests_per_client,
                       max_event_streams_per_client=limits.max_event_streams_per_client,
                       body_timeout_s=limits.body_timeout_s)
    install_problem_handlers(app)
    for router in ROUTERS:
        app.include_router(router)
    install_ui(app)
    app.openapi = lambda: openapi_document(app)  # type: ignore[method-assign]
    routes_rows.install(app)  # /api/v1/tables: the exposed tables' rows, their OpenAPI from their schemas
    return app


def openapi_document(app: FastAPI) -> dict[str, Any]:
    """The OpenAPI document, generated once; every error response is a problem (``application/problem+json``)."""
    if app.openapi_schema is None:
        routes = [route for router in ROUTERS for route in router.routes]  # /api/v1 only, not the UI's pages
        schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=routes,
                             tags=[routes_cbt.TAG_DOC])
        app.openapi_schema = with_problems(schema)
    return app.openapi_schema


def with_problems(schema: dict[str, Any]) -> dict[str, Any]:
    """Point every 4xx/5xx response at the ``Problem`` schema under ``application/problem+json``, and drop
    FastAPI's default validation-error schemas (validation errors are problems too)."""
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    components["Problem"] = Problem.model_json_schema(ref_template="#/components/schemas/{model}")
    for name in ("HTTPValidationError", "ValidationError"):
        components.pop(name, None)
    content = {MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}}
    for path in schema.get("paths", {}).values():
        for operation in path.values():
            for status, response in operation.get("responses", {}).items():
                if status[0] in "45":
                    response["content"] = content
                stream = response.get("content", {}).get("text/event-stream")
                if stream is not None and "itemSchema" in stream:  # OpenAPI 3.2's keyword, invalid in 3.1
                    stream.pop("itemSchema")
                    stream["schema"] = {"type": "string", "description": "a stream of server-sent events: `event:` "
                                        "is the kind, `data:` the message as JSON"}
    return schema
