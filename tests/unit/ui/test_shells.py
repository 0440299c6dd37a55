"""The pages' HTML shells and the static module graph, checked without a browser: each page renders, links only
assets that exist, escapes what it is given, and every ES module imports names its neighbours export."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from cbt.api.ui.shells import NAV, PAGES, STATIC_DIR, STATIC_PATH, NavItem, asset_version, render_login, render_page
from cbt.models.spec import TIME_TYPES


class Links(HTMLParser):
    """Collects asset URLs, the current nav item and the body's data attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.assets: list[str] = []
        self.current: list[str] = []
        self.body: dict[str, str | None] = {}
        self.model_root: dict[str, str | None] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        for key in ("src", "href"):
            value = a.get(key)
            if value and value.startswith(STATIC_PATH):
                self.assets.append(value)
        if tag == "a" and a.get("aria-current") == "page":
            self.current.append(a.get("href") or "")
        if tag == "body":
            self.body = a
        if a.get("id") == "model-root":
            self.model_root = a


def parse(html: str) -> Links:
    links = Links()
    links.feed(html)
    return links


PAGE_ARGS = {page: ({"model_id": "analytics.block_gas"} if page == "model" else {}) for page in sorted(PAGES)}


@pytest.mark.parametrize("page", sorted(PAGES))
def test_every_page_links_existing_versioned_assets(page: str) -> None:
    links = parse(render_page(page, "Title", **PAGE_ARGS[page]))
    assert f"{STATIC_PATH}/js/pages/{page}.js?v={asset_version()}" in links.assets
    for url in links.assets:
        path, _, version = url.removeprefix(STATIC_PATH + "/").partition("?v=")
        assert (STATIC_DIR / path).is_file(), url
        assert version == asset_version()


@pytest.mark.parametrize("item", NAV, ids=lambda i: i.page)
def test_the_nav_marks_the_current_page(item: NavItem) -> None:
    assert parse(render_page(item.page, "x")).current == [item.href]


def test_the_body_carries_the_api_base_and_the_time_types() -> None:
    body = parse(render_page("dashboard", "Coverage")).body
    assert body["data-api"] == "/api/v1"
    assert set((body["data-time-types"] or "").split(",")) == set(TIME_TYPES)


@pytest.mark.parametrize("page", sorted(PAGES))
def test_every_page_has_the_model_search_and_the_theme_applied_before_it_paints(page: str) -> None:
    html = render_page(page, "Title", **PAGE_ARGS[page])
    head, _, body = html.partition("</head>")
    assert f"{STATIC_PATH}/js/theme_boot.js?v=" in head, "the theme is set before the first paint"
    assert 'role="combobox"' in body and 'aria-controls="model-search-list"' in body and 'id="theme-choice"' in body
    assert f"{STATIC_PATH}/js/header.js?v=" in body


def test_the_login_page_follows_the_theme_too() -> None:
    assert f"{STATIC_PATH}/js/theme_boot.js?v=" in render_login("/").partition("</head>")[0]


def test_a_model_id_is_escaped_not_interpreted() -> None:
    html = render_page("model", "x", model_id='db.t"><script>alert(1)</script>')
    assert "<script>alert(1)" not in html
    assert parse(html).model_root["data-model-id"] == 'db.t"><script>alert(1)</script>'


def test_an_unknown_page_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown page 'nope'"):
        render_page("nope", "x")


IMPORT = re.compile(r'^import\s*\{([^}]*)\}\s*from\s*"(\.[^"]+)";', re.MULTILINE)
EXPORT = re.compile(r"^export\s+(?:async\s+)?(?:function|const|class|let)\s+([A-Za-z_$][\w$]*)", re.MULTILINE)


def _exports(module: Path) -> set[str]:
    return set(EXPORT.findall(module.read_text()))


@pytest.mark.parametrize("module", sorted((STATIC_DIR / "js").rglob("*.js")), ids=lambda p: p.name)
def test_every_import_names_an_export_of_an_existing_module(module: Path) -> None:
    for names, target in IMPORT.findall(module.read_text()):
        path = (module.parent / target).resolve()
        assert path.is_file(), f"{module.name} imports missing {target}"
        wanted = {n.strip() for n in names.split(",") if n.strip()}
        assert wanted <= _exports(path), f"{module.name}: {sorted(wanted - _exports(path))} not exported by {target}"
