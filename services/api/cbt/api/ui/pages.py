"""The UI's page routes: each returns its HTML shell; the page's script then talks to ``/api/v1``."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from cbt.api.ui.shells import STATIC_DIR, STATIC_PATH, render_page

__all__ = ["STATIC_DIR", "STATIC_PATH", "page_router"]


def page_router() -> APIRouter:
    """Routes of the pages; kept out of the OpenAPI document, which describes ``/api/v1`` only."""
    router = APIRouter(include_in_schema=False, default_response_class=HTMLResponse)

    @router.get("/")
    def dashboard() -> HTMLResponse:
        return HTMLResponse(render_page("dashboard", "Coverage"))

    @router.get("/dag")
    def dag() -> HTMLResponse:
        return HTMLResponse(render_page("dag", "DAG"))

    @router.get("/models/{model_id}")
    def model(model_id: str) -> HTMLResponse:
        return HTMLResponse(render_page("model", model_id, model_id=model_id))

    @router.get("/failures")
    def failures() -> HTMLResponse:
        return HTMLResponse(render_page("failures", "Failures"))

    @router.get("/invalidations")
    def invalidations() -> HTMLResponse:
        return HTMLResponse(render_page("invalidations", "Invalidations"))

    @router.get("/changes")
    def changes() -> HTMLResponse:
        return HTMLResponse(render_page("changes", "Changes"))

    return router
