"""``models.overrides`` (docs/design/models.md#overrides): per-environment changes applied to model fields before
validation.

An override is keyed by ``database.table`` or by bare ``table`` (the kind's default database); the full id wins.
``enabled: false`` removes the model. Changed fields keep pointing at the config's lines, so a bad override value is
reported where it was written. An override naming no model is a warning, never an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cbt.base.errors import Problem
from cbt.base.yamldoc import Loc, SourceMap
from cbt.config.settings import Config, Override
from cbt.models.discovery import RawDoc
from cbt.models.rules import Defaults, model_identity

# Which override fields apply to which kind of model.
APPLIES = {
    "external": {"lag", "cache", "timeout"},
    "incremental": {"interval", "schedules", "limits", "tags", "timeout", "batch"},
    "scheduled": {"schedule", "tags", "timeout"},
}


@dataclass
class OverrideOutcome:
    disabled: dict[str, tuple[str, int]] = field(default_factory=dict)
    """Model id → where in the config it was disabled."""
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)


def apply_overrides(docs: list[RawDoc], config: Config, defaults: Defaults) -> OverrideOutcome:
    """Merge each matching override into its model's raw fields (in place); report unused or misapplied ones."""
    overrides = config.models.overrides
    smap = config.source
    outcome = OverrideOutcome()
    used: set[str] = set()
    for doc in docs:
        database, table = model_identity(doc, defaults)
        if doc.data is None or database is None or table is None:
            continue
        keys = _matching_keys(overrides, database, table, _default_for(doc, defaults))
        used.update(keys)
        if not keys:
            continue
        key = keys[0]
        doc.override_key = key
        override = overrides[key]
        loc: Loc = ("models", "overrides", key)
        if not override.enabled:
            where = smap.locate((*loc, "enabled"))
            outcome.disabled[f"{database}.{table}"] = (where.path, where.line)
        if override.config is not None:
            outcome.problems += _merge(doc, override, smap, loc)
    for key in overrides:
        if key not in used:
            outcome.warnings.append(smap.problem(("models", "overrides", key), "override names no model; ignored"))
    return outcome


def _default_for(doc: RawDoc, defaults: Defaults) -> str | None:
    return defaults.external if doc.kind == "external" else defaults.transformation


def _matching_keys(overrides: dict[str, Override], database: str, table: str, default_db: str | None) -> list[str]:
    """Override keys naming this model, the one that applies (the full id wins) first."""
    keys = [f"{database}.{table}"] if f"{database}.{table}" in overrides else []
    if table in overrides and database == default_db:
        keys.append(table)
    return keys


def _merge(doc: RawDoc, override: Override, config_map: SourceMap, loc: Loc) -> list[Problem]:
    assert override.config is not None and doc.data is not None
    data = doc.data
    kind = "external" if doc.kind == "external" else str(data.get("type"))
    changes: dict[str, Any] = override.config.model_dump(exclude_unset=True)
    problems: list[Problem] = []
    for name, value in changes.items():
        where: Loc = (*loc, "config", name)
        if kind in APPLIES and name not in APPLIES[kind]:
            allowed = ", ".join(sorted(APPLIES[kind]))
            problems.append(config_map.problem(where, f"does not apply to {kind} models (they accept: {allowed})"))
            continue
        if name == "tags" and isinstance(data.get("tags"), list):
            data["tags"] = [*data["tags"], *value]
        elif isinstance(value, dict) and isinstance(data.get(name), dict):
            data[name] = {**data[name], **value}
        else:
            data[name] = value
        _point_at_config(doc.smap, name, value, config_map, where)
    return problems


def _point_at_config(smap: SourceMap, name: str, value: Any, config_map: SourceMap, where: Loc) -> None:
    """Errors about an overridden field are reported at the override's line in the config."""
    if isinstance(value, dict):
        for key in value:
            smap.lines[(name, key)] = config_map.locate((*where, key))
        if (name,) not in smap.lines:
            smap.lines[(name,)] = config_map.locate(where)
    elif name != "tags":
        smap.lines[(name,)] = config_map.locate(where)
