"""``/docs`` is Swagger UI from the api's own files: the page names no other host, every asset it references is served
by the app, and the vendored Swagger UI carries its license and is a version that renders OpenAPI 3.1 (5 or later)."""

from __future__ import annotations

import re
from pathlib import Path

from cbt.api.offline import offline_app
from cbt.api.ui.docs import SWAGGER_DIR, SWAGGER_UI_VERSION
from cbt.api.ui.shells import STATIC_DIR
from tests.unit.api.asgi import call

VENDORED = STATIC_DIR / SWAGGER_DIR


def test_the_docs_page_references_only_assets_the_app_serves() -> None:
    app = offline_app()
    page = call(app, "GET", "/docs")
    html = page.body.decode()
    assert page.status == 200 and "SwaggerUIBundle" in html
    assert not re.search(r"(https?:)?//[a-z0-9.-]+\.[a-z]{2,}", html, re.IGNORECASE), "an external host in /docs"
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert len(assets) == 3 and all(a.startswith("/ui/static/") for a in assets), assets
    served = {a.split("?")[0].rsplit(".", 1)[-1]: call(app, "GET", a) for a in assets}
    assert {kind: answer.status for kind, answer in served.items()} == {"css": 200, "js": 200, "svg": 200}
    assert served["js"].headers["content-type"].startswith(("text/javascript", "application/javascript"))
    assert b"SwaggerUIBundle" in served["js"].body and len(served["js"].body) > 1_000_000
    assert "'/api/v1/openapi.json'" in html and '"validatorUrl": null' in html


def test_the_vendored_swagger_ui_is_5_or_later_with_its_license() -> None:
    assert int(SWAGGER_UI_VERSION.split(".")[0]) >= 5  # (4 cannot render OpenAPI 3.1)
    readme = (VENDORED / "README.md").read_text(encoding="utf-8")
    assert f"swagger-ui-dist` **{SWAGGER_UI_VERSION}**" in readme
    assert "Apache License" in (VENDORED / "LICENSE").read_text(encoding="utf-8")
    assert {p.name for p in VENDORED.iterdir()} >= {"swagger-ui-bundle.js", "swagger-ui.css", "LICENSE", "NOTICE"}
    assert Path(VENDORED / "swagger-ui-bundle.js.LICENSE.txt").is_file()
