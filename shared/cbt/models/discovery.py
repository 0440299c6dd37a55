"""Find model files under the configured roots and split each into YAML fields and an optional SQL body.

A ``.sql`` file is YAML frontmatter between ``---`` lines, then the SQL template; a ``.yml``/``.yaml`` file is all
YAML. ``{{external}}`` / ``{{transformation}}`` in the YAML are replaced by the default databases before parsing (a
YAML value cannot start with ``{{`` unquoted, and dependency ids must be resolved at load time, not by Jinja).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from cbt.base.errors import Problem
from cbt.base.yamldoc import SourceMap, parse_yaml

Kind = Literal["external", "transformation"]
EXTENSIONS = (".sql", ".yml", ".yaml")
PLACEHOLDER = re.compile(r"\{\{\s*(external|transformation)\s*\}\}")
UNSET_DATABASE = {
    "external": "unset_external_default_database",
    "transformation": "unset_transformation_default_database",
}
"""What a placeholder becomes when its default database is not configured (already reported; never "missing")."""


@dataclass
class RawDoc:
    """One model file after YAML parsing, before validation."""

    path: str
    kind: Kind
    data: dict[str, Any] | None
    smap: SourceMap
    body: str | None = None
    body_line: int = 0
    problems: list[Problem] = field(default_factory=list)
    text: str = ""
    """The YAML text (frontmatter), kept to guess the id of a file that does not parse."""
    override_key: str | None = None
    """The ``models.overrides`` key applied to this file, if any."""

    @property
    def is_sql_file(self) -> bool:
        return self.path.lower().endswith(".sql")


@dataclass(frozen=True)
class Root:
    """One configured model path; ``where`` locates it in the config for errors."""

    path: str
    kind: Kind
    where: tuple[str, int] | None


def display_path(path: Path) -> str:
    """Relative to the working directory when below it (like compilers print), else absolute."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def discover(roots: list[Root]) -> tuple[list[tuple[Path, Kind]], list[Problem]]:
    """Every model file under the roots, once each, in a stable order; symlinks may not leave their kind's roots."""
    problems: list[Problem] = []
    found: dict[Path, Kind] = {}
    for root in roots:
        allowed = [Path(os.path.realpath(r.path)) for r in roots if r.kind == root.kind]
        base = Path(root.path)
        if not base.exists():
            if root.where is not None:
                path, line = root.where
                problems.append(Problem(path, line, f"models.{_section(root.kind)}.paths", f"{base} does not exist"))
            continue
        files = [base] if base.is_file() else _walk(base, allowed, problems)
        for file in files:
            real = Path(os.path.realpath(file))
            if not _inside(real, allowed):
                problems.append(_escape(file, real))
            elif real not in found:
                found[real] = root.kind
    return sorted(found.items(), key=lambda item: str(item[0])), problems


def _section(kind: Kind) -> str:
    return "external" if kind == "external" else "transformations"


def _walk(base: Path, allowed: list[Path], problems: list[Problem]) -> list[Path]:
    out: list[Path] = []
    seen: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(base, followlinks=True):
        real = os.path.realpath(dirpath)
        if real in seen or not _inside(Path(real), allowed):
            if real not in seen:
                problems.append(_escape(Path(dirpath), Path(real)))
            dirnames[:] = []
            continue
        seen.add(real)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if not name.startswith(".") and name.lower().endswith(EXTENSIONS):
                out.append(Path(dirpath) / name)
    return out


def _inside(real: Path, allowed: list[Path]) -> bool:
    return any(real == root or root in real.parents for root in allowed)


def _escape(path: Path, real: Path) -> Problem:
    return Problem(display_path(path), 0, "path", f"symlink leads outside the configured model roots (to {real})")


def read_doc(file: Path, kind: Kind, defaults: dict[str, str | None]) -> RawDoc:
    """Parse one file; problems (unreadable, malformed YAML, missing frontmatter) are kept on the RawDoc."""
    path = display_path(file)
    smap = SourceMap(path=path)
    try:
        text = file.read_text(encoding="utf-8").removeprefix("\ufeff")
    except (OSError, UnicodeDecodeError) as e:
        return RawDoc(path, kind, None, smap, problems=[Problem(path, 0, "file", f"cannot read: {e}")])
    if file.suffix.lower() == ".sql":
        return _read_sql(path, kind, text, defaults)
    yaml_text, problems = substitute_placeholders(text, path, 0, defaults)
    return _parsed(path, kind, yaml_text, 0, problems)


def _read_sql(path: str, kind: Kind, text: str, defaults: dict[str, str | None]) -> RawDoc:
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.strip()), None)
    if start is None:
        return RawDoc(path, kind, None, SourceMap(path), problems=[Problem(path, 1, "file", "file is empty")])
    if lines[start].rstrip() != "---":
        message = "expected YAML frontmatter: a .sql model starts with a '---' line, its fields, then '---'"
        return RawDoc(path, kind, None, SourceMap(path), problems=[Problem(path, start + 1, "frontmatter", message)])
    end = next((i for i in range(start + 1, len(lines)) if lines[i].rstrip() == "---"), None)
    if end is None:
        message = "frontmatter is not closed: add a '---' line after the model's fields"
        return RawDoc(path, kind, None, SourceMap(path), problems=[Problem(path, start + 1, "frontmatter", message)])
    front, problems = substitute_placeholders("".join(lines[start + 1 : end]), path, start + 1, defaults)
    doc = _parsed(path, kind, front, start + 1, problems)
    doc.body = "".join(lines[end + 1 :])
    doc.body_line = end + 2
    return doc


def _parsed(path: str, kind: Kind, text: str, offset: int, problems: list[Problem]) -> RawDoc:
    data, smap, yaml_problems = parse_yaml(text, path, offset)
    problems = problems + yaml_problems
    if not yaml_problems and not isinstance(data, dict):
        got = "nothing" if data is None else type(data).__name__
        problems.append(Problem(path, offset + 1, "(root)", f"expected a mapping of model fields, got {got}"))
    return RawDoc(path, kind, data if isinstance(data, dict) else None, smap, problems=problems, text=text)


def substitute_placeholders(
    text: str, path: str, offset: int, defaults: dict[str, str | None]
) -> tuple[str, list[Problem]]:
    """Replace ``{{external}}`` / ``{{transformation}}`` with the default databases, line by line."""
    problems: list[Problem] = []
    out = []
    for number, line in enumerate(text.splitlines(keepends=True), start=offset + 1):

        def replace(match: re.Match[str], number: int = number) -> str:
            which = match.group(1)
            database = defaults.get(which)
            if database is None:
                section = _section("external" if which == "external" else "transformation")
                problems.append(
                    Problem(
                        path,
                        number,
                        "dependencies",
                        f"{{{{{which}}}}} is used but models.{section}.default_database is not set in the config",
                    )
                )
                return UNSET_DATABASE[which]
            return database

        out.append(PLACEHOLDER.sub(replace, line))
    return "".join(out), problems
