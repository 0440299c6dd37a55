"""Build one model from its parsed file: field schema, then the rules that tie fields together (SPEC §4.2).

Every rule reports at the key it is about, and every rule runs: a file with three mistakes gets three lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, cast

from cbt.errors import Problem
from cbt.models.discovery import RawDoc
from cbt.models.problems import pydantic_problems
from cbt.models.schema import ExternalFields, Fields, IncrementalFields, ScheduledFields
from cbt.models.spec import (
    Cache,
    Dependency,
    ExternalModel,
    Fill,
    IncrementalModel,
    Interval,
    Limits,
    Model,
    ScheduledModel,
    Schedules,
    SourceRef,
    Write,
)
from cbt.models.yamldoc import Loc
from pydantic import BaseModel, ValidationError

_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]*\.[A-Za-z0-9_][A-Za-z0-9_-]*")
RESERVED_ENV = {"SPARK_REMOTE", "SPARK_MASTER", "SPARK_CONF_JSON", "BOUNDS_START", "BOUNDS_END"}
RESERVED_ENV_PREFIXES = ("TASK_", "SELF_", "CACHE_")
_DEP_ENV = re.compile(r"DEP_.+_(DATABASE|TABLE)")


@dataclass(frozen=True)
class Defaults:
    """The default database per kind of model (``models.*.default_database``)."""

    external: str | None = None
    transformation: str | None = None


@dataclass
class Built:
    """The outcome for one file: the model when every rule passed, its id when it could be read, the problems."""

    model: Model | None
    model_id: str | None
    line: int
    problems: list[Problem]


def reserved_env_problem(name: str) -> str | None:
    """Why ``name`` may not be set by users (cbt sets it for exec models), or None."""
    if name in RESERVED_ENV or name.startswith(RESERVED_ENV_PREFIXES) or _DEP_ENV.fullmatch(name):
        return f"{name} is set by cbt for exec models; choose another name"
    return None


def model_identity(doc: RawDoc, defaults: Defaults) -> tuple[str | None, str | None]:
    """(database, table) as far as the raw fields tell, with the kind's default database applied."""
    data = doc.data or {}
    database = data.get("database")
    if database is None:
        database = defaults.external if doc.kind == "external" else defaults.transformation
    table = data.get("table")
    return (database if isinstance(database, str) else None, table if isinstance(table, str) else None)


def build(doc: RawDoc, defaults: Defaults) -> Built:
    """Validate one parsed file and build its model; ``doc.problems`` must be empty and ``doc.data`` set."""
    data = doc.data or {}
    database, table = model_identity(doc, defaults)
    model_id = f"{database}.{table}" if database and table else None
    line = doc.smap.locate(("table",)).line
    schema, problems = _schema_for(doc)
    if schema is None:
        return Built(None, model_id, line, problems)
    dependencies, dep_problems = parse_dependencies(data.get("dependencies"), doc)
    problems += dep_problems + _body_rules(doc)
    try:
        fields = cast(Fields, schema.model_validate(data))
    except ValidationError as e:
        return Built(None, model_id, line, problems + pydantic_problems(e, doc.smap, schema))
    if database is None:
        section = "external" if doc.kind == "external" else "transformations"
        problems.append(
            doc.smap.problem(("database",), f"required field is missing (models.{section}.default_database is not set)")
        )
    problems += _field_rules(fields, doc)
    if problems or database is None:
        return Built(None, model_id, line, problems)
    source = SourceRef(doc.path, line, doc.body_line if doc.body is not None else 0)
    return Built(_to_model(fields, database, dependencies, source, doc), model_id, line, [])


def _schema_for(doc: RawDoc) -> tuple[type[BaseModel] | None, list[Problem]]:
    kind = (doc.data or {}).get("type")
    if doc.kind == "external":
        if kind in ("incremental", "scheduled"):
            message = (
                f"a {kind} transformation belongs under models.transformations.paths; this file is under "
                "models.external.paths"
            )
            return None, [doc.smap.problem(("type",), message)]
        return ExternalFields, []
    if kind == "incremental":
        return IncrementalFields, []
    if kind == "scheduled":
        return ScheduledFields, []
    if kind is None:
        message = "required field is missing: a transformation's type is incremental or scheduled"
        return None, [doc.smap.problem(("type",), message)]
    return None, [doc.smap.problem(("type",), f"expected incremental or scheduled, got {kind!r}")]


def parse_dependencies(raw: Any, doc: RawDoc) -> tuple[tuple[Dependency, ...], list[Problem]]:
    """Strings are required (AND); a list is an OR group of ids. Each id is ``database.table``, listed once."""
    if not isinstance(raw, list):
        return (), []  # absent or not a list: the schema reports it
    problems: list[Problem] = []
    seen: set[str] = set()
    out: list[Dependency] = []

    def check(value: Any, loc: Loc) -> str | None:
        if not isinstance(value, str) or not _ID.fullmatch(value):
            problems.append(
                doc.smap.problem(loc, f"expected 'database.table' (or '{{{{external}}}}.table'), got {value!r}")
            )
            return None
        if value in seen:
            problems.append(doc.smap.problem(loc, f"{value} is listed more than once"))
        seen.add(value)
        return value

    for index, item in enumerate(raw):
        if isinstance(item, list):
            if not item:
                problems.append(doc.smap.problem(("dependencies", index), "an OR group needs at least one member"))
            members = [check(m, ("dependencies", index, j)) for j, m in enumerate(item)]
            out.append(tuple(m for m in members if m is not None))
        else:
            dep = check(item, ("dependencies", index))
            if dep is not None:
                out.append(dep)
    return tuple(out), problems


