"""Load every model under the configured paths into a validated ModelSet, or report every problem at once.

Order (docs/design/models.md#loading-order): discover files → parse → apply overrides → validate each model → drop
disabled models → check ids, dependencies, interval types and cycles → compile and trial-render every template.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from cbt.base.errors import ModelError, Problem
from cbt.base.yamldoc import SourceMap
from cbt.config.settings import Config, load_config
from cbt.models.checks import cycle_problems, dependency_problems, duplicate_ids, graph_nodes
from cbt.models.dag import ModelSet
from cbt.models.discovery import Kind, RawDoc, Root, discover, read_doc
from cbt.models.overrides import apply_overrides
from cbt.models.render import NotRenderable, command_argv, render_bounds_query, render_replace_where, render_statements
from cbt.models.rules import Built, Defaults, build
from cbt.models.spec import ExternalModel, IncrementalModel, Model, ModelId
from cbt.models.templates import RenderSettings, ScanContext, TaskContext, TemplateRenderError, compile_problem

_TABLE_LINE = re.compile(r"^table:\s*[\"']?([A-Za-z0-9_-]+)", re.MULTILINE)
_DATABASE_LINE = re.compile(r"^database:\s*[\"']?([A-Za-z0-9_-]+)", re.MULTILINE)
SAMPLE_TASK_START = 1_700_000_000
"""Trial renders use this as both the task's wall-clock start and the interval's first position."""


class ModelProblems(ModelError):
    """Every problem in the model files (and overrides); ``warnings`` are reported but not fatal."""

    def __init__(self, problems: list[Problem], warnings: Sequence[Problem] = ()) -> None:
        super().__init__(list(dict.fromkeys(problems)))
        self.warnings = list(warnings)


def load_models(config: Config) -> ModelSet:
    """The validated, enabled models of ``config``; raise ModelProblems listing every problem."""
    defaults = Defaults(config.models.external.default_database, config.models.transformations.default_database)
    files, problems = discover(model_roots(config))
    placeholders = {"external": defaults.external, "transformation": defaults.transformation}
    docs = [read_doc(path, kind, placeholders) for path, kind in files]
    problems += [p for doc in docs for p in doc.problems]
    parsed = [doc for doc in docs if doc.data is not None]
    outcome = apply_overrides(parsed, config, defaults)
    problems += outcome.problems
    built = [build(doc, defaults) for doc in parsed]
    problems += [p for result in built for p in result.problems]
    problems += duplicate_ids(built)
    nodes = graph_nodes(built, outcome.disabled)
    unreadable = {guess for doc in docs if doc.data is None and (guess := guess_id(doc, defaults)) is not None}
    problems += dependency_problems(nodes, unreadable, outcome.disabled)
    problems += cycle_problems(nodes)
    models, smaps = _enabled(built, set(outcome.disabled))
    problems += template_problems(models, smaps, RenderSettings.from_config(config))
    problems += syntax_problems([result.doc for result in built if result.model is None])
    if problems:
        raise ModelProblems(problems, outcome.warnings)
    return ModelSet(models, defaults.external, defaults.transformation, tuple(outcome.warnings))


def model_roots(config: Config) -> list[Root]:
    """The configured model paths (already absolute); ``where`` is set for paths the config names explicitly."""
    roots = []
    sections: tuple[tuple[Kind, str, list[str]], ...] = (
        ("external", "external", config.models.external.paths),
        ("transformation", "transformations", config.models.transformations.paths),
    )
    for kind, section, paths in sections:
        explicit = config.source.lines.get(("models", section, "paths"))
        for index, path in enumerate(paths):
            where = config.source.locate(("models", section, "paths", index)) if explicit else None
            roots.append(Root(path, kind, (where.path, where.line) if where else None))
    return roots


def _enabled(built: list[Built], disabled: set[ModelId]) -> tuple[dict[ModelId, Model], dict[ModelId, SourceMap]]:
    """Valid, enabled models whose id is defined once."""
    counts = Counter(result.model_id.lower() for result in built if result.model_id is not None)
    models: dict[ModelId, Model] = {}
    smaps: dict[ModelId, SourceMap] = {}
    for result in built:
        model = result.model
        if model is not None and model.id not in disabled and counts[model.id.lower()] == 1:
            models[model.id] = model
            smaps[model.id] = result.doc.smap
    return models, smaps


def guess_id(doc: RawDoc, defaults: Defaults) -> ModelId | None:
    """The id of a file whose YAML did not parse, read with a regex, so its dependents are not reported too."""
    table = _TABLE_LINE.search(doc.text)
    if table is None:
        return None
    database = _DATABASE_LINE.search(doc.text)
    default = defaults.external if doc.kind == "external" else defaults.transformation
    db = database.group(1) if database else default
    return f"{db}.{table.group(1)}" if db else None


def template_problems(
    models: dict[ModelId, Model], smaps: dict[ModelId, SourceMap], settings: RenderSettings
) -> list[Problem]:
    """Compile and trial-render every template with sample values, so undefined variables and syntax errors are
    found by ``cbt validate`` rather than by the first task."""
    problems: list[Problem] = []
    for model_id, model in sorted(models.items()):
        if model.exec is not None:
            try:
                command_argv(model)
            except NotRenderable as e:
                problems.append(smaps[model_id].problem(("exec",), str(e)))
            continue
        try:
            _trial_render(model, settings)
        except TemplateRenderError as e:
            problem = e.problem
            if problem.field == "write.replace_where":  # located at its key rather than at the model
                problem = smaps[model_id].problem(("write", "replace_where"), problem.message)
            problems.append(problem)
    return problems


def syntax_problems(docs: list[RawDoc]) -> list[Problem]:
    """Template syntax errors in files that failed other rules (valid models get a full trial render)."""
    problems = []
    for doc in docs:
        if doc.body is not None and doc.body.strip():
            problem = compile_problem(doc.body, doc.path, doc.body_line)
            if problem is not None:
                problems.append(problem)
    return problems


def _trial_render(model: Model, settings: RenderSettings) -> None:
    if isinstance(model, ExternalModel):
        render_bounds_query(model, ScanContext(), settings)
        render_bounds_query(model, ScanContext(True, SAMPLE_TASK_START, SAMPLE_TASK_START + 1), settings)
        return
    if isinstance(model, IncrementalModel):
        start = model.limits.min if model.limits.min is not None else SAMPLE_TASK_START
        task = TaskContext(model.id, SAMPLE_TASK_START, start, start + model.interval.max)
        render_statements(model, task, settings)
        if model.write.replace_where is not None:
            render_replace_where(model, task, settings)
        return
    render_statements(model, TaskContext(model.id, SAMPLE_TASK_START), settings)


def load_project(config_path: str | None = None) -> tuple[Config, ModelSet]:
    """Config and models together, as every service starts."""
    config = load_config(config_path)
    return config, load_models(config)
