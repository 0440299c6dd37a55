"""``/docs``: Swagger UI over the OpenAPI document, from the api's own static files (``static/vendor/swagger-ui``,
npm ``swagger-ui-dist`` 5 — the first to render OpenAPI 3.1), so the page contacts no other host."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse

from cbt.api.ui.shells import static_url

DOCS_PATH = "/docs"
SWAGGER_UI_VERSION = "5.35.0"
SWAGGER_DIR = "vendor/swagger-ui"
SWAGGER_PARAMETERS = {
    "validatorUrl": None,  # (else Swagger UI may ask validator.swagger.io about the document)
}


def docs_router() -> APIRouter:
    router = APIRouter(include_in_schema=False)

    @router.get(DOCS_PATH)
    def docs(request: Request) -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=request.app.openapi_url, title=f"{request.app.title} · API",
            swagger_js_url=static_url(f"{SWAGGER_DIR}/swagger-ui-bundle.js"),
            swagger_css_url=static_url(f"{SWAGGER_DIR}/swagger-ui.css"),
            swagger_favicon_url=static_url("img/favicon.svg"), swagger_ui_parameters=SWAGGER_PARAMETERS)

    return router
