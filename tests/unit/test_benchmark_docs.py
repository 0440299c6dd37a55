"""docs/benchmarks.md quotes committed reports only: its figures table is rendered from them (bench.docs), and every
other figure on the page appears in one of them."""

from __future__ import annotations

import json
import re

from bench import docs

NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?![\w])")


def prose(page: str) -> str:
    """The page without code blocks, inline code, link targets and the generated table."""
    head, rest = page.split(docs.BEGIN, 1)
    text = head + rest.split(docs.END, 1)[1]
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = re.sub(r"`[^`]*`", "", text)
    return re.sub(r"\]\([^)]*\)", "]", text)


def test_every_bench_has_a_committed_report_and_the_page_shows_exactly_their_verdicts() -> None:
    reports = docs.committed_reports()
    assert sorted(reports) == sorted(docs.ORDER), "a bench without a committed report under bench/reports/<bench>/"
    page = docs.PAGE.read_text()
    assert docs.with_figures(page, docs.render(docs.load(reports))) == page, (
        "docs/benchmarks.md's figures are not the committed reports': run python -m bench.docs --write")


def test_every_figure_in_the_prose_appears_in_a_committed_report() -> None:
    known = {n for path in docs.tracked_reports() for n in docs.numbers(json.loads(path.read_text()))}
    figures = {m.group().replace(",", "") for m in NUMBER.finditer(prose(docs.PAGE.read_text()))}
    assert sorted(figures - known) == []


def test_the_prose_check_sees_a_figure_that_no_report_has() -> None:
    planted = f"Quiet after 183.7 s.\n{docs.BEGIN}\n| x |\n{docs.END}\n"
    figures = {m.group() for m in NUMBER.finditer(prose(planted))}
    assert figures == {"183.7"}

