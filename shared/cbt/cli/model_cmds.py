"""``cbt validate``, ``cbt dag``, ``cbt render`` and ``cbt ddl``: the model files as the user sees them."""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cbt.base.errors import CbtError, Problem
from cbt.models.batch_choice import batch_choice
from cbt.models.dag import ModelSet
from cbt.models.dagformat import FORMATS, format_dag
from cbt.models.spec import ExternalModel, IncrementalModel, Model, Transformation, model_kind

# Config, loader and templates (pydantic, jinja2) are imported by the command that runs, not to build the parser.
if TYPE_CHECKING:
    from cbt.config.settings import Config
    from cbt.models.templates import RenderSettings, TaskContext


class UsageError(CbtError):
    """The command line does not fit the model (e.g. no --start for an incremental model)."""


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("validate", help="check the config and every model file (problems as path:line)",
                       description="Checks the config and every model file; exits 1 listing every problem as "
                       "path:line: field: problem.")
    _config_arg(p)
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("dag", help="print the model dependency graph",
                       description="Prints the models' dependency graph: as text, JSON, Mermaid or Graphviz dot.")
    _config_arg(p)
    p.add_argument("--format", choices=FORMATS, default="text", help="output format (default: text)")
    p.set_defaults(func=cmd_dag)

    p = sub.add_parser("render", help="print exactly what a worker runs for one task of MODEL",
                       description="Prints the SQL (or the command and environment) a worker runs for one task of "
                       "MODEL over [--start, --end); with --step, a batch of intervals of STEP positions. "
                       "--explain-batching prints each model's batch mode for a backlog, and why.")
    _config_arg(p)
    p.add_argument("model", metavar="MODEL", nargs="?",
                   help="database.table (or a unique table name); optional with --explain-batching")
    p.add_argument("--explain-batching", action="store_true",
                   help="print the batch mode MODEL (or every incremental model) gets for a backlog, and why")
    p.add_argument("--start", type=int, help="first position of the interval (incremental models)")
    p.add_argument("--end", type=int, help="end position, exclusive (incremental models)")
    p.add_argument("--direction", choices=("forward", "backfill", "rerun"), default="forward")
    p.add_argument("--attempt", type=int, default=1)
    p.add_argument("--step", type=int, help="render a batch: [start, end) as intervals of STEP positions in one run "
                                            "(as a worker does for a backlog, by the model's batch mode)")
    p.add_argument("--task-start", type=int, help="task wall-clock start, unix seconds (default: now)")
    p.add_argument("--scan", choices=("full", "incremental"), default="full", help="external models: scan kind")
    p.add_argument("--previous-min", type=int, help="external models: previously known min (incremental scan)")
    p.add_argument("--previous-max", type=int, help="external models: previously known max (incremental scan)")
    p.add_argument("--show-secrets", action="store_true", help="exec models: print secret-looking values")
    p.set_defaults(func=cmd_render)


    p = sub.add_parser("ddl", help="print the DDL that fits each model's table to its query",
                       description="Prints the statements that make each model's table fit its query — its "
                       "creation, the columns a change added, or nothing — which a worker runs before the model's "
                       "first task. A model whose author writes its own statements (write.strategy sql, scheduled, "
                       "exec) is created by models/ddl.")
    _config_arg(p)
    p.add_argument("model", metavar="MODEL", nargs="?", help="database.table (or a unique table name); default: all")
    p.set_defaults(func=cmd_ddl)


def _config_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", metavar="FILE", help="config file (default: $CBT_CONFIG or ./config.yaml)")


def _print_problems(problems: Sequence[Problem], warnings: Sequence[Problem]) -> None:
    _print_warnings(warnings)
    for problem in problems:
        print(problem)
    count = len(problems)
    print(f"{count} problem{'s' if count != 1 else ''} found", file=sys.stderr)


def _print_warnings(warnings: Sequence[Problem]) -> None:
    for w in warnings:
        print(f"{w.path}:{w.line}: {w.field}: warning: {w.message}", file=sys.stderr)


def _load(args: argparse.Namespace) -> tuple[Config, ModelSet] | None:
    """Config and models, or None after printing every problem."""
    from cbt.config.settings import ConfigProblems, load_config
    from cbt.models.loader import ModelProblems, load_models

    try:
        config = load_config(args.config)
    except ConfigProblems as e:
        _print_problems(e.problems, [])
        return None
    _print_warnings(config.warnings)  # (the original CBT's keys, accepted but meaning nothing here)
    try:
        return config, load_models(config)
    except ModelProblems as e:
        _print_problems(e.problems, e.warnings)
        return None
    except CbtError:
        raise
    except Exception as e:  # a bug of ours must still not show the user a traceback
        raise CbtError(f"internal error while loading models: {type(e).__name__}: {e}") from e


