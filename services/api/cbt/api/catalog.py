"""The models as the API lists them: filters, a one-line health summary, the validated configuration, the DAG with
ranks and a status per node. Pure functions over the model specs and a state snapshot (``cbt.scheduling.status`` for
the numbers, so the API, ``cbt status`` and the gauges agree)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from cbt.models.batch_choice import batch_choice
from cbt.models.dag import ModelSet
from cbt.models.render import redact_env
from cbt.models.spec import (
    Dependency,
    ExternalModel,
    IncrementalModel,
    Model,
    ModelId,
    ScheduledModel,
    is_time_type,
    model_kind,
)
from cbt.scheduling import bounds as bnd
from cbt.scheduling import coverage as cov
from cbt.scheduling.coverage import Range
from cbt.scheduling.snapshot import StateSnapshot
from cbt.scheduling.status import model_status

NodeStatus = Literal["ok", "lagging", "failing", "waiting", "external", "scheduled"]


@dataclass(frozen=True)
class Summary:
    """``covered``: the coverage's span (an external: its data after lag); ``in_flight`` and ``failed`` count tasks
    (``failed``: in the failure log, i.e. failed their last attempt and not completed since); ``skipped``: the span
    of the ranges an operator skipped."""

    valid_range: Range | None
    covered: Range | None
    gaps: int
    in_flight: int
    failed: int
    lag: int | None
    lag_seconds: int | None
    skipped: Range | None = None


def matches(model: Model, kind: str | None, database: str | None, tag: str | None, search: str | None) -> bool:
    """Whether ``model`` passes every filter given (``search``: case-insensitive part of its id; ``kind``
    ``transformation``: incremental or scheduled, as CBT's filter)."""
    tags = () if isinstance(model, ExternalModel) else model.tags
    own = model_kind(model)
    is_kind = kind is None or own == kind or (kind == "transformation" and own != "external")
    return (is_kind and (database is None or model.database == database)
            and (tag is None or tag in tags) and (search is None or search.lower() in model.id.lower()))


def interval_type(model: Model) -> str | None:
    if isinstance(model, ExternalModel):
        return model.interval_type
    return model.interval.type if isinstance(model, IncrementalModel) else None


def summarize(model: Model, models: ModelSet, state: StateSnapshot, failed: int) -> Summary:
    """One model's health in ``state``."""
    running = len(state.in_flight.get(model.id, ()))
    if isinstance(model, ExternalModel):
        data = bnd.external_range(state.bounds.get(model.id), model.lag)
        return Summary(data, data, 0, 0, 0, None, None)
    if isinstance(model, ScheduledModel):
        return Summary(None, None, 0, running, failed, None, None)
    status = model_status(model, models.models, state)
    seconds = status.lag if status.lag is not None and is_time_type(model.interval.type) else None
    return Summary(status.valid, cov.span(status.coverage), len(status.gaps), len(status.in_flight), failed,
                   status.lag, seconds, cov.span(state.skipped.get(model.id, cov.EMPTY)))


def node_status(model: Model, summary: Summary) -> NodeStatus:
    """``failing``: tasks in the failure log; ``waiting``: no valid range; ``lagging``: gaps, or at least a whole
    interval behind the valid range's end; else ``ok``. Externals and scheduled models are their kind (a scheduled
    model with failures is ``failing``)."""
    if summary.failed:
        return "failing"
    if isinstance(model, ExternalModel):
        return "external"
    if isinstance(model, ScheduledModel):
        return "scheduled"
    if summary.valid_range is None:
        return "waiting"
    if summary.gaps or (summary.lag or 0) >= model.interval.max:
        return "lagging"
    return "ok"


def dependencies(model: Model) -> list[str | list[str]]:
    """Declared dependencies: an id (required) or a list of ids (an OR group)."""
    if isinstance(model, ExternalModel):
        return []
    return [_dependency(dep) for dep in model.dependencies]


def _dependency(dep: Dependency) -> str | list[str]:
    return dep if isinstance(dep, str) else list(dep)


def flat_dependencies(model: Model) -> list[ModelId]:
    out: list[ModelId] = []
    for dep in dependencies(model):
        out += [dep] if isinstance(dep, str) else dep
    return list(dict.fromkeys(out))


def relative_path(path: str, base_dir: Path) -> str:
    """A model file's path relative to the config's folder when it is under it."""
    try:
        return str(Path(path).resolve().relative_to(base_dir.resolve()))
    except ValueError:
        return path


def config_of(model: Model) -> dict[str, Any]:
    """The model's validated settings (the frontmatter after defaults and overrides); secret-looking env values
    are redacted, the SQL and command are returned on their own."""
    data = asdict(model)
    for key in ("database", "table", "source", "sql", "exec", "dependencies"):
        data.pop(key, None)
    data["env"] = redact_env(dict(model.env))
    if isinstance(model, IncrementalModel):
        choice = batch_choice(model)
        data["batch"]["effective_mode"] = choice.mode
        data["batch"]["effective_reason"] = choice.reason
        data["write"]["unique_key"] = list(model.write.unique_key)
        data["tags"] = list(model.tags)
    elif isinstance(model, ScheduledModel):
        data["tags"] = list(model.tags)
    return data


def ranks(models: ModelSet) -> dict[ModelId, int]:
    """Longest path from a source: 0 for models without dependencies."""
    out: dict[ModelId, int] = {}
    for model_id in models.topological_order():
        deps = [out[d] for d in models.dependencies(model_id) if d in out]
        out[model_id] = 1 + max(deps) if deps else 0
    return out


@dataclass(frozen=True)
class Edge:
    source: ModelId
    target: ModelId
    or_group: int | None


def edges(models: ModelSet) -> list[Edge]:
    """From each dependency to its dependent; OR-group members carry the group's index among the dependencies."""
    out: list[Edge] = []
    for model in models:
        for index, dep in enumerate([] if isinstance(model, ExternalModel) else model.dependencies):
            if isinstance(dep, str):
                out.append(Edge(dep, model.id, None))
            else:
                out += [Edge(member, model.id, index) for member in dep]
    return out


def failed_counts(failures: Mapping[ModelId, list[Any]]) -> dict[ModelId, int]:
    return {model_id: len(items) for model_id, items in failures.items()}
