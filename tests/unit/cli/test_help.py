"""``cbt --help`` is written for users: every command once, under what it is for, one line each on a terminal of 80
columns (a command's own --help says more)."""

from __future__ import annotations

import argparse

import pytest

from cbt.cli import GROUPS, build_parser


def test_every_command_is_listed_once_in_its_group_on_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    parser = build_parser()
    commands = {name for a in parser._actions if isinstance(a, argparse._SubParsersAction) for name in a.choices}
    text = parser.format_help()
    sections = {block.split(":\n", 1)[0]: block.split(":\n", 1)[1] for block in text.split("\n\n") if ":\n" in block}
    listed = {line.split()[0]: title for title, body in sections.items() if title != "options"
              for line in body.splitlines()}
    assert set(listed) == commands, "each command under a group, nothing else"
    for title, names in GROUPS:
        assert all(listed[n] == title for n in names if n in commands), title
    assert "other" not in sections, f"a command without a group: {sections.get('other')}"
    assert all(len(line) <= 80 and not line.startswith(" " * 15) for title, body in sections.items()
               if title != "options" for line in body.splitlines()), "one line each"
    assert "``" not in text


def test_a_command_s_own_help_is_argparse_s() -> None:
    parser = build_parser()
    override = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["override"]
    assert type(override) is argparse.ArgumentParser and "positional arguments:" in override.format_help()