def _body_rules(doc: RawDoc) -> list[Problem]:
    """Exactly one of: an ``exec`` command, or a SQL body (``.sql`` files only)."""
    has_exec = (doc.data or {}).get("exec") is not None
    has_body = doc.body is not None and doc.body.strip() != ""
    if not doc.is_sql_file and not has_exec:
        return [
            doc.smap.problem(
                ("exec",), "required field is missing: a .yml model runs a command; SQL models are .sql files"
            )
        ]
    if has_exec and has_body:
        return [doc.smap.problem(("exec",), "set either exec or a SQL body after the frontmatter, not both")]
    if doc.is_sql_file and not has_exec and not has_body:
        return [Problem(doc.path, doc.body_line, "sql", "the SQL body after the frontmatter is empty")]
    return []


def _field_rules(fields: Fields, doc: RawDoc) -> list[Problem]:
    found: list[tuple[Loc, str]] = [
        (("env", name), msg) for name in fields.env if (msg := reserved_env_problem(name)) is not None
    ]
    if isinstance(fields, ExternalFields):
        cache = fields.cache
        if cache.full_scan_interval < cache.incremental_scan_interval:
            found.append(
                (
                    ("cache", "full_scan_interval"),
                    f"full_scan_interval ({cache.full_scan_interval}s) "
                    f"must be >= incremental_scan_interval ({cache.incremental_scan_interval}s)",
                )
            )
    elif isinstance(fields, IncrementalFields):
        found += _incremental_rules(fields, doc)
    return [doc.smap.problem(loc, message) for loc, message in found]


def _incremental_rules(fields: IncrementalFields, doc: RawDoc) -> list[tuple[Loc, str]]:
    found: list[tuple[Loc, str]] = []
    interval, limits = fields.interval, fields.limits
    if interval.min > interval.max:
        found.append((("interval", "min"), f"interval.min ({interval.min}) must be <= interval.max ({interval.max})"))
    if limits.min is not None and limits.max and limits.min > limits.max:
        found.append((("limits", "min"), f"limits.min ({limits.min}) must be <= limits.max ({limits.max})"))
    if not fields.schedules.forwardfill and not fields.schedules.backfill:
        found.append((("schedules",), "at least one of forwardfill or backfill must be set ('' disables one)"))
    if not fields.dependencies:
        found.append((("dependencies",), "an incremental model needs at least one dependency"))
    return found + _write_rules(fields, doc)


def _write_rules(fields: IncrementalFields, doc: RawDoc) -> list[tuple[Loc, str]]:
    write = fields.write
    if write is None:
        return []
    if fields.exec is not None:
        return [(("write",), "write applies to SQL models; an exec model writes its own output")]
    found: list[tuple[Loc, str]] = []
    if write.strategy == "append" and not write.unique_key:
        found.append(
            (
                ("write", "unique_key"),
                "write strategy append requires unique_key (the columns "
                "identifying a row, so a re-run does not insert it twice)",
            )
        )
    if write.strategy != "append" and write.unique_key:
        found.append(
            (("write", "unique_key"), f"unique_key is only used by write strategy append, not {write.strategy}")
        )
    if write.strategy == "replace" and write.replace_where is None:
        found.append(
            (
                ("write", "replace_where"),
                "write strategy replace requires replace_where: the "
                "predicate selecting the interval's rows, e.g. ts >= timestamp_seconds({{ bounds.start }}) "
                "AND ts < timestamp_seconds({{ bounds.end }})",
            )
        )
    if write.strategy != "replace" and write.replace_where is not None:
        found.append(
            (("write", "replace_where"), f"replace_where is only used by write strategy replace, not {write.strategy}")
        )
    return found


def _to_model(
    fields: Fields, database: str, dependencies: tuple[Dependency, ...], source: SourceRef, doc: RawDoc
) -> Model:
    sql = doc.body if doc.body is not None and doc.body.strip() else None
    if isinstance(fields, ExternalFields):
        cache = Cache(fields.cache.incremental_scan_interval, fields.cache.full_scan_interval)
        return ExternalModel(
            database, fields.table, fields.interval.type, source, sql, fields.exec, fields.lag, cache, dict(fields.env)
        )
    tags = tuple(dict.fromkeys(fields.tags))
    if isinstance(fields, ScheduledFields):
        return ScheduledModel(
            database, fields.table, fields.schedule, source, dependencies, tags, dict(fields.env), sql, fields.exec
        )
    w = fields.write
    write = Write(w.strategy, tuple(w.unique_key), w.replace_where) if w is not None else Write()
    return IncrementalModel(
        database=database,
        table=fields.table,
        interval=Interval(fields.interval.max, fields.interval.min, fields.interval.type),
        schedules=Schedules(fields.schedules.forwardfill, fields.schedules.backfill),
        source=source,
        dependencies=dependencies,
        limits=Limits(fields.limits.min, fields.limits.max or None),
        fill=Fill(fields.fill.direction, fields.fill.allow_gap_skipping, fields.fill.buffer),
        tags=tags,
        env=dict(fields.env),
        sql=sql,
        exec=fields.exec,
        write=write,
    )
