"""What a worker runs for one task: the rendered SQL statements, or an exec command and its environment
(docs/design/models.md#exec-models).

Pure functions of the model, the task and the settings, so ``cbt render`` shows exactly what a worker will run.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Collection, Mapping

from cbt.base.errors import CbtError, Problem
from cbt.models.spec import ExternalModel, IncrementalModel, Model, Transformation, all_dependency_ids
from cbt.models.sqlsplit import SqlSplitError, split_sql
from cbt.models.templates import (
    RenderSettings,
    ScanContext,
    TaskContext,
    TemplateRenderError,
    build_context,
    render,
)

_SECRET = re.compile(r"(SECRET|PASSWORD|PASSWD|TOKEN|API_?KEY|PRIVATE|CREDENTIAL)", re.IGNORECASE)
_NON_WORD = re.compile(r"[^A-Za-z0-9]")


class NotRenderable(CbtError):
    """The model has no SQL to render (an exec model) or the task does not fit the model."""


def render_statements(model: Transformation, task: TaskContext, settings: RenderSettings) -> list[str]:
    """The SQL statements of a transformation for one task, split on top-level semicolons.

    For write strategies ``replace`` and ``append`` this is the SELECT the worker wraps into one Delta commit.
    """
    if model.sql is None:
        raise NotRenderable(f"{model.id} is an exec model; it has no SQL (see exec_environment)")
    _check_task(model, task)
    text = render(model.sql, build_context(model, settings, task), model.source.path, model.source.body_line)
    return _split(text, model)


def render_replace_where(model: IncrementalModel, task: TaskContext, settings: RenderSettings) -> str:
    """The rendered ``write.replace_where`` predicate (strategy ``replace``): the interval's rows of the target."""
    if model.write.replace_where is None:
        raise NotRenderable(f"{model.id} has no write.replace_where")
    context = build_context(model, settings, task)
    return render(model.write.replace_where, context, model.source.path, model.source.line, "write.replace_where")


def render_bounds_query(model: ExternalModel, scan: ScanContext, settings: RenderSettings) -> list[str]:
    """An external model's bounds query; the last statement returns one row with ``min`` and ``max``."""
    if model.sql is None:
        raise NotRenderable(f"{model.id} is an exec model; it has no SQL (see external_exec_environment)")
    text = render(model.sql, build_context(model, settings, scan=scan), model.source.path, model.source.body_line)
    return _split(text, model)


def _split(text: str, model: Model) -> list[str]:
    try:
        statements = split_sql(text)
    except SqlSplitError as e:
        line = model.source.body_line + e.line - 1
        raise TemplateRenderError(Problem(model.source.path, line, "sql", f"rendered SQL: {e}")) from e
    if not statements:
        raise TemplateRenderError(
            Problem(model.source.path, model.source.body_line, "sql", "the rendered SQL has no statements")
        )
    return statements


def _check_task(model: Transformation, task: TaskContext) -> None:
    if isinstance(model, IncrementalModel) and (task.start is None or task.end is None):
        raise NotRenderable(f"{model.id} is incremental: the task needs start and end positions")
    if task.start is not None and task.end is not None and task.end <= task.start:
        raise NotRenderable(f"the interval [{task.start}, {task.end}) is empty: end must be greater than start")


def env_key(model_id: str) -> str:
    """``ethereum.beacon-blocks`` → ``ETHEREUM_BEACON_BLOCKS`` (upper-case; anything but letters/digits → ``_``)."""
    return _NON_WORD.sub("_", model_id).upper()


def exec_environment(model: Transformation, task: TaskContext, settings: RenderSettings) -> dict[str, str]:
    """The variables an exec transformation gets on top of the worker's own environment, in the order of
    docs/design/models.md#exec-models: Spark, bounds (incremental), task, self, dependencies, then global env, then
    model env."""
    _check_task(model, task)
    env = _spark_env(settings)
    if isinstance(model, IncrementalModel):
        env["BOUNDS_START"] = str(task.start)
        env["BOUNDS_END"] = str(task.end)
    env["TASK_ID"] = task.task_id
    env["TASK_START"] = str(task.task_start_unix)
    env["TASK_MODEL"] = model.id
    if isinstance(model, IncrementalModel):
        env["TASK_INTERVAL"] = str(task.interval)
    env["TASK_DIRECTION"] = task.direction
    env["TASK_ATTEMPT"] = str(task.attempt)
    env.update(_self_env(model))
    for dep_id in dict.fromkeys(all_dependency_ids(model)):
        database, table = dep_id.split(".", 1)
        env[f"DEP_{env_key(dep_id)}_DATABASE"] = database
        env[f"DEP_{env_key(dep_id)}_TABLE"] = table
    return {**env, **settings.env, **model.env}


