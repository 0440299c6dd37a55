"""Live config overrides (docs/operations/overrides.md#live-config-overrides): per-model changes an operator sets at
run time (API, ``cbt override set``, the model page's dialog), layered on top of the loaded models without a restart.

Pure: an override is checked against the model it names (``check``) and applied to a ``ModelSet`` (``apply``). What
an override may change, per kind of model::

    incremental   enabled, schedules (forwardfill, backfill), limits (min, max), fill (direction,
                  allow_gap_skipping, buffer), tags
    scheduled     enabled, schedule, tags

A field set replaces the model's (``tags`` too: the list given is the model's tags); a nested field replaces only the
keys given (``schedules: {backfill: ''}`` turns backfill off and keeps forwardfill). ``enabled: false`` pauses the
model: it stays in the graph (its dependents keep seeing its coverage) but nothing of it is planned or run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from pydantic import ValidationError

from cbt.base.errors import CbtError
from cbt.models.dag import ModelSet
from cbt.models.schema import CronText, FillFields, LimitsFields, SchedulesFields, Strict, Text
from cbt.models.spec import Fill, IncrementalModel, Limits, Model, ModelId, ScheduledModel, Schedules

APPLIES: dict[str, frozenset[str]] = {
    "incremental": frozenset({"enabled", "schedules", "limits", "fill", "tags"}),
    "scheduled": frozenset({"enabled", "schedule", "tags"}),
    "external": frozenset(),
}


class OverrideRejected(CbtError, ValueError):
    """An override that would be invalid; the message says which field and why."""


class OverrideFields(Strict):
    """What a live override may set (each field optional; unknown fields are refused)."""

    enabled: bool | None = None
    schedules: SchedulesFields | None = None
    limits: LimitsFields | None = None
    fill: FillFields | None = None
    tags: list[Text] | None = None
    schedule: CronText | None = None


@dataclass(frozen=True)
class LiveOverride:
    """One model's override: the fields set, as given (``fields`` is the JSON object stored)."""

    model: ModelId
    fields: Mapping[str, Any]

    @property
    def is_enabled(self) -> bool:
        return self.fields.get("enabled", True) is not False


def kind_of(model: Model) -> str:
    if isinstance(model, IncrementalModel):
        return "incremental"
    return "scheduled" if isinstance(model, ScheduledModel) else "external"


def check(models: ModelSet, model_id: ModelId, data: object) -> LiveOverride:
    """The override ``data`` (a JSON object) for ``model_id`` once it is known valid; else ``OverrideRejected``."""
    model = models.models.get(model_id)
    if model is None:
        raise OverrideRejected(f"{model_id}: no such model")
    if not isinstance(data, Mapping):
        raise OverrideRejected(f"{model_id}: an override is a JSON object of fields, got {type(data).__name__}")
    try:
        parsed = OverrideFields.model_validate(data)
    except ValidationError as e:
        raise OverrideRejected(f"{model_id}: {_first_problem(e)}") from e
    fields = parsed.model_dump(exclude_unset=True)
    if not fields:
        raise OverrideRejected(f"{model_id}: an override sets at least one field (to remove one, clear it)")
    kind = kind_of(model)
    for name in fields:
        if name not in APPLIES[kind]:
            allowed = ", ".join(sorted(APPLIES[kind])) or "none"
            raise OverrideRejected(f"{model_id}: {name}: does not apply to {kind} models (they accept: {allowed})")
    override = LiveOverride(model_id, fields)
    problem = _merged_problem(_applied(model, override))
    if problem is not None:
        raise OverrideRejected(f"{model_id}: {problem}")
    return override


def apply(models: ModelSet, overrides: Mapping[ModelId, LiveOverride]) -> tuple[ModelSet, frozenset[ModelId]]:
    """The models with the overrides applied, and the ids paused (``enabled: false``). Overrides naming a model not
    loaded are ignored (the config changed since they were set)."""
    applied = {m: _applied(model, overrides[m]) if m in overrides else model for m, model in models.models.items()}
    disabled = frozenset(m for m, o in overrides.items() if m in models and not o.is_enabled)
    if all(applied[m] is models.models[m] for m in applied):
        return models, disabled
    return ModelSet(applied, models.external_database, models.transformation_database, models.warnings), disabled


def _applied(model: Model, override: LiveOverride) -> Model:
    fields = override.fields
    if isinstance(model, IncrementalModel):
        out = model
        if "schedules" in fields:
            given = fields["schedules"]
            out = replace(
                out,
                schedules=Schedules(
                    given.get("forwardfill", out.schedules.forwardfill), given.get("backfill", out.schedules.backfill)
                ),
            )
        if "limits" in fields:
            given = fields["limits"]
            out = replace(out, limits=Limits(given.get("min", out.limits.min), given.get("max", out.limits.max)))
        if "fill" in fields:
            given = fields["fill"]
            out = replace(
                out,
                fill=Fill(
                    given.get("direction", out.fill.direction),
                    given.get("allow_gap_skipping", out.fill.allow_gap_skipping),
                    given.get("buffer", out.fill.buffer),
                ),
            )
        if "tags" in fields:
            out = replace(out, tags=tuple(dict.fromkeys(fields["tags"])))
        return out
    if isinstance(model, ScheduledModel):
        out_s = model
        if "schedule" in fields:
            out_s = replace(out_s, schedule=fields["schedule"])
        if "tags" in fields:
            out_s = replace(out_s, tags=tuple(dict.fromkeys(fields["tags"])))
        return out_s
    return model


def _merged_problem(model: Model) -> str | None:
    """What is wrong with the model once overridden (the cross-field rules of the model files)."""
    if not isinstance(model, IncrementalModel):
        return None
    first, last = model.limits.min, model.limits.max
    if first is not None and last and first > last:  # (limits.max 0 or none: no upper limit)
        return f"limits.min ({first}) must be <= limits.max ({last})"
    if not model.schedules.forwardfill and not model.schedules.backfill:
        return "schedules: at least one of forwardfill or backfill must stay set (use enabled: false to pause)"
    return None


def _first_problem(error: ValidationError) -> str:
    item = error.errors(include_url=False)[0]
    where = ".".join(str(part) for part in item["loc"])
    if item["type"] == "extra_forbidden":
        return f"{where}: unknown field (known: enabled, schedules, limits, fill, tags, schedule)"
    message = str(item["msg"]).removeprefix("Value error, ")
    return f"{where}: {message}, got {item.get('input')!r}"
