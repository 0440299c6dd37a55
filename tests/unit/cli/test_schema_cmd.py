"""``cbt schema``: the one command for the generated documents — the message schemas and, from the api
distribution, the OpenAPI document — and ``--check`` to tell when a committed one is stale."""

from __future__ import annotations

from pathlib import Path

import pytest

from cbt.cli import main


def test_it_writes_every_document_then_check_finds_them_current(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    docs = tmp_path / "docs"
    assert main(["schema", "--docs", str(docs), "--check"]) == 1, "nothing written yet: out of date"
    assert main(["schema", "--docs", str(docs)]) == 0
    written = {p.relative_to(docs).as_posix() for p in docs.rglob("*.json")}
    assert "openapi.json" in written and "schemas/task-requested.schema.json" in written
    assert main(["schema", "--docs", str(docs), "--check"]) == 0
    (docs / "openapi.json").write_text("{}\n")
    capsys.readouterr()
    assert main(["schema", "--docs", str(docs), "--check"]) == 1
    assert "openapi.json" in capsys.readouterr().out


def test_the_committed_documents_are_current() -> None:
    assert main(["schema", "--docs", str(Path(__file__).resolve().parents[3] / "docs"), "--check"]) == 0
