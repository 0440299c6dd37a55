"""Errors of the CBT-compatible routes: RFC 9457 problem details like every other route, carrying CBT's own error
members too (``error``: the message, ``code``: the status; CBT's ``Error`` schema), so a CBT client shows the reason
and a client of ours reads the same problem. Invalid parameters are 400 as in CBT (not our 422)."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from http import HTTPStatus
from typing import Any

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute

from cbt.api.problems import MEDIA_TYPE, ApiProblem, field_errors
from cbt.models.dag import UnknownModel


def cbt_problem(status: int, detail: str, slug: str | None = None) -> JSONResponse:
    phrase = HTTPStatus(status).phrase
    body = {"type": f"urn:cbt:problem:{slug or phrase.lower().replace(' ', '-')}", "title": phrase, "status": status,
            "detail": detail, "error": detail, "code": status}
    return JSONResponse(body, status_code=status, media_type=MEDIA_TYPE)


class CbtRoute(APIRoute):
    """A route whose refusals carry CBT's ``error`` and ``code`` beside the problem members."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()

        async def answer(request: Request) -> Response:
            try:
                return await handle(request)
            except RequestValidationError as e:
                errors = field_errors(e)
                return cbt_problem(400, "; ".join(f"{i['field']}: {i['reason']}" for i in errors), "bad-request")
            except UnknownModel as e:
                return cbt_problem(404, str(e), "unknown-model")
            except ApiProblem as e:
                return cbt_problem(e.status, e.detail, e.slug)

        return answer
