"""The README stays a quick start that links into the docs site; every page of docs/ is in the site's nav; the
reference pages are generated at build time (docs/hooks/reference.py), never checked in, and cover what the code has.

The strict build itself (broken links and anchors fail) runs in ``make lint``."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README_MAX_LINES = 60
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_reference_hook", DOCS / "hooks" / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _nav_pages(node: Any) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, list):
        return [page for item in node for page in _nav_pages(item)]
    if isinstance(node, dict):
        return [page for value in node.values() for page in _nav_pages(value)]
    return []


def _mkdocs() -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    return config


def test_readme_is_a_quick_start_linking_into_the_docs() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_MAX_LINES, "the README is a quick start: move the rest into docs/"
    assert "make demo" in text and "make test" in text
    targets = [t for t in LINK.findall(text) if not t.startswith(("http://", "https://"))]
    assert any(t.startswith("docs/") and t.endswith(".md") for t in targets), "the README links into the docs"
    missing = [t for t in targets if not (ROOT / t).exists()]
    assert not missing, f"README links to missing files: {missing}"


def test_every_docs_page_is_in_the_nav_and_every_nav_entry_exists() -> None:
    config = _mkdocs()
    nav = _nav_pages(config["nav"])
    generated = set(_hook().PAGES)
    every = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    pages = {p for p in every if not p.startswith("hooks/")}  # exclude_docs in mkdocs.yml
    assert sorted(pages - set(nav)) == [], "pages under docs/ missing from mkdocs.yml's nav"
    assert sorted(set(nav) - pages - generated) == [], "nav entries that are neither a file nor generated"
    assert len(nav) == len(set(nav)), "a page listed twice in the nav"
    assert config["hooks"] == ["docs/hooks/reference.py"]
    assert config["theme"]["font"] is False, "no web fonts: the site loads nothing from elsewhere"


def test_generated_pages_are_not_checked_in() -> None:
    for path in _hook().PAGES:
        assert not (DOCS / path).exists(), f"docs/{path} is generated at build time; remove the file"


def test_configuration_reference_lists_every_key_with_its_docstring() -> None:
    from cbt.config.settings import Config

    page = _hook().configuration_page()
    for section in Config.model_fields:
        assert f"`{section}" in page
    for key in ("kafka.task_topic_partitions", "worker.concurrency", "scheduler.batch.job_budget_s",
                "worker.pools.<name>.tags", "admin.incremental.table", "health_addr"):
        assert f"`{key}`" in page, key
    assert "Replication factor of the topics the services create" in page, "attribute docstrings are rendered"
    assert '`"cbt_incremental"`' in page, "defaults of a section's own default"


def test_the_command_line_page_says_what_every_command_does_then_prints_every_parser() -> None:
    """docs/cli.md is generated from the parser: a row per runnable command in its group's table, with what the
    command does (its parser's description, else its help), then every parser's help."""
    import argparse

    from cbt.cli import build_parser

    page = _hook().cli_page()
    rows = [line for line in page.splitlines() if line.startswith("| `cbt ")]
    parser = build_parser()
    leaves = [prog for prog, _, sub in _hook()._commands(parser, "cbt")
              if not any(isinstance(a, argparse._SubParsersAction) for a in sub._actions)]
    for prog in leaves:
        [row] = [r for r in rows if r.startswith(f"| `{prog} ") or r.startswith(f"| `{prog}`")]
        assert len(row.split(" | ")[1].strip(" |")) > 20, f"{prog}: says what it does"
    assert len(rows) == len(leaves), "one row each"
    for command in ("validate", "dag", "render", "plan", "status", "run", "admin init", "rerun", "schema", "init"):
        assert f"### `cbt {command}`" in page, command
        assert f"usage: cbt {command}" in page, command
    assert "Switches the model" in page, "a parser's description is what the table says"


def test_api_reference_has_every_path_of_the_openapi_document() -> None:
    document = json.loads((DOCS / "openapi.json").read_text(encoding="utf-8"))
    page = _hook().api_page()
    for path, operations in document["paths"].items():
        for method in operations:
            assert f"`{method.upper()} {path}`" in page, (method, path)
