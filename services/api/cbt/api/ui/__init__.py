"""The web UI: page shells (Jinja2) and static assets, served by the api process beside ``/api/v1``.

The pages are clients of the REST API (``/api/v1``) and of its event stream (``/api/v1/events``); nothing here
reads Redis, Kafka or Spark itself. Every page is a small HTML shell rendered on the server; ES modules under
``static/js/`` fetch the API's JSON and draw the tables and SVG charts, and redraw when an event is pushed. There is
no JavaScript build step and no third-party JavaScript: SVG, ``fetch`` and ``EventSource`` are all the pages use, so
a fresh clone serves them as they are and they work offline. (``/docs`` is Swagger UI, vendored under
``static/vendor/swagger-ui`` with its license; the pages do not load it.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cbt.api.ui.docs import docs_router
from cbt.api.ui.pages import STATIC_DIR, STATIC_PATH, page_router

if TYPE_CHECKING:
    from fastapi import FastAPI


def install_ui(app: FastAPI) -> None:
    """Mount the UI's pages (``/``, ``/dag``, ``/models/{id}``, ``/failures``, ``/invalidations``), Swagger UI
    (``/docs``) and their static files (``/ui/static``) on ``app``."""
    from fastapi.staticfiles import StaticFiles

    app.mount(STATIC_PATH, StaticFiles(directory=STATIC_DIR), name="ui-static")
    app.include_router(page_router())
    app.include_router(docs_router())
