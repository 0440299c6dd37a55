"""docs/openapi.json is what the app serves (regenerate: ``cbt schema``), it is a valid
OpenAPI 3.1 document, and it documents every /api/v1 route the app has."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cbt.api.offline import offline_app
from cbt.api.openapi_doc import openapi_text
from cbt.api.web import OPENAPI_URL

DOC = Path(__file__).resolve().parents[3] / "docs" / "openapi.json"


def test_the_checked_in_document_is_what_the_app_generates() -> None:
    assert DOC.read_text(encoding="utf-8") == openapi_text(), "regenerate: cbt schema"


def test_the_document_is_valid_openapi() -> None:
    from schemathesis.specs.openapi import definitions

    document = json.loads(DOC.read_text(encoding="utf-8"))
    assert document["openapi"].startswith("3.1")
    definitions.OPENAPI_31_VALIDATOR.validate(document)


def served_routes(routes: list[Any]) -> set[tuple[str, str]]:
    """(path, method) of every route under /api/v1/, included routers' routes too."""
    out: set[tuple[str, str]] = set()
    for route in routes:
        included = getattr(route, "original_router", None)  # FastAPI's included router
        if included is not None:
            out |= served_routes(included.routes)
        elif getattr(route, "path", "").startswith("/api/v1/") and route.path != OPENAPI_URL:
            out |= {(route.path, method.lower()) for method in route.methods if method != "HEAD"}
    return out


def test_every_api_route_is_documented_with_its_methods() -> None:
    app = offline_app()
    document = json.loads(openapi_text())
    served = served_routes(app.router.routes)
    assert len(served) >= 17
    documented = {(path, method) for path, ops in document["paths"].items() for method in ops}
    assert served == documented
    for path, ops in document["paths"].items():
        for method, op in ops.items():
            errors = [s for s in op["responses"] if s[0] in "45"]
            assert errors, f"{method} {path} documents no error response"
            assert all("application/problem+json" in op["responses"][s]["content"] for s in errors)
