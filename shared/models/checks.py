"""Rules across models (SPEC §4.2): unique ids, dependencies exist, matching interval types, no cycles."""

from __future__ import annotations

import difflib
from collections.abc import Mapping

from cbt.errors import Problem
from cbt.models.dag import find_cycles
from cbt.models.discovery import UNSET_DATABASE
from cbt.models.rules import Built
from cbt.models.spec import ExternalModel, IncrementalModel, Model, ModelId, all_dependency_ids, dependency_ids
from cbt.models.yamldoc import SourceMap

_UNSET = tuple(f"{db}." for db in UNSET_DATABASE.values())


def duplicate_ids(built: list[tuple[Built, SourceMap]]) -> list[Problem]:
    """Each definition of an id defined more than once names the other definitions."""
    by_id: dict[str, list[tuple[str, int]]] = {}
    for result, smap in built:
        if result.model_id is not None:
            by_id.setdefault(result.model_id, []).append((smap.path, result.line))
    problems = []
    for model_id, places in by_id.items():
        for path, line in places if len(places) > 1 else []:
            others = ", ".join(f"{p}:{n}" for p, n in places if (p, n) != (path, line))
            problems.append(Problem(path, line, "table", f"model {model_id} is also defined at {others}"))
    return problems


def dependency_problems(
    models: Mapping[ModelId, Model],
    smaps: Mapping[ModelId, SourceMap],
    known: set[ModelId],
    disabled: Mapping[ModelId, tuple[str, int]],
) -> list[Problem]:
    """Missing dependencies and interval-type mismatches, at each dependency's own line.

    ``known`` holds ids whose files have problems of their own: depending on them is not reported again.
    """
    problems: list[Problem] = []
    for model_id, model in sorted(models.items()):
        if isinstance(model, ExternalModel):
            continue
        smap = smaps[model_id]
        for index, dep in enumerate(model.dependencies):
            members = dependency_ids(dep)
            for j, member in enumerate(members):
                loc = ("dependencies", index, j) if isinstance(dep, tuple) else ("dependencies", index)
                message = _dependency_message(model, member, models, known, disabled)
                if message:
                    problems.append(smap.problem(loc, message))
    return problems


def _dependency_message(
    model: Model,
    dep_id: ModelId,
    models: Mapping[ModelId, Model],
    known: set[ModelId],
    disabled: Mapping[ModelId, tuple[str, int]],
) -> str | None:
    if dep_id in disabled:
        path, line = disabled[dep_id]
        return f"depends on {dep_id}, which is disabled by the override at {path}:{line}"
    dep = models.get(dep_id)
    if dep is None:
        if dep_id in known or dep_id.startswith(_UNSET):
            return None
        close = difflib.get_close_matches(dep_id, list(models), n=1, cutoff=0.8)
        hint = f" (did you mean {close[0]}?)" if close else ""
        return f"model {dep_id} does not exist{hint}"
    if isinstance(model, IncrementalModel):
        dep_type = _interval_type(dep)
        if dep_type is not None and dep_type != model.interval.type:
            return (
                f"{dep_id} has interval.type {dep_type!r} but this model has {model.interval.type!r}; "
                "an incremental model's interval.type must equal its incremental and external dependencies'"
            )
    return None


def _interval_type(model: Model) -> str | None:
    if isinstance(model, ExternalModel):
        return model.interval_type
    return model.interval.type if isinstance(model, IncrementalModel) else None


def cycle_problems(models: Mapping[ModelId, Model], smaps: Mapping[ModelId, SourceMap]) -> list[Problem]:
    """One problem per cycle, at the dependency that starts it, printing the whole cycle (``a → b → a``)."""
    graph = {m: all_dependency_ids(model) for m, model in models.items()}
    problems = []
    for cycle in find_cycles(graph):
        first = models[cycle[0]]
        deps = () if isinstance(first, ExternalModel) else first.dependencies
        index = next((i for i, dep in enumerate(deps) if cycle[1] in dependency_ids(dep)), None)
        loc = ("dependencies",) if index is None else ("dependencies", index)
        problems.append(smaps[cycle[0]].problem(loc, "dependency cycle: " + " → ".join(cycle), "dependencies"))
    return problems
