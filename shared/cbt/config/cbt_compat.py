"""The original CBT's config keys (Go + ClickHouse) that mean nothing here: accepted, with one warning each.

A CBT user's ``config.yaml`` must load as it is: each key CBT knows and this project does not is set aside before
validation, with a warning (``path:line: key: warning``) naming what replaces it here, or saying that it has no
effect. Keys CBT shares with us (``metricsAddr``, ``healthCheckAddr``, ``redis.url``, ``worker.concurrency``,
``models.*.defaultDatabase``…) are ordinary aliases of ``cbt.config.settings`` and need nothing here. A key neither
system knows stays an error. ``cbt import-cbt`` converts a CBT project for good; this only keeps its config loading.

The keys are CBT's ``engine.Config`` (pkg/engine/config.go) and the sections it embeds.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from cbt.base.errors import Problem
from cbt.base.yamldoc import SourceMap


@dataclass(frozen=True)
class CbtKey:
    """A key of CBT's config: where it sits (its spellings at the last level) and what to do instead here."""

    section: tuple[str, ...]
    names: tuple[str, ...]
    instead: str


CBT_KEYS = (
    CbtKey(
        (),
        ("clickhouse",),
        "CBT's ClickHouse connection has no effect here: models run on Spark (spark.remote), the admin tables "
        "are the admin section (Delta), the query timeout is spark.query_timeout",
    ),
    CbtKey(
        (),
        ("frontend",),
        "has no effect here: the api service serves the API and its web UI at api.addr; it runs when its "
        "service runs (cbt run api)",
    ),
    CbtKey(
        (),
        ("management",),
        "has no effect here: the api's mutating routes are always served and need a bearer token from "
        "api.auth.tokens (GitHub login is not supported)",
    ),
    CbtKey(
        (),
        ("pprofAddr", "pprof_addr"),
        "has no effect here: no profiling server is served (attach py-spy to a process instead)",
    ),
    CbtKey(
        ("scheduler",),
        ("concurrency",),
        "has no effect here: each tick plans every model in one pass; the tasks in flight per model are "
        "capped by worker.model_concurrency",
    ),
    CbtKey(
        ("scheduler",),
        ("shutdownTimeout", "shutdown_timeout"),
        "has no effect here: worker.shutdown_timeout bounds every service's shutdown",
    ),
    CbtKey(
        ("worker",),
        ("tags",),
        "has no effect here: route models to pools with worker.pools (tag selectors) and choose the pools this "
        "worker consumes with worker.consume; without them a worker takes every model",
    ),
    CbtKey(
        ("models", "external"),
        ("defaultCluster", "default_cluster"),
        "has no effect here: there are no ClickHouse clusters; Spark reads tables by database and name",
    ),
    CbtKey(
        ("api",),
        ("enabled",),
        "has no effect here: the api runs when its service runs (cbt run api, or cbt --config FILE)",
    ),
)


def expand_shorthands(data: dict[str, Any]) -> dict[str, Any]:
    """CBT's ``logging: info`` as ``logging: {level: info}``, before environment overrides, so that
    ``CBT__LOGGING__LEVEL`` can still set the level of a config written that way."""
    logging = data.get("logging")
    return {**data, "logging": {"level": logging}} if isinstance(logging, str) else data


def set_aside(data: dict[str, Any], smap: SourceMap) -> tuple[dict[str, Any], list[Problem]]:
    """``data`` without CBT's keys, and one warning per key found (at its line)."""
    out = dict(data)
    warnings = []
    for key in CBT_KEYS:
        parent = _section(out, key.section)
        if parent is None:
            continue
        for name in key.names:
            if name in parent:
                loc = (*key.section, name)
                warnings.append(smap.problem(loc, key.instead))
                out = _without(out, loc)
    return out, sorted(warnings, key=lambda w: w.line)


def _section(data: Mapping[str, Any], path: tuple[str, ...]) -> Mapping[str, Any] | None:
    node: Any = data
    for part in path:
        node = node.get(part) if isinstance(node, Mapping) else None
    return node if isinstance(node, Mapping) else None


def _without(data: Mapping[str, Any], loc: tuple[str, ...]) -> dict[str, Any]:
    """A copy of ``data`` without the key at ``loc`` (the sections on the way copied, the rest shared)."""
    head, *rest = loc
    if not rest:
        return {k: v for k, v in data.items() if k != head}
    return {**data, head: _without(data[head], tuple(rest))}


def suggest_cbt_keys(problems: Sequence[Problem]) -> list[Problem]:
    """An unknown key close to one of CBT's that has no closer match of ours gets a "did you mean" naming it."""
    out = []
    for problem in problems:
        section, _, name = problem.field.rpartition(".")
        known = [n for key in CBT_KEYS if ".".join(key.section) == section for n in key.names]
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        if problem.message.startswith("unknown field") and "did you mean" not in problem.message and close:
            problem = replace(
                problem,
                message=f"unknown field (did you mean '{close[0]}', a key of the original "
                "CBT's accepted here with a warning?)",
            )
        out.append(problem)
    return out
