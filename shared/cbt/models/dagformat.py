"""The DAG as text, JSON, Mermaid or Graphviz dot (``cbt dag --format``). Edges go dependency → dependent."""

from __future__ import annotations

import json
from typing import Any, Literal

from cbt.models.dag import ModelSet
from cbt.models.spec import ExternalModel, IncrementalModel, Model, ScheduledModel, model_kind

Format = Literal["text", "json", "mermaid", "dot"]
FORMATS: tuple[Format, ...] = ("text", "json", "mermaid", "dot")


def format_dag(models: ModelSet, fmt: Format) -> str:
    if fmt == "json":
        return json.dumps(dag_json(models), indent=2, sort_keys=False)
    if fmt == "mermaid":
        return _mermaid(models)
    if fmt == "dot":
        return _dot(models)
    return _text(models)


def _summary(model: Model) -> str:
    if isinstance(model, ExternalModel):
        return f"external, interval.type {model.interval_type}" + (f", lag {model.lag}" if model.lag else "")
    if isinstance(model, IncrementalModel):
        runs = "exec" if model.exec else f"sql/{model.write.strategy}"
        return f"incremental {runs}, interval {model.interval.min}..{model.interval.max} {model.interval.type}"
    return f"scheduled {'exec' if model.exec else 'sql'}, {model.schedule}"


def _dependency_text(model: Model) -> list[str]:
    if isinstance(model, ExternalModel):
        return []
    return [dep if isinstance(dep, str) else "one of (" + ", ".join(dep) + ")" for dep in model.dependencies]


def _text(models: ModelSet) -> str:
    lines = []
    for model_id in models.topological_order():
        model = models.get(model_id)
        lines.append(f"{model_id}  [{_summary(model)}]")
        for dep in _dependency_text(model):
            lines.append(f"  <- {dep}")
    return "\n".join(lines)


def dag_json(models: ModelSet) -> dict[str, Any]:
    """``{"models": [...], "edges": [...]}`` in topological order; OR groups are lists in ``dependencies``."""
    nodes = []
    edges = []
    for model_id in models.topological_order():
        model = models.get(model_id)
        deps: list[Any] = (
            []
            if isinstance(model, ExternalModel)
            else [d if isinstance(d, str) else list(d) for d in model.dependencies]
        )
        nodes.append(
            {
                "id": model_id,
                "type": model_kind(model),
                "database": model.database,
                "table": model.table,
                "dependencies": deps,
                "dependents": list(models.dependents(model_id)),
                "tags": [] if isinstance(model, ExternalModel) else list(model.tags),
                "source": f"{model.source.path}:{model.source.line}",
            }
        )
        for dep in models.dependencies(model_id):
            edges.append({"from": dep, "to": model_id, "or_group": _in_or_group(model, dep)})
    return {"models": nodes, "edges": edges}


def _in_or_group(model: Model, dep_id: str) -> bool:
    if isinstance(model, ExternalModel):
        return False
    return any(isinstance(d, tuple) and dep_id in d for d in model.dependencies)


def _node_name(model_id: str) -> str:
    return "m_" + "".join(c if c.isalnum() else "_" for c in model_id)


def _mermaid(models: ModelSet) -> str:
    shapes = {"external": ('[("', '")]'), "incremental": ('["', '"]'), "scheduled": ('(["', '"])')}
    lines = ["flowchart LR"]
    for model in models:
        left, right = shapes[model_kind(model)]
        lines.append(f"  {_node_name(model.id)}{left}{model.id}{right}")
    for model_id in models.topological_order():
        for dep in models.dependencies(model_id):
            arrow = "-.->" if _in_or_group(models.get(model_id), dep) else "-->"
            lines.append(f"  {_node_name(dep)} {arrow} {_node_name(model_id)}")
    return "\n".join(lines)


def _dot(models: ModelSet) -> str:
    shapes = {"external": "cylinder", "incremental": "box", "scheduled": "box, style=rounded"}
    lines = ["digraph cbt {", "  rankdir=LR;"]
    for model in models:
        lines.append(f'  "{model.id}" [shape={shapes[model_kind(model)]}];')
    for model_id in models.topological_order():
        for dep in models.dependencies(model_id):
            style = " [style=dashed]" if _in_or_group(models.get(model_id), dep) else ""
            lines.append(f'  "{dep}" -> "{model_id}"{style};')
    lines.append("}")
    return "\n".join(lines)


__all__ = ["FORMATS", "Format", "ScheduledModel", "dag_json", "format_dag"]
