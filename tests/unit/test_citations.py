"""Everything the code cites is in the repository (issue 28).

The design is written in ``docs/design/`` and code points at it as ``docs/design/<page>.md#<anchor>`` (other docs pages
the same way, e.g. ``docs/protocol.md#re-runs``). Two checks: no file cites a document that is not in the repository
(the functional specification's sections, the architecture notes, ``notes/…``), and every ``docs/….md#anchor``
pointer names a page that exists and a heading of it, with the anchor MkDocs gives that heading.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
SCANNED_DIRS = ("shared", "services", "dev", "tests", "bench", "deploy", "models", "docs")
SCANNED_FILES = ("README.md", "Makefile", "mkdocs.yml")
SUFFIXES = {".py", ".md", ".yaml", ".yml", ".sh", ".js", ".html", ".toml"}
SKIPPED_PARTS = {"__pycache__", "node_modules", ".venv", "var", ".git"}

SECTION = "\N{SECTION SIGN}"
OUTSIDE = re.compile(
    rf"SPEC\s*{SECTION}|SPEC\.md|ARCHITECTURE(?:\.md)?\b|\bnotes/|(?<![\w{SECTION}]){SECTION}\s*\d"
)
"""Citations of documents kept outside the repository: "SPEC §5.3", "§8", ``SPEC.md``, ``ARCHITECTURE.md``,
``notes/api-contract.md``."""

KNOWN_OUTSIDE: set[str] = set()

POINTER = re.compile(r"docs/([A-Za-z0-9_./-]+\.md)(?:#([A-Za-z0-9_-]+))?")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
ATTR_ID = re.compile(r"\s*\{[^}]*#([A-Za-z0-9_-]+)[^}]*\}\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")


def _files() -> Iterator[Path]:
    for name in SCANNED_FILES:
        if (ROOT / name).is_file():
            yield ROOT / name
    for folder in SCANNED_DIRS:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix in SUFFIXES and path.is_file() and not SKIPPED_PARTS & set(path.relative_to(ROOT).parts):
                yield path


def _lines() -> Iterator[tuple[str, int, str]]:
    this = Path(__file__).resolve()
    for path in _files():
        if path.resolve() == this:
            continue
        rel = path.relative_to(ROOT).as_posix()
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            yield rel, number, line


def slugify(title: str) -> str:
    """The anchor MkDocs (Python-Markdown's ``toc``) gives a heading: its text without markup, accents and punctuation,
    lower-case, runs of spaces and hyphens as one ``-``."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title)  # [text](link) → text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").replace("*", "")
    text = re.sub(r"(?<!\w)_|_(?!\w)", "", text)  # _emphasis_, not snake_case
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(page: Path) -> set[str]:
    """Every heading anchor of a markdown page (duplicates numbered ``_1``, ``_2`` as MkDocs does)."""
    found: set[str] = set()
    in_fence = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        match = HEADING.match(line)
        if in_fence or match is None:
            continue
        title = match.group(2)
        explicit = ATTR_ID.search(title)
        slug = explicit.group(1) if explicit else slugify(title)
        unique, n = slug, 0
        while unique in found:
            n += 1
            unique = f"{slug}_{n}"
        found.add(unique)
    return found


def _generated_pages() -> set[str]:
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_reference_hook", DOCS / "hooks" / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return set(module.PAGES)


def test_no_file_cites_a_document_outside_the_repository() -> None:
    found = [f"{rel}:{n}: {line.strip()}" for rel, n, line in _lines()
             if rel not in KNOWN_OUTSIDE and OUTSIDE.search(line)]
    assert found == [], "point at the section of docs/design/ (docs/design/<page>.md#<anchor>) instead:\n" + "\n".join(
        found)


def test_known_exceptions_still_exist() -> None:
    """An exception whose file moved or no longer cites anything outside is stale: remove it."""
    stale = [rel for rel in KNOWN_OUTSIDE
             if not (ROOT / rel).is_file() or not OUTSIDE.search((ROOT / rel).read_text(encoding="utf-8"))]
    assert stale == [], f"remove from KNOWN_OUTSIDE: {stale}"


def test_every_docs_pointer_names_an_existing_page_and_anchor() -> None:
    generated = _generated_pages()
    cache: dict[str, set[str]] = {}
    broken: list[str] = []
    for rel, n, line in _lines():
        for match in POINTER.finditer(line):
            page, anchor = match.group(1), match.group(2)
            if page in generated:
                continue  # written at build time (docs/hooks/reference.py); the strict build checks its anchors
            path = DOCS / page
            if not path.is_file():
                broken.append(f"{rel}:{n}: docs/{page} does not exist")
            elif anchor is not None and anchor not in cache.setdefault(page, anchors(path)):
                broken.append(f"{rel}:{n}: docs/{page} has no heading with anchor #{anchor}")
    assert broken == [], "\n".join(broken)


@pytest.mark.parametrize(("title", "slug"), [
    ("Dependency bounds", "dependency-bounds"),
    ("Invalidation wins over in-flight tasks", "invalidation-wins-over-in-flight-tasks"),
    ("Intervals, positions and coverage", "intervals-positions-and-coverage"),
    ("Re-runs", "re-runs"),
    ("Containers: images and docker-compose", "containers-images-and-docker-compose"),
    ("The `cbt` command", "the-cbt-command"),
    ("[REST API](api.md) and more", "rest-api-and-more"),
])
def test_slugify_matches_mkdocs(title: str, slug: str) -> None:
    assert slugify(title) == slug
