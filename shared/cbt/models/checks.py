"""Rules across models (docs/design/models.md#rules-across-models): unique ids, dependencies exist, matching interval
types, no cycles."""

from __future__ import annotations

import difflib
from collections.abc import Mapping

from cbt.base.errors import Problem
from cbt.models.dag import find_cycles
from cbt.models.discovery import UNSET_DATABASE
from cbt.models.rules import Built
from cbt.models.spec import ModelId, dependency_ids

_UNSET = tuple(f"{db}." for db in UNSET_DATABASE.values())


def duplicate_ids(built: list[Built]) -> list[Problem]:
    """Each definition of an id defined more than once names the other definitions."""
    by_id: dict[str, list[tuple[str, int, str]]] = {}
    for result in built:
        if result.model_id is not None:  # Spark resolves table names case-insensitively
            by_id.setdefault(result.model_id.lower(), []).append((result.doc.path, result.line, result.model_id))
    problems = []
    for places in by_id.values():
        for path, line, model_id in places if len(places) > 1 else []:
            others = ", ".join(f"{p}:{n}" for p, n, _ in places if (p, n) != (path, line))
            problems.append(Problem(path, line, "table", f"model {model_id} is also defined at {others}"))
    return problems


def graph_nodes(built: list[Built], disabled: Mapping[ModelId, tuple[str, int]]) -> dict[ModelId, Built]:
    """One node per id (its first definition), enabled models only, whether or not the file has problems."""
    nodes: dict[ModelId, Built] = {}
    for result in built:
        if result.model_id is not None and result.model_id not in disabled:
            nodes.setdefault(result.model_id, result)
    return nodes


def dependency_problems(
    nodes: Mapping[ModelId, Built], unreadable: set[ModelId], disabled: Mapping[ModelId, tuple[str, int]]
) -> list[Problem]:
    """Missing dependencies and interval-type mismatches, at each dependency's own line.

    ``unreadable`` holds ids guessed from files that did not parse: depending on them is not reported again.
    """
    problems: list[Problem] = []
    for _, node in sorted(nodes.items()):
        for index, dep in enumerate(node.dependencies):
            for j, member in enumerate(dependency_ids(dep)):
                loc = ("dependencies", index, j) if isinstance(dep, tuple) else ("dependencies", index)
                message = _dependency_message(node, member, nodes, unreadable, disabled)
                if message:
                    problems.append(node.doc.smap.problem(loc, message))
    return problems


def _dependency_message(
    node: Built,
    dep_id: ModelId,
    nodes: Mapping[ModelId, Built],
    unreadable: set[ModelId],
    disabled: Mapping[ModelId, tuple[str, int]],
) -> str | None:
    if dep_id in disabled:
        path, line = disabled[dep_id]
        return f"depends on {dep_id}, which is disabled by the override at {path}:{line}"
    dep = nodes.get(dep_id)
    if dep is None:
        if dep_id in unreadable or dep_id.startswith(_UNSET):
            return None
        same_case = [m for m in nodes if m.lower() == dep_id.lower()]
        close = same_case or difflib.get_close_matches(dep_id, list(nodes), n=1, cutoff=0.8)
        hint = f" (did you mean {close[0]}?)" if close else ""
        return f"model {dep_id} does not exist{hint}"
    if dep is node:
        return "a model cannot depend on itself"
    positional = ("external", "incremental")
    if node.kind != "incremental" or dep.kind not in positional or not node.interval_type or not dep.interval_type:
        return None
    if dep.interval_type != node.interval_type:
        return (
            f"{dep_id} has interval.type {dep.interval_type!r} but this model has {node.interval_type!r}; "
            "an incremental model's interval.type must equal its incremental and external dependencies'"
        )
    return None


def cycle_problems(nodes: Mapping[ModelId, Built]) -> list[Problem]:
    """One problem per cycle, at the dependency that starts it, printing the whole cycle (``a → b → a``)."""
    graph = {m: tuple(x for d in node.dependencies for x in dependency_ids(d) if x != m) for m, node in nodes.items()}
    problems = []
    for cycle in find_cycles(graph):
        first = nodes[cycle[0]]
        index = next((i for i, dep in enumerate(first.dependencies) if cycle[1] in dependency_ids(dep)), None)
        loc = ("dependencies",) if index is None else ("dependencies", index)
        problems.append(first.doc.smap.problem(loc, "dependency cycle: " + " → ".join(cycle), "dependencies"))
    return problems
