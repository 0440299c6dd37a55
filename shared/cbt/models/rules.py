"""Build one model from its parsed file: field schema, then the rules that tie fields together
(docs/design/models.md#field-rules).

Every rule reports at the key it is about, and every rule runs: a file with three mistakes gets three lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from pydantic import BaseModel, ValidationError

from cbt.base.errors import Problem
from cbt.base.problems import pydantic_problems
from cbt.models.crossfield import body_rules, field_rules, parse_dependencies
from cbt.models.discovery import RawDoc
from cbt.models.interval_checks import CheckKind, IntervalCheck, default_name
from cbt.models.schema import (
    CHECK_KINDS,
    CheckFields,
    ExecFields,
    ExposeFields,
    ExternalFields,
    Fields,
    IncrementalFields,
    ScheduledFields,
)
from cbt.models.spec import (
    Batch,
    Cache,
    ChangePolicy,
    Dependency,
    ExecOptions,
    Expose,
    ExternalModel,
    Fill,
    IncrementalModel,
    Interval,
    Limits,
    Model,
    ModelKind,
    ScheduledModel,
    Schedules,
    SourceRef,
    Write,
)


@dataclass(frozen=True)
class Defaults:
    """The default database per kind of model (``models.*.default_database``)."""

    external: str | None = None
    transformation: str | None = None


@dataclass
class Built:
    """The outcome for one file: the model when every rule passed, and as much as could be read when not (id,
    kind, interval type, dependencies), so checks across models still run on files with problems of their own."""

    doc: RawDoc
    model: Model | None
    model_id: str | None
    line: int
    problems: list[Problem]
    kind: ModelKind | None = None
    interval_type: str | None = None
    dependencies: tuple[Dependency, ...] = ()


def model_identity(doc: RawDoc, defaults: Defaults) -> tuple[str | None, str | None]:
    """(database, table) as far as the raw fields tell, with the kind's default database applied."""
    data = doc.data or {}
    database = data.get("database")
    if database is None:
        database = defaults.external if doc.kind == "external" else defaults.transformation
    table = data.get("table")
    return (database if isinstance(database, str) else None, table if isinstance(table, str) else None)


def build(doc: RawDoc, defaults: Defaults) -> Built:
    """Validate one parsed file and build its model; ``doc.data`` must be set."""
    data = doc.data or {}
    database, table = model_identity(doc, defaults)
    model_id = f"{database}.{table}" if database and table else None
    built = Built(doc, None, model_id, doc.smap.locate(("table",)).line, [])
    schema, kind, problems = _schema_for(doc)
    if schema is None or kind is None:
        built.problems = problems
        return built
    built.kind = kind
    built.interval_type = _raw_interval_type(data)
    raw_dependencies = data.get("dependencies") if kind != "external" else None
    built.dependencies, dep_problems = parse_dependencies(raw_dependencies, doc)
    problems += dep_problems + body_rules(doc) + field_rules(doc, kind)
    if database is None:
        section = "external" if doc.kind == "external" else "transformations"
        message = f"required field is missing (models.{section}.default_database is not set)"
        problems.append(doc.smap.problem(("database",), message))
    try:
        fields = cast(Fields, schema.model_validate(data))
    except ValidationError as e:
        problems += pydantic_problems(e, doc.smap, schema)
    built.problems = [_from_override(p, doc) for p in problems]
    if not problems and database is not None:
        source = SourceRef(doc.path, built.line, doc.body_line if doc.body is not None else 0)
        built.model = _to_model(fields, database, built.dependencies, source, doc)
    return built


def _from_override(problem: Problem, doc: RawDoc) -> Problem:
    """A problem in a value set by an override is reported at the config line, named as the override's key."""
    if problem.path == doc.path or doc.override_key is None:
        return problem
    field_name = f"models.overrides.{doc.override_key}.config.{problem.field}"
    return Problem(problem.path, problem.line, field_name, problem.message)


def _raw_interval_type(data: dict[str, Any]) -> str | None:
    interval = data.get("interval")
    value = interval.get("type") if isinstance(interval, dict) else None
    return value if isinstance(value, str) else None


def _schema_for(doc: RawDoc) -> tuple[type[BaseModel] | None, ModelKind | None, list[Problem]]:
    kind = (doc.data or {}).get("type")
    if doc.kind == "external":
        if kind in ("incremental", "scheduled"):
            message = (
                f"a {kind} transformation belongs under models.transformations.paths; this file is under "
                "models.external.paths"
            )
            return None, None, [doc.smap.problem(("type",), message)]
        return ExternalFields, "external", []
    if kind == "incremental":
        return IncrementalFields, "incremental", []
    if kind == "scheduled":
        return ScheduledFields, "scheduled", []
    if kind is None:
        message = "required field is missing: a transformation's type is incremental or scheduled"
        return None, None, [doc.smap.problem(("type",), message)]
    return None, None, [doc.smap.problem(("type",), f"expected incremental or scheduled, got {kind!r}")]


def _to_model(
    fields: Fields, database: str, dependencies: tuple[Dependency, ...], source: SourceRef, doc: RawDoc
) -> Model:
    sql = doc.body if doc.body is not None and doc.body.strip() else None
    if isinstance(fields, ExternalFields):
        cache = Cache(fields.cache.incremental_scan_interval, fields.cache.full_scan_interval)
        return ExternalModel(
            database, fields.table, fields.interval.type, source, sql, _command(fields.exec), fields.lag, cache,
            dict(fields.env), fields.timeout, exec_options=_exec_options(fields.exec),
        )
    tags = tuple(dict.fromkeys(fields.tags))
    if isinstance(fields, ScheduledFields):
        return ScheduledModel(
            database, fields.table, fields.schedule, source, dependencies, tags, dict(fields.env), sql,
            _command(fields.exec), fields.timeout, _exposure(fields.expose, ()),
            exec_options=_exec_options(fields.exec),
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
        exec=_command(fields.exec),
        exec_options=_exec_options(fields.exec),
        write=write,
        timeout_s=fields.timeout,
        batch=Batch(fields.batch.mode, fields.batch.max_intervals),
        expose=_exposure(fields.expose, write.unique_key),
        change=ChangePolicy(fields.change.mode, fields.change.effective_from, fields.change.category,
                            fields.change.retention),
        checks=tuple(map(_check, fields.checks)),
    )


def _check(fields: CheckFields) -> IntervalCheck:
    kind = cast(CheckKind, next(k for k in CHECK_KINDS if getattr(fields, k) is not None))
    columns = tuple(fields.not_null or fields.unique or ())
    accepted = {c: tuple(v) for c, v in (fields.accepted_values or {}).items()}
    name = fields.name or default_name(kind, columns or tuple(accepted))
    rows = fields.row_count
    return IntervalCheck(name, kind, fields.severity, fields.threshold, columns, accepted,
                         rows.min if rows else None, rows.max if rows else None, rows.within if rows else None,
                         rows.of_last if rows else 10, fields.expression or fields.sql)


def _exposure(fields: ExposeFields | None, unique_key: tuple[str, ...]) -> Expose | None:
    if fields is None:
        return None
    return Expose(tuple(fields.key) if fields.key is not None else unique_key, fields.position)


def _command(value: ExecFields | None) -> str | None:
    return value.command if value is not None else None


def _exec_options(value: ExecFields | None) -> ExecOptions:
    """``exec: {command, shell, inherit_env}``; the short form ``exec: "cmd"`` keeps the safer defaults."""
    if value is None:
        return ExecOptions()
    inherit = value.inherit_env if isinstance(value.inherit_env, bool) else tuple(value.inherit_env)
    return ExecOptions(value.shell, inherit)
