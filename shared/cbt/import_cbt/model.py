"""One CBT model file as one of ours (docs/coming-from-cbt.md#models): its frontmatter field by field, its Go
template as Jinja, its ClickHouse SQL as Spark SQL, and CBT's idempotency idiom — ``INSERT`` the interval, then
``DELETE`` the interval's rows of earlier runs — as write strategy ``replace``."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from cbt.base.yamldoc import SourceMap, parse_yaml
from cbt.import_cbt.clickhouse import NotTranspiled, Placeholders, Statement, hoist_sets, transpile
from cbt.import_cbt.ddl import Table
from cbt.import_cbt.gotemplate import Scope, convert, to_jinja
from cbt.import_cbt.report import Note
from cbt.import_cbt.writes import choose_write

_FIELDS = {
    "external": ("database", "table", "interval", "cache", "lag", "env"),
    "incremental": (
        "type",
        "database",
        "table",
        "interval",
        "schedules",
        "dependencies",
        "limits",
        "fill",
        "tags",
        "env",
        "exec",
    ),
    "scheduled": ("type", "database", "table", "schedule", "dependencies", "tags", "env", "exec"),
}
_FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*\r?\n?", re.DOTALL | re.MULTILINE)


@dataclass(frozen=True)
class ProjectFacts:
    """What converting one model needs to know about the whole project."""

    placeholders: dict[str, str]
    """``{{external}}`` / ``{{transformation}}`` → the default databases."""
    global_env: frozenset[str] = frozenset()
    tables: dict[str, Table] = field(default_factory=dict)
    """``db.table`` → its ClickHouse DDL, for the tables the project's DDL files create."""


@dataclass(frozen=True)
class Converted:
    text: str
    """The model file, ours; ``""`` when it could not be converted at all."""
    model_id: str | None
    notes: list[Note]


def convert_model(path: str, text: str, folder_kind: str, facts: ProjectFacts) -> Converted:
    """``path`` (relative, for notes) holding ``text``, found under CBT's ``external`` or ``transformations``
    paths (``folder_kind``)."""
    is_sql = path.lower().endswith(".sql")
    front, body, body_line = _split(text) if is_sql else (text, None, 0)
    data, smap, problems = parse_yaml(front, path, 1 if is_sql else 0)
    if problems or not isinstance(data, dict):
        what = problems[0].message if problems else "the frontmatter is not a mapping"
        return Converted("", None, [Note(path, problems[0].line if problems else 1, "unreadable model", what)])
    kind = "external" if folder_kind == "external" else str(data.get("type", ""))
    if kind not in _FIELDS:
        where = smap.locate(("type",)).line
        todo = "not a CBT model type (incremental or scheduled): the file was not converted"
        return Converted("", None, [Note(path, where, f"type {data.get('type')!r}", todo)])
    notes: list[Note] = []
    ours = _fields(data, kind, smap, path, notes)
    model_id = _model_id(ours, kind, facts)
    if body is None:
        return Converted(_yaml_file(ours), model_id, notes)
    scope = Scope(
        path,
        body_line,
        kind,
        facts.global_env | frozenset((data.get("env") or {}).keys()),
        facts.placeholders,
        _dependency_ids(ours, facts),
    )
    parts = convert(body, scope)
    notes.extend(scope.notes)
    scope.notes.clear()
    head, parts = hoist_sets(parts)
    try:
        statements, held = transpile(parts, scope)
    except NotTranspiled as e:
        notes.extend(scope.notes)
        notes.append(
            Note(path, body_line, "SQL not transpiled", f"{e}: the ClickHouse SQL was kept; rewrite it in Spark SQL")
        )
        return Converted(_sql_file(ours, head + to_jinja(parts).strip() + "\n"), model_id, notes)
    notes.extend(scope.notes)
    sql = head + _body(ours, kind, statements, held, model_id, facts, path, notes)
    return Converted(_sql_file(ours, sql), model_id, notes)


def _split(text: str) -> tuple[str, str | None, int]:
    match = _FRONTMATTER.match(text)
    if match is None:
        return "", text, 1
    return match.group(1), text[match.end() :], text.count("\n", 0, match.end()) + 1


def _fields(data: dict[str, Any], kind: str, smap: SourceMap, path: str, notes: list[Note]) -> dict[str, Any]:
    ours: dict[str, Any] = {}
    for key, value in data.items():
        line = smap.locate((key,)).line
        if key == "cluster" and kind == "external":
            if value:
                notes.append(Note(path, line, "cluster", "Delta has no clusters: left out"))
        elif key not in _FIELDS[kind]:
            notes.append(Note(path, line, f"unknown field {key}", "not a CBT field known to the importer: left out"))
        elif key == "exec":
            ours["exec"] = {"command": value, "shell": True, "inherit_env": True}
            notes.append(
                Note(
                    path,
                    line,
                    "exec",
                    "the command runs as CBT ran it (sh -c, the service's environment) "
                    "from the config file's folder, with SPARK_REMOTE instead of "
                    "CLICKHOUSE_URL: port the script to Spark and check its path",
                )
            )
        elif key == "limits" and isinstance(value, dict):
            limits = {k: v for k, v in value.items() if v not in (0, None)}  # CBT: 0 is "no limit"
            if limits:
                ours["limits"] = limits
        else:
            ours[key] = value
    return ours


def _model_id(ours: dict[str, Any], kind: str, facts: ProjectFacts) -> str | None:
    database = ours.get("database") or facts.placeholders.get(
        "{{external}}" if kind == "external" else "{{transformation}}"
    )
    table = ours.get("table")
    return f"{database}.{table}" if database and table else None


def _dependency_ids(ours: dict[str, Any], facts: ProjectFacts) -> tuple[str, ...]:
    out: list[str] = []
    for dep in ours.get("dependencies") or []:
        for member in dep if isinstance(dep, list) else [dep]:
            text = str(member)
            for placeholder, database in facts.placeholders.items():
                if text.startswith(placeholder + "."):
                    text = database + text[len(placeholder) :]
            out.append(text)
    return tuple(out)


def _body(
    ours: dict[str, Any],
    kind: str,
    statements: list[Statement],
    held: Placeholders,
    model_id: str | None,
    facts: ProjectFacts,
    path: str,
    notes: list[Note],
) -> str:
    choice = choose_write(kind, statements, held, facts.tables.get(model_id or ""), path)
    notes.extend(choice.notes)
    if choice.write is not None:
        ours["write"] = choice.write
    return ";\n\n".join(choice.statements) + "\n"


def _yaml_file(ours: dict[str, Any]) -> str:
    return yaml.safe_dump(ours, sort_keys=False, allow_unicode=True, width=120)


def _sql_file(ours: dict[str, Any], sql: str) -> str:
    return f"---\n{_yaml_file(ours)}---\n{sql}"
