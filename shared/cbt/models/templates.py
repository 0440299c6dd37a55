"""Jinja2 templates for model SQL (docs/design/models.md#templates). Undefined variables are errors naming the variable
and the file.

Variables: ``self`` (database, table, id, type, tags, interval, interval_type, from), ``bounds.{start, end}``
(incremental), ``task.{id, model, start, direction, attempt}`` (transformations), ``dep[db][table].{database, table,
from}`` (also by attribute and by the ``{{external}}`` / ``{{transformation}}`` placeholder keys), ``ref("db.table")``
→ `` `db`.`table` ``, ``env.NAME`` (global then model env), ``spark.{remote, master, conf}``, and for external bounds
queries ``cache.{is_incremental_scan, is_full_scan, previous_min, previous_max}``.
"""

from __future__ import annotations

import contextvars
import functools
import traceback
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import jinja2
import jinja2.ext
import jinja2.lexer
import jinja2.runtime
from jinja2.sandbox import SandboxedEnvironment
from jinja2.utils import object_type_repr

from cbt.base.errors import CbtError, Problem
from cbt.base.tasks import TaskDirection, incremental_task_id, scheduled_task_id
from cbt.config.settings import Config
from cbt.models.spec import ExternalModel, IncrementalModel, Model, all_dependency_ids, model_kind

_TEMPLATE_FILE = "<template>"
SELF_VAR = "cbt_self_model"