def cmd_validate(args: argparse.Namespace) -> int:
    loaded = _load(args)
    if loaded is None:
        return 1
    _, models = loaded
    _print_warnings(models.warnings)
    counts = {
        kind: sum(1 for m in models if model_kind(m) == kind) for kind in ("external", "incremental", "scheduled")
    }
    detail = ", ".join(f"{n} {kind}" for kind, n in counts.items())
    print(f"ok: {len(models)} models ({detail})")
    for line in _bounds_methods(loaded[0], models):
        print(line)
    return 0


def _bounds_methods(config: Config, models: ModelSet) -> list[str]:
    """How each SQL external's bounds are found: from the Delta log, or by a Spark scan and why."""
    from cbt.models.log_bounds import SparkOnly, log_bounds_plan
    from cbt.models.render import render_bounds_query
    from cbt.models.templates import RenderSettings, ScanContext

    settings = RenderSettings.from_config(config)
    lines = []
    for model in sorted(models.externals, key=lambda m: m.id):
        if model.exec is not None:
            continue
        if config.warehouse() is None:
            lines.append(f"bounds of {model.id}: a Spark scan (spark.warehouse is not set)")
            continue
        plan = log_bounds_plan(render_bounds_query(model, ScanContext(), settings), model.database, model.table)
        lines.append(f"bounds of {model.id}: a Spark scan: {plan.reason}" if isinstance(plan, SparkOnly)
                     else f"bounds of {model.id}: from the Delta log ({plan.column}'s file statistics)")
    return lines


def cmd_ddl(args: argparse.Namespace) -> int:
    """Per transformation: the table's creation, the columns to add, nothing (it fits), or that its author's own
    statements create it (``models/ddl``)."""
    from cbt.adapters.spark import connect
    from cbt.adapters.target_tables import statements_for
    from cbt.models.target_tables import owns_table
    from cbt.models.templates import RenderSettings

    loaded = _load(args)
    if loaded is None:
        return 1
    config, models = loaded
    chosen = [models.get(models.resolve(args.model))] if args.model else [*models.incrementals, *models.scheduled]
    if any(isinstance(m, ExternalModel) for m in chosen):
        raise UsageError(f"{args.model} is an external model: its table is not the product's")
    if not config.spark.remote:
        raise CbtError("cbt ddl asks Spark to analyse each query: set spark.remote (cbt dev up starts one)")
    spark = connect(config.spark.remote)
    settings = RenderSettings.from_config(config)
    for model in chosen:
        if not isinstance(model, IncrementalModel) or not owns_table(model):
            print(f"-- {model.id}: created by its author's statements (models/ddl): {_why_not_owned(model)}")
            continue
        statements, differences = statements_for(spark, model, settings)
        if not statements and not differences:
            print(f"-- {model.id}: its table fits its query")
        for difference in differences:
            print(f"-- {model.id}: {difference} (rows are written by position; nothing altered)")
        for statement in statements:
            print(f"{statement};")
    return 0


def _why_not_owned(model: Model) -> str:
    if model.exec is not None:
        return "an exec model"
    return "write.strategy sql" if isinstance(model, IncrementalModel) else "a scheduled model"


def cmd_dag(args: argparse.Namespace) -> int:
    loaded = _load(args)
    if loaded is None:
        return 1
    print(format_dag(loaded[1], args.format))
    return 0


def cmd_render(args: argparse.Namespace) -> int:
    from cbt.models.templates import RenderSettings

    loaded = _load(args)
    if loaded is None:
        return 1
    config, models = loaded
    if args.explain_batching:
        print(_explain_batching(models, args.model))
        return 0
    if args.model is None:
        raise UsageError("give MODEL (database.table or a unique table name)")
    model = models.get(models.resolve(args.model))
    settings = RenderSettings.from_config(config)
    if isinstance(model, ExternalModel):
        print(_render_external(model, args, settings, config))
        return 0
    task = _task_for(model, args)
    if model.exec is not None:
        print(_render_exec(model, task, settings, config, args.show_secrets))
    else:
        print(_render_sql(model, task, settings))
    return 0


def _task_for(model: Transformation, args: argparse.Namespace) -> TaskContext:
    from cbt.models.templates import TaskContext

    task_start = args.task_start if args.task_start is not None else int(time.time())
    if isinstance(model, IncrementalModel):
        if args.start is None or args.end is None:
            raise UsageError(f"{model.id} is incremental: give --start and --end (positions, end exclusive)")
        if args.end <= args.start:
            raise UsageError(f"--end ({args.end}) must be greater than --start ({args.start})")
        if args.step is not None and (args.step <= 0 or (args.end - args.start) % args.step):
            raise UsageError(f"--step ({args.step}) must be positive and divide --end minus --start "
                             f"({args.end - args.start})")
        return TaskContext(model.id, task_start, args.start, args.end, args.direction, args.attempt, args.step)
    if args.start is not None or args.end is not None:
        raise UsageError(f"{model.id} is scheduled: it has no interval; use --task-start for the run time")
    return TaskContext(model.id, task_start, direction=args.direction, attempt=args.attempt)


