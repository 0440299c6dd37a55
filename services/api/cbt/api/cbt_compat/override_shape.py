"""CBT's config-override body (ethpandaops/cbt ``pkg/management/handlers.go``, ``pkg/models/override.go``) to our live
override (``cbt.models.live_overrides``) and back. Pure.

CBT's request: ``{"enabled": bool, "config": {...}}``; for a transformation its ``config`` may hold ``schedules``
(``forwardfill``, ``backfill``), ``limits`` (``min``, ``max``), ``schedule``, ``tags`` — ours too, under the same
names, so they pass through — and ``interval`` (``min``, ``max``), which ours cannot change live (a model's interval
sizes decide its task boundaries and stay those of its file). An external model's ``config`` (``lag``, ``cache``) has no
live counterpart here (external models take no live override; their scans are set in the config). Ours also takes
``fill``, so it is accepted inside ``config`` as our extension. Keys match case-insensitively, as Go's JSON decoding
does; a null value means "keep", as CBT's pointers do. Anything else is refused naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cbt.base.errors import CbtError
from cbt.models.spec import ExternalModel, IncrementalModel, Model, ScheduledModel

PASSED = {
    "schedules": ("forwardfill", "backfill"),
    "limits": ("min", "max"),
    "fill": ("direction", "allow_gap_skipping", "buffer"),
}
"""Nested fields of CBT's transformation override (and our ``fill``) taken as they are, with their keys."""
SCALARS = ("schedule", "tags")
CANNOT = {
    "interval": "a live override cannot change a model's interval sizes here (they set its task boundaries; "
    "change the model file)",
    "lag": "external models take no live override here (set their lag in the config's models.overrides)",
    "cache": "external models take no live override here (set their scan intervals in the config's models.overrides)",
}


class CbtOverrideRejected(CbtError, ValueError):
    """A CBT override body that has no counterpart here; the message names the field."""


def model_type(model: Model) -> str:
    """CBT's ``model_type``: ``external`` or ``transformation``."""
    return "external" if isinstance(model, ExternalModel) else "transformation"


def _keys(given: Mapping[str, Any], where: str) -> dict[str, Any]:
    """``given`` with lower-case keys (Go's JSON decoding matches field names case-insensitively)."""
    out: dict[str, Any] = {}
    for key, value in given.items():
        if key.lower() in out:
            raise CbtOverrideRejected(f"{where}{key}: given twice (keys match case-insensitively)")
        out[key.lower()] = value
    return out


def _object(value: object, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise CbtOverrideRejected(f"{where}: expected a JSON object, got {type(value).__name__}")
    return value


def _nested(name: str, value: object) -> dict[str, Any] | None:
    given = _keys(_object(value, f"config.{name}"), f"config.{name}.")
    for key in given:
        if key not in PASSED[name]:
            raise CbtOverrideRejected(f"config.{name}.{key}: unknown field (known: {', '.join(PASSED[name])})")
    kept = {k: v for k, v in given.items() if v is not None}
    return kept or None


def from_cbt(model: Model, body: object) -> dict[str, Any]:
    """Our override's fields for CBT's request ``body`` (``enabled``, ``config``), or ``CbtOverrideRejected``.
    Our own checks (``live_overrides.check``) run after this on what it returns."""
    request = _keys(_object(body, "body"), "")
    for key in request:
        if key not in ("enabled", "config"):
            raise CbtOverrideRejected(f"{key}: unknown field (CBT's config-override body has enabled and config)")
    fields: dict[str, Any] = {}
    if request.get("enabled") is not None:
        if isinstance(model, ExternalModel):
            raise CbtOverrideRejected("enabled: not supported for external models")
        fields["enabled"] = request["enabled"]
    config = request.get("config")
    if config is None:
        return fields
    for key, value in _keys(_object(config, "config"), "config.").items():
        if key in CANNOT:
            raise CbtOverrideRejected(f"config.{key}: {CANNOT[key]}")
        if value is None:
            continue
        if key in PASSED:
            nested = _nested(key, value)
            if nested is not None:
                fields[key] = nested
        elif key in SCALARS:
            fields[key] = value
        else:
            raise CbtOverrideRejected(
                f"config.{key}: unknown field (known: interval, schedules, limits, schedule, tags; fill is ours)"
            )
    return fields


def to_cbt(model_id: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    """CBT's ``ConfigOverride`` for our stored override (every stored one is a transformation's: external models
    take none). ``updated_at`` is left out: the hot store keeps no time (the admin table's rows have it)."""
    shown: dict[str, Any] = {"model_id": model_id, "model_type": "transformation"}
    if "enabled" in fields:
        shown["enabled"] = fields["enabled"]
    rest = {k: v for k, v in fields.items() if k != "enabled"}
    shown["override"] = rest or None
    return shown


def go_duration(seconds: int) -> str:
    """``seconds`` as Go's ``time.Duration.String`` writes it (``1h0m0s``, ``1m30s``, ``45s``)."""
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    return f"{minutes}m{secs}s" if minutes else f"{secs}s"


def base_config(model: Model) -> dict[str, Any]:
    """CBT's ``base_config``: the model's overridable fields as its file sets them (before any live override)."""
    if isinstance(model, IncrementalModel):
        base: dict[str, Any] = {
            "interval": {"min": model.interval.min, "max": model.interval.max},
            "schedules": {"forwardfill": model.schedules.forwardfill, "backfill": model.schedules.backfill},
            "tags": list(model.tags),
            "fill": {
                "direction": model.fill.direction,
                "allow_gap_skipping": model.fill.allow_gap_skipping,
                "buffer": model.fill.buffer,
            },
        }
        if model.limits.min is not None or model.limits.max is not None:
            base["limits"] = {"min": model.limits.min or 0, "max": model.limits.max or 0}
        return base
    if isinstance(model, ScheduledModel):
        return {"schedule": model.schedule, "tags": list(model.tags)}
    assert isinstance(model, ExternalModel)
    return {
        "lag": model.lag,
        "cache": {
            "incremental_scan_interval": go_duration(model.cache.incremental_scan_interval_s),
            "full_scan_interval": go_duration(model.cache.full_scan_interval_s),
        },
    }
