"""The pages' HTML shells: Jinja2 templates rendered with the few values a page needs before its script runs.

Pure: no web framework here, so the shells can be rendered and checked on their own. A shell carries the model id
(model page), the interval types whose positions are unix seconds (shown as UTC times) and versioned URLs of the
static assets; everything else the page's ES module fetches from ``/api/v1``.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from cbt.models.spec import TIME_TYPES

UI_DIR = Path(__file__).resolve().parent
TEMPLATES_DIR = UI_DIR / "templates"
STATIC_DIR = UI_DIR / "static"
STATIC_PATH = "/ui/static"
API_BASE = "/api/v1"


@dataclass(frozen=True)
class NavItem:
    href: str
    label: str
    page: str


NAV = (
    NavItem("/", "Dashboard", "dashboard"),
    NavItem("/dag", "DAG", "dag"),
    NavItem("/failures", "Failures", "failures"),
    NavItem("/invalidations", "Invalidations", "invalidations"),
    NavItem("/changes", "Changes", "changes"),
)
PAGES = frozenset({"dashboard", "dag", "model", "failures", "invalidations", "changes"})


@functools.cache
def asset_version() -> str:
    """A digest of every static file: part of each asset URL, so a browser never runs a stale module after an
    upgrade."""
    digest = hashlib.sha256()
    for path in sorted(p for p in STATIC_DIR.rglob("*") if p.is_file()):
        digest.update(path.relative_to(STATIC_DIR).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def static_url(path: str) -> str:
    return f"{STATIC_PATH}/{path}?v={asset_version()}"


@functools.cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES_DIR),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals.update(static=static_url, nav=NAV, api_base=API_BASE, time_types=",".join(sorted(TIME_TYPES)))
    return env


def render_page(page: str, title: str, **context: Any) -> str:
    """The HTML shell of one page (``PAGES``); ``context`` holds what that page's template needs (``model_id``)."""
    if page not in PAGES:
        raise ValueError(f"unknown page {page!r}; expected one of {sorted(PAGES)}")
    return environment().get_template(f"{page}.html").render(page=page, title=title, **context)


def render_login(next_path: str, error: str | None = None) -> str:
    """The login form (when ``api.auth.read_tokens`` is set): a token in, then back to ``next_path``."""
    return environment().get_template("login.html").render(next_path=next_path, error=error)