def _task_line(model: Transformation, task: TaskContext) -> str:
    where = f" [{task.start}, {task.end})" if task.start is not None else ""
    return f"task {task.task_id}{where}, direction {task.direction}, attempt {task.attempt}"


_BATCH_MODES = {
    "union": "every interval's SELECT in one write (replace: under one REPLACE WHERE of the intervals' predicates; "
             "append: one MERGE of each key's rows from the first run that has it)",
    "bounds": "one run over the whole range",
    "off": "each interval's statements in turn",
}


def _batch_header(model: IncrementalModel, task: TaskContext) -> list[str]:
    choice = batch_choice(model)
    assert task.start is not None and task.step is not None
    mode = choice.mode
    line = f"-- a batch of {len(task.intervals())} intervals of {task.step}, batch mode {mode}"
    if mode == "bounds" and not choice.runs_whole(task.start, task.step):
        mode = "union"
        line += f", but its intervals do not start at a multiple of {choice.align}: as union"
    return [f"{line}: {_BATCH_MODES[mode]}", f"-- why {choice.mode}: {choice.reason}"]


def _explain_batching(models: ModelSet, name: str | None) -> str:
    """Each incremental model's batch mode and why; for a declared mode, also what ``auto`` would choose."""
    from dataclasses import replace

    from cbt.models.spec import Batch

    chosen = [models.get(models.resolve(name))] if name is not None else list(models)
    lines = []
    for model in sorted((m for m in chosen if isinstance(m, IncrementalModel)), key=lambda m: m.id):
        choice = batch_choice(model)
        lines.append(f"{model.id}: {choice.mode} — {choice.reason}")
        if choice.is_declared:
            auto = batch_choice(replace(model, batch=Batch("auto", model.batch.max_intervals)))
            lines.append(f"  (auto would choose {auto.mode} — {auto.reason})")
    if not lines:
        return f"{name}: not an incremental model; only incremental models run backlogs in batches"
    return "\n".join(lines)


def _render_sql(model: Transformation, task: TaskContext, settings: RenderSettings) -> str:
    """The statements exactly as the worker runs them: the write strategy's wrapping included."""
    from cbt.models.writes import task_statements

    statements = task_statements(model, task, settings)
    header = [f"-- model {model.id} ({model_kind(model)}), {_task_line(model, task)}"]
    if isinstance(model, IncrementalModel) and model.write.strategy == "replace":
        header.append("-- write strategy replace: the body's SELECT replaces the interval's rows in one Delta commit")
    elif isinstance(model, IncrementalModel) and model.write.strategy == "append":
        keys = ", ".join(model.write.unique_key)
        header.append(f"-- write strategy append: rows whose ({keys}) already exists are not inserted again")
    else:
        header.append("-- write strategy sql: the statements run in order as written")
    if isinstance(model, IncrementalModel) and task.is_batch:
        header += _batch_header(model, task)
    return "\n".join(header) + "\n" + "\n\n".join(s + ";" for s in statements)


def _render_exec(
    model: Transformation, task: TaskContext, settings: RenderSettings, config: Config, show_secrets: bool
) -> str:
    from cbt.models.render import command_argv, exec_environment, redact_env

    assert model.exec is not None
    env = exec_environment(model, task, settings)
    shown = env if show_secrets else redact_env(env)
    lines = [
        f"# model {model.id} ({model_kind(model)}, exec), {_task_line(model, task)}",
        f"# working directory: {config.base_dir}",
        f"# command: {shlex.join(command_argv(model))}",
        "# environment (added to the worker's own):",
    ]
    lines += [f"{name}={shlex.quote(value)}" for name, value in shown.items()]
    return "\n".join(lines)


def _render_external(model: ExternalModel, args: argparse.Namespace, settings: RenderSettings, config: Config) -> str:
    from cbt.models.render import command_argv, external_exec_environment, redact_env, render_bounds_query
    from cbt.models.templates import ScanContext

    if args.start is not None or args.end is not None:
        raise UsageError(f"{model.id} is external: use --scan, --previous-min and --previous-max, not --start/--end")
    is_incremental = args.scan == "incremental"
    if is_incremental and (args.previous_min is None or args.previous_max is None):
        raise UsageError("--scan incremental needs --previous-min and --previous-max")
    scan = ScanContext(is_incremental, args.previous_min, args.previous_max)
    header = f"model {model.id} (external), {args.scan} bounds scan"
    if model.exec is not None:
        env = external_exec_environment(model, scan, settings)
        shown = env if args.show_secrets else redact_env(env)
        lines = [
            f"# {header}",
            f"# working directory: {config.base_dir}",
            f"# command: {shlex.join(command_argv(model))}",
            "# environment (added to the worker's own):",
        ]
        return "\n".join(lines + [f"{k}={shlex.quote(v)}" for k, v in shown.items()])
    statements = render_bounds_query(model, scan, settings)
    return f"-- {header}\n" + "\n\n".join(s + ";" for s in statements)