def external_exec_environment(model: ExternalModel, scan: ScanContext, settings: RenderSettings) -> dict[str, str]:
    """The variables an external model's bounds command gets; it prints ``{"min": …, "max": …}``."""
    env = _spark_env(settings)
    env.update(_self_env(model))
    env["CACHE_IS_INCREMENTAL_SCAN"] = "true" if scan.is_incremental_scan else "false"
    if scan.previous_min is not None:
        env["CACHE_PREVIOUS_MIN"] = str(scan.previous_min)
    if scan.previous_max is not None:
        env["CACHE_PREVIOUS_MAX"] = str(scan.previous_max)
    return {**env, **settings.env, **model.env}


def _spark_env(settings: RenderSettings) -> dict[str, str]:
    env: dict[str, str] = {}
    if settings.spark_remote:
        env["SPARK_REMOTE"] = settings.spark_remote
    if settings.spark_master:
        env["SPARK_MASTER"] = settings.spark_master
    if settings.spark_conf:
        env["SPARK_CONF_JSON"] = json.dumps(dict(settings.spark_conf), sort_keys=True)
    return env


def _self_env(model: Model) -> dict[str, str]:
    return {"SELF_DATABASE": model.database, "SELF_TABLE": model.table}


def exec_argv(command: str) -> list[str]:
    """The argv of an exec command (shell-style quoting, no shell). Run it from the config file's folder."""
    try:
        argv = shlex.split(command)
    except ValueError as e:
        raise NotRenderable(f"exec command {command!r} does not parse: {e}") from e
    if not argv:
        raise NotRenderable("exec command is empty")
    return argv


def command_argv(model: Model) -> list[str]:
    """The argv an exec model runs: ``sh -c COMMAND`` with ``exec.shell`` (pipes, ``&&``, ``$VAR``, as CBT ran every
    command), else the command split shell-style and run without a shell."""
    if model.exec is None:
        raise NotRenderable(f"{model.id} is a SQL model; it has no command")
    if model.exec_options.shell:
        if not model.exec.strip():
            raise NotRenderable("exec command is empty")
        return ["sh", "-c", model.exec]
    return exec_argv(model.exec)


def is_secret_name(name: str) -> bool:
    """Whether a variable's value must not be logged or printed (tokens, passwords, keys)."""
    return bool(_SECRET.search(name))


REDACTED = "***"
ALWAYS_REDACTED = frozenset({"SPARK_CONF_JSON"})
"""Variables never shown: Spark's settings carry object-store credentials under names of Hadoop's choosing."""
_URL_PASSWORD = re.compile(r"(://[^:/?#@\s]*:)([^@/\s]+)(@)")
_TOKEN_PARAMETER = re.compile(r"(;token=|;authorization=(?:bearer(?:%20|\s)+)?)([^;\s]+)", re.IGNORECASE)
"""A Spark Connect token in a URL: ``;token=…``, or the header ``;authorization=Bearer%20…`` that a client sends
without TLS (the Connect server has none: deploy/docker/spark/entrypoint.sh)."""
MIN_SECRET_LENGTH = 4
"""Shorter values of secret variables are not searched for elsewhere (``1`` would hide every digit)."""


def secret_values(env: Mapping[str, str]) -> set[str]:
    """The values of the secret-named variables of ``env`` (long enough to search for)."""
    return {v for k, v in env.items() if is_secret_name(k) and len(v) >= MIN_SECRET_LENGTH}


def redact_text(text: str, secrets: Collection[str]) -> str:
    """``text`` with every secret value, URL password and Spark Connect token replaced by ``***``."""
    for secret in sorted(secrets, key=len, reverse=True):  # the longest first: one may contain another
        text = text.replace(secret, REDACTED)
    text = _URL_PASSWORD.sub(rf"\g<1>{REDACTED}\g<3>", text)
    return _TOKEN_PARAMETER.sub(rf"\g<1>{REDACTED}", text)


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    """The environment for logs and the API: secret-named variables and Spark's settings as ``***``; in the others,
    the secrets' values, URL passwords and Spark Connect tokens as ``***``."""
    secrets = secret_values(env)
    return {k: REDACTED if is_secret_name(k) or k in ALWAYS_REDACTED else redact_text(v, secrets)
            for k, v in env.items()}
