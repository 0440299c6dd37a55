"""Every error as RFC 9457 problem details (``application/problem+json``): bad input is a 4xx naming the field and
the reason, an unknown model 404, a state store that does not answer 503 — never a bare traceback."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from cbt.api.access.auth import Refused
from cbt.models.dag import UnknownModel

log = logging.getLogger("cbt.api")
MEDIA_TYPE = "application/problem+json"


class ApiProblem(Exception):
    """A request the API refuses or cannot serve: ``status`` and a ``detail`` that says what to do."""

    def __init__(self, status: int, detail: str, slug: str | None = None, title: str | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.slug = slug or _slug(status)
        self.title = title or HTTPStatus(status).phrase


class Unavailable(ApiProblem):
    """Redis, Kafka or Spark did not answer (503); the request may be repeated."""

    def __init__(self, detail: str) -> None:
        super().__init__(503, detail, "unavailable")


def bad_request(detail: str) -> ApiProblem:
    return ApiProblem(400, detail, "bad-request")


def problem_response(status: int, title: str, detail: str, slug: str,
                     errors: Sequence[dict[str, str]] | None = None) -> JSONResponse:
    body: dict[str, Any] = {"type": f"urn:cbt:problem:{slug}", "title": title, "status": status, "detail": detail}
    if errors is not None:
        body["errors"] = list(errors)
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse(body, status_code=status, media_type=MEDIA_TYPE, headers=headers)


def _slug(status: int) -> str:
    return HTTPStatus(status).phrase.lower().replace(" ", "-")


def field_errors(error: RequestValidationError) -> list[dict[str, str]]:
    """Each invalid input as ``{"field": "query.position", "reason": "..."}``."""
    out = []
    for item in error.errors():
        field = ".".join(str(part) for part in item.get("loc", ())) or "request"
        out.append({"field": field, "reason": str(item.get("msg", "invalid"))})
    return out


def install_problem_handlers(app: FastAPI) -> None:
    """Map every error the API can meet to a problem response."""

    async def on_problem(_: Request, e: Exception) -> JSONResponse:
        assert isinstance(e, ApiProblem)
        return problem_response(e.status, e.title, e.detail, e.slug)

    async def on_validation(_: Request, e: Exception) -> JSONResponse:
        assert isinstance(e, RequestValidationError)
        errors = field_errors(e)
        detail = "; ".join(f"{item['field']}: {item['reason']}" for item in errors)
        return problem_response(422, "Invalid request", detail, "invalid-request", errors)

    async def on_http(_: Request, e: Exception) -> JSONResponse:
        assert isinstance(e, HTTPException)
        return problem_response(e.status_code, HTTPStatus(e.status_code).phrase, str(e.detail), _slug(e.status_code))

    async def on_refused(_: Request, e: Exception) -> JSONResponse:
        assert isinstance(e, Refused)
        return problem_response(e.status, e.title, e.detail, "forbidden" if e.status == 403 else "unauthorized")

    async def on_unknown_model(_: Request, e: Exception) -> JSONResponse:
        return problem_response(404, "Unknown model", str(e), "unknown-model")

    async def on_crash(request: Request, e: Exception) -> JSONResponse:
        log.exception("request failed", extra={"path": request.url.path})
        return problem_response(500, "Internal error", f"{type(e).__name__}: the error is in the api's log",
                                "internal-error")

    app.add_exception_handler(ApiProblem, on_problem)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(HTTPException, on_http)
    app.add_exception_handler(Refused, on_refused)
    app.add_exception_handler(UnknownModel, on_unknown_model)
    app.add_exception_handler(Exception, on_crash)
