"""The web UI: page shells (Jinja2) and static assets, served by the api process beside ``/api/v1``.

The pages are clients of the REST API (``/api/v1``) and of its event stream (``/api/v1/events``); nothing here
reads Redis, Kafka or Spark itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fastapi import FastAPI


def install_ui(app: FastAPI) -> None:
    """Mount the UI's pages and static files on ``app`` (filled in by the UI work of issue 14)."""
