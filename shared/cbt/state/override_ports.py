"""The ports of the live config overrides (``cbt.models.live_overrides``): the hot store every service polls, and the
durable record it is restored from. Implemented by ``cbt.adapters.redis_stores.overrides`` and
``cbt.adapters.admin_tables.overrides``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from cbt.models.spec import ModelId


class OverrideStore(Protocol):
    """Live config overrides in the hot state (``cbt.models.live_overrides``): each model's override as its JSON
    object, and a version every change bumps, so a service notices a change with one small read per tick."""

    def version(self) -> int | None:
        """The change counter; None when the store was emptied (or never filled): restore it from the record."""
        ...

    def overrides(self) -> dict[ModelId, dict[str, Any]]: ...
    def put(self, model_id: ModelId, fields: Mapping[str, Any]) -> int:
        """Set one model's override; returns the new version."""
        ...

    def clear(self, model_id: ModelId) -> int: ...
    def counter(self) -> int:
        """The change counter as it is, filled or not: read before reading the record, passed to ``restore``."""
        ...

    def restore(self, overrides: Mapping[ModelId, Mapping[str, Any]], counter: int) -> int | None:
        """Replace every override (after Redis was emptied) and mark the store filled; returns the new version.
        None, changing nothing, when the store changed since ``counter`` was read (or was filled meanwhile)."""
        ...


class OverrideRecord(Protocol):
    """The durable copy of the live overrides (an admin table): what the hot store is restored from."""

    def record_override(self, model_id: ModelId, fields: Mapping[str, Any] | None, who: str, at_ms: int) -> None:
        """Append the model's override (None: cleared)."""
        ...

    def current_overrides(self) -> dict[ModelId, dict[str, Any]]: ...
