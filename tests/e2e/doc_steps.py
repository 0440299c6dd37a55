"""A docs page as steps a test runs: its ``console`` blocks are commands with the output the page shows, and an HTML
comment just above a block says how the test treats it (the reader never sees it):

- ``<!-- test: file PATH -->`` above any code block: the block is written to ``PATH`` (relative to the current folder);
- ``<!-- test: background -->`` above a ``console`` block: its one command keeps running (the services); a second such
  block stops the first (Ctrl-C) and starts its own: a restart;
- ``<!-- test: until-match -->``: the command is run again until its output matches (something is being computed);
- ``<!-- test: stack-is-up -->``: the block starts the local stack, which the suite's own stack stands in for;
- ``<!-- test: installed -->``: the block installs the repository, which the suite runs from (``cbt`` on the PATH).

In expected output, ``...`` in a line matches any text and a line of only ``...`` any number of lines (doctest's
ellipsis); runs of spaces count as one. A command that exits with another code than 0 prints ``(exit code N)`` last,
so the page must show that too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MODES = ("run", "background", "until-match", "stack-is-up", "installed")
_FENCE = re.compile(r"^```(\w*)\s*$")
_DIRECTIVE = re.compile(r"^<!--\s*test:\s*([\w-]+)\s*(.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Command:
    line: int
    command: str
    expected: tuple[str, ...]
    mode: str = "run"
    """``run``, ``background``, ``until-match``, ``stack-is-up`` or ``installed``."""


@dataclass(frozen=True)
class File:
    line: int
    path: str
    text: str


Step = Command | File


def steps(markdown: str) -> list[Step]:
    lines = markdown.splitlines()
    found: list[Step] = []
    directive: tuple[str, str] | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if not fence:
            match = _DIRECTIVE.match(line.strip())
            if match:
                directive = (match.group(1), match.group(2))
            elif line.strip():
                directive = None
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), None)
        if end is None:
            raise ValueError(f"line {i + 1}: a code block that never ends")
        body, language = lines[i + 1:end], fence.group(1)
        if directive and directive[0] == "file":
            found.append(File(i + 1, directive[1], "\n".join(body) + "\n"))
        elif language == "console":
            mode = directive[0] if directive else "run"
            if mode not in MODES:
                raise ValueError(f"line {i}: unknown test directive {mode!r}")
            found += _commands(i + 2, body, mode)
        directive = None
        i = end + 1
    return found


def _commands(first_line: int, body: list[str], mode: str) -> list[Command]:
    commands: list[Command] = []
    for offset, text in enumerate(body):
        if text.startswith("$ "):
            commands.append(Command(first_line + offset, text[2:], (), mode))
        elif not commands:
            raise ValueError(f"line {first_line + offset}: output before any `$ command` line")
        else:
            last = commands[-1]
            commands[-1] = Command(last.line, last.command, (*last.expected, text), mode)
    return commands


def matches(expected: tuple[str, ...], actual: str) -> bool:
    """Whether ``actual`` (a command's output) is what the page shows, ``...`` standing for what varies."""
    want = [line.rstrip() for line in expected]
    got = [line.rstrip() for line in actual.rstrip("\n").splitlines()] if actual.strip() else []
    while want and not want[-1]:
        want.pop()
    return _match(want, got)


def _match(want: list[str], got: list[str]) -> bool:
    if not want:
        return not got
    if want[0] == "...":
        return any(_match(want[1:], got[k:]) for k in range(len(got) + 1))
    return bool(got) and _line_matches(want[0], got[0]) and _match(want[1:], got[1:])


def _line_matches(want: str, got: str) -> bool:
    """Runs of spaces count as one: a table's columns are as wide as the names in it (the test's project has a
    longer name than the page's)."""
    pattern = ".*".join(re.escape(part) for part in _spaced(want).split("..."))
    return re.fullmatch(pattern, _spaced(got)) is not None


def _spaced(line: str) -> str:
    return re.sub(r"  +", " ", line.strip())