class TemplateRenderError(CbtError):
    """A template failed to compile or render; ``problem`` says where (file line) and what."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        super().__init__(str(problem))


@dataclass(frozen=True)
class RenderSettings:
    """What the configuration contributes to every template and exec environment."""

    env: Mapping[str, str] = field(default_factory=dict)
    spark_remote: str | None = None
    spark_master: str | None = None
    spark_conf: Mapping[str, str] = field(default_factory=dict)
    external_database: str | None = None
    transformation_database: str | None = None
    is_whole_hour_zone: bool = True
    """Whether the Spark session's time zone is whole hours from UTC (``BatchChoice.needs_whole_hour_zone``): the
    worker sets what its session says; ``cbt render`` shows the batch as it runs in such a zone."""

    @classmethod
    def from_config(cls, config: Config) -> RenderSettings:
        return cls(
            env=dict(config.models.env),
            spark_remote=config.spark.remote,
            spark_master=config.spark.master,
            spark_conf=dict(config.spark.conf),
            external_database=config.models.external.default_database,
            transformation_database=config.models.transformations.default_database,
        )


@dataclass(frozen=True)
class TaskContext:
    """One run: ``start``/``end`` are the half-open interval for incremental models (None for scheduled)."""

    model_id: str
    task_start_unix: int
    start: int | None = None
    end: int | None = None
    direction: TaskDirection = "forward"
    attempt: int = 1
    step: int | None = None
    """A batch: ``[start, end)`` is intervals of ``step`` run as one task (docs/design/scheduling.md#batched-runs);
    ``None``: one interval."""
    accepted: tuple[tuple[int, int], ...] = ()
    """Intervals an operator accepted despite failed checks (``cbt checks accept``): published whatever their
    ``error`` checks say."""

    @property
    def interval(self) -> int | None:
        return None if self.start is None or self.end is None else self.end - self.start

    @property
    def is_batch(self) -> bool:
        return self.step is not None and self.interval is not None and self.interval > self.step

    def intervals(self) -> list[TaskContext]:
        """The batch's intervals, each as a task of its own (itself when it is not a batch)."""
        if not self.is_batch or self.start is None or self.end is None or self.step is None:
            return [self]
        return [replace(self, start=low, end=low + self.step, step=None) for low in range(self.start, self.end,
                                                                                         self.step)]

    @property
    def task_id(self) -> str:
        """``model:position:interval`` for incremental tasks, ``model:@scheduled_unix`` for scheduled ones."""
        if self.start is None or self.end is None:
            return scheduled_task_id(self.model_id, self.task_start_unix)
        return incremental_task_id(self.model_id, self.start, self.end - self.start)


@dataclass(frozen=True)
class ScanContext:
    """An external bounds scan: full, or incremental (only data outside the previously known bounds)."""

    is_incremental_scan: bool = False
    previous_min: int | None = None
    previous_max: int | None = None


class Namespace(dict[str, Any]):
    """A dict that also answers attribute access and knows its own name, for precise "undefined" messages."""

    def __init__(self, label: str, values: Mapping[str, Any]) -> None:
        super().__init__(values)
        self.label = label


class _StrictUndefined(jinja2.StrictUndefined):
    @property
    def _undefined_message(self) -> str:
        owner = self._undefined_obj
        if isinstance(owner, Namespace):
            name = self._undefined_name
            return (
                f"'{owner.label}.{name}' is undefined" if _is_ident(name) else f"'{owner.label}[{name!r}]' is undefined"
            )
        if owner is jinja2.utils.missing:
            return f"'{self._undefined_name}' is undefined"
        return f"{object_type_repr(owner)} has no attribute or key {self._undefined_name!r}"


def _is_ident(name: object) -> bool:
    return isinstance(name, str) and name.isidentifier()


class _SelfIsTheModel(jinja2.ext.Extension):
    """Jinja reserves ``self`` for block references; our templates use it for the model (as the original did),
    so the name token is renamed before compilation. Attribute names (``x.self``) and strings are untouched."""

    def filter_stream(self, stream: jinja2.lexer.TokenStream) -> Iterator[jinja2.lexer.Token]:
        previous = None
        for token in stream:
            if token.type == "name" and token.value == "self" and previous != "dot":
                token = jinja2.lexer.Token(token.lineno, "name", SELF_VAR)
            previous = token.type
            yield token


MAX_LOOP_ITEMS = 100_000
"""The most items all the ``range()`` calls of one rendering may produce together (nested loops multiply)."""
MAX_RENDERED_CHARS = 4_000_000
"""The longest SQL one rendering may produce, and the longest string or list a ``*`` may build."""

_loop_budget: contextvars.ContextVar[list[int]] = contextvars.ContextVar("cbt_template_loop_budget")


class TemplateTooCostly(CbtError, ValueError):
    """A template asked for more work than a rendering may do (``MAX_LOOP_ITEMS``, ``MAX_RENDERED_CHARS``)."""


def _bounded_range(*args: int) -> range:
    """Jinja's ``range``, counted against the rendering's budget: ``range(99999)`` inside ``range(99999)`` stops at
    the second inner loop instead of running for hours in a process that serves requests."""
    made = range(*args)
    budget = _loop_budget.get(None)
    if budget is None:
        budget = [MAX_LOOP_ITEMS]
    budget[0] -= len(made)
    if budget[0] < 0:
        raise TemplateTooCostly(f"the template's range() calls produce more than {MAX_LOOP_ITEMS:,} items in all")
    return made


class _BoundedSandbox(SandboxedEnvironment):
    """The sandbox with a bound on the work a template can ask for: loops (``range``), repetition (``*``), powers
    (``**``) and the output's size; ``lipsum`` (arbitrary text of any length) is not offered."""

    intercepted_binops = frozenset({"*", "**"})

    def call_binop(self, context: jinja2.runtime.Context, operator: str, left: Any, right: Any) -> Any:
        if operator == "*":
            for sized, times in ((left, right), (right, left)):
                if isinstance(sized, str | list | tuple) and isinstance(times, int) and \
                        len(sized) * times > MAX_RENDERED_CHARS:
                    raise TemplateTooCostly(f"'*' would build a value of more than {MAX_RENDERED_CHARS:,} items")
        if operator == "**" and isinstance(left, int) and isinstance(right, int) and \
                abs(left) > 1 and right * max(abs(left).bit_length(), 1) > 4096:
            raise TemplateTooCostly("'**' would build a number of more than 4,096 bits")
        return super().call_binop(context, operator, left, right)


@functools.cache
def _environment() -> jinja2.Environment:
    """Jinja's sandbox: a template reaches its documented variables and Jinja's own filters and tests, never Python
    beyond them (no ``__class__``, ``__globals__``, ``__subclasses__``: a model's author writes SQL, and the api
    process that renders it holds the tokens); and a bounded one (``_BoundedSandbox``)."""
    env = _BoundedSandbox(
        undefined=_StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=[_SelfIsTheModel],
    )
    env.globals["range"] = _bounded_range
    env.globals.pop("lipsum", None)
    return env


def _render_bounded(template: jinja2.Template, context: Mapping[str, Any]) -> str:
    """Render with a fresh loop budget, stopping once the output passes ``MAX_RENDERED_CHARS``."""
    token = _loop_budget.set([MAX_LOOP_ITEMS])
    try:
        out, size = [], 0
        for chunk in template.generate(context):
            size += len(chunk)
            if size > MAX_RENDERED_CHARS:
                raise TemplateTooCostly(f"the rendered SQL passes {MAX_RENDERED_CHARS:,} characters")
            out.append(chunk)
        return "".join(out)
    finally:
        _loop_budget.reset(token)


@functools.lru_cache(maxsize=512)
def _compile(source: str) -> jinja2.Template:
    return _environment().from_string(source)


def quote_part(name: str) -> str:
    """One Spark SQL identifier part in backticks, backticks inside doubled."""
    return "`" + name.replace("`", "``") + "`"


def quote_id(model_id: str) -> str:
    """`` `db`.`table` `` with backticks doubled inside names (Spark SQL quoting)."""
    return ".".join(quote_part(part) for part in model_id.split("."))


def sql_string(text: str) -> str:
    """``text`` as a Spark SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def compile_problem(source: str, path: str, first_line: int, field_name: str = "sql") -> Problem | None:
    """A syntax error in a template, at its file line; None when it compiles."""
    try:
        _compile(source)
    except jinja2.TemplateSyntaxError as e:
        return Problem(path, first_line + (e.lineno or 1) - 1, field_name, f"template syntax error: {e.message}")
    return None


def render(source: str, context: Mapping[str, Any], path: str, first_line: int, field_name: str = "sql") -> str:
    """Render ``source``; any failure becomes a TemplateRenderError at the template's file line."""
    problem = compile_problem(source, path, first_line, field_name)
    if problem is not None:
        raise TemplateRenderError(problem)
    try:
        return _render_bounded(_compile(source), context)
    except Exception as e:  # a template may raise anything; the user gets a located message, never a traceback
        line = first_line + _template_line(e) - 1
        is_ours = isinstance(e, jinja2.TemplateError | RefError | TemplateTooCostly)
        message = str(e) if is_ours else f"{type(e).__name__}: {e}"
        raise TemplateRenderError(Problem(path, line, field_name, message)) from e


def _template_line(error: BaseException) -> int:
    line = 1
    for frame, lineno in traceback.walk_tb(error.__traceback__):
        if frame.f_code.co_filename == _TEMPLATE_FILE:
            line = lineno
    return line


class RefError(CbtError, ValueError):
    """``ref()`` was given something that is not ``db.table``."""


def _ref_function(settings: RenderSettings, reads: Mapping[str, str]) -> Any:
    def ref(name: str) -> str:
        resolved = _resolve_placeholder(str(name), settings)
        if resolved.count(".") != 1 or not all(resolved.split(".")):
            raise RefError(f"ref() expects 'database.table', got {name!r}")
        return quote_id(reads.get(resolved, resolved))

    return ref


def _resolve_placeholder(name: str, settings: RenderSettings) -> str:
    for placeholder, database in (
        ("{{external}}", settings.external_database),
        ("{{transformation}}", settings.transformation_database),
    ):
        if name.startswith(placeholder + ".") and database is not None:
            return database + name[len(placeholder) :]
    return name


def _reads(model: Model) -> Mapping[str, str]:
    return model.reads if isinstance(model, IncrementalModel) else {}


def dep_namespace(model: Model, settings: RenderSettings) -> Namespace:
    """``dep[db][table]`` for every dependency (OR-group members too), also under the placeholder keys."""
    by_db: dict[str, dict[str, Namespace]] = {}
    built_from = {build: name for name, build in _reads(model).items()}
    for dep_id in all_dependency_ids(model):
        dep_db, dep_table = built_from.get(dep_id, dep_id).split(".", 1)  # (a build's parent build: by its name)
        from_clause = quote_id(dep_id)
        entry = {"database": dep_db, "table": dep_table, "from": from_clause, "helpers": {"from": from_clause}}
        by_db.setdefault(dep_db, {})[dep_table] = Namespace(f'dep["{dep_db}"]["{dep_table}"]', entry)
    for placeholder, default_db in (
        ("{{external}}", settings.external_database),
        ("{{transformation}}", settings.transformation_database),
    ):
        if default_db is not None and default_db in by_db:
            by_db[placeholder] = by_db[default_db]
    return Namespace("dep", {db: Namespace(f'dep["{db}"]', tables) for db, tables in by_db.items()})


def _self_namespace(model: Model, task: TaskContext | None) -> Namespace:
    from_clause = quote_id(model.id)
    values: dict[str, Any] = {
        "database": model.database,
        "table": model.table,
        "id": model.id,
        "type": model_kind(model),
        "from": from_clause,
        "helpers": {"from": from_clause},
    }
    if isinstance(model, ExternalModel):
        values["interval_type"] = model.interval_type
    else:
        values["tags"] = list(model.tags)
    if isinstance(model, IncrementalModel):
        values["interval_type"] = model.interval.type
        if task is not None and task.interval is not None:
            values["interval"] = task.interval
    return Namespace("self", values)


def build_context(
    model: Model, settings: RenderSettings, task: TaskContext | None = None, scan: ScanContext | None = None
) -> dict[str, Any]:
    """Every template variable for one render of ``model``."""
    context: dict[str, Any] = {
        SELF_VAR: _self_namespace(model, task),
        "env": Namespace("env", {**settings.env, **model.env}),
        "spark": Namespace(
            "spark",
            {"remote": settings.spark_remote, "master": settings.spark_master, "conf": dict(settings.spark_conf)},
        ),
        "ref": _ref_function(settings, _reads(model)),
    }
    if isinstance(model, ExternalModel):
        scan = scan or ScanContext()
        context["cache"] = Namespace(
            "cache",
            {
                "is_incremental_scan": scan.is_incremental_scan,
                "is_full_scan": not scan.is_incremental_scan,
                "previous_min": scan.previous_min,
                "previous_max": scan.previous_max,
            },
        )
        return context
    context["dep"] = dep_namespace(model, settings)
    if task is not None:
        context["task"] = Namespace(
            "task",
            {
                "id": task.task_id,
                "model": model.id,
                "start": task.task_start_unix,
                "direction": task.direction,
                "attempt": task.attempt,
            },
        )
        if isinstance(model, IncrementalModel) and task.start is not None:
            context["bounds"] = Namespace("bounds", {"start": task.start, "end": task.end})
    return context
