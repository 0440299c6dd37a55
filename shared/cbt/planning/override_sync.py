"""Live config overrides as the services use them: set and cleared through the durable record first, then Redis;
read from Redis (restored from the record when Redis was emptied); applied to a service's models when Redis's
version counter moved.

Why a version counter polled each tick rather than a Kafka event: every service already ticks and reads Redis, one
``MGET`` of two small keys per tick costs nothing, it cannot be missed (a service that was down, or a consumer group
that starts at the latest offset, still sees the newest version) and it notices an emptied Redis, which an event
would not. The original CBT does the same (``cbt:config-override:version``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cbt.models import live_overrides
from cbt.models.dag import ModelSet
from cbt.models.live_overrides import LiveOverride, OverrideRejected
from cbt.models.spec import ModelId
from cbt.planning.planner import Planner
from cbt.state.override_ports import OverrideRecord, OverrideStore

log = logging.getLogger("cbt.planning")
RESTORE_ATTEMPTS = 3
"""Restores from the admin table tried in one read before giving up until the next tick (each is one Spark read; one
is refused only when an override was changed during that read)."""


@dataclass
class LiveOverrides:
    """The overrides of one installation: the hot store and its durable record (opened on first use: Spark)."""

    store: OverrideStore
    record: Callable[[], OverrideRecord]

    def current(self) -> tuple[int, dict[ModelId, dict[str, Any]]]:
        """The version and every stored override; an emptied Redis is first restored from the record."""
        version = self.store.version()
        for _ in range(RESTORE_ATTEMPTS):
            if version is not None:
                return version, self.store.overrides()
            counter = self.store.counter()
            restored = self.record().current_overrides()
            version = self.store.restore(restored, counter)  # None: changed meanwhile, so read the record again
            if version is not None:
                log.warning("live config overrides restored from the admin table", extra={"overrides": len(restored)})
            else:
                version = self.store.version()
        if version is None:
            raise RuntimeError(f"live config overrides: Redis changed during each of {RESTORE_ATTEMPTS} restores "
                               "from the admin table; trying again at the next tick")
        return version, self.store.overrides()

    def set(self, models: ModelSet, model_id: ModelId, data: object, who: str, at_ms: int) -> LiveOverride:
        """Check the override against the model (``OverrideRejected`` with the reason), record it, then publish it
        to Redis: a crash in between leaves the record ahead, and the next restore catches Redis up."""
        override = live_overrides.check(models, model_id, data)
        self.record().record_override(override.model, override.fields, who, at_ms)
        self.store.put(override.model, override.fields)
        return override

    def clear(self, model_id: ModelId, who: str, at_ms: int) -> bool:
        """Remove the model's override; False when it had none."""
        _, stored = self.current()
        if model_id not in stored:
            return False
        self.record().record_override(model_id, None, who, at_ms)
        self.store.clear(model_id)
        return True


@dataclass(frozen=True)
class Applied:
    """A service's models with the overrides in force, and the ids they pause."""

    version: int
    models: ModelSet
    paused: frozenset[ModelId]
    overrides: Mapping[ModelId, LiveOverride]


@dataclass
class ModelView:
    """The loaded models plus the live overrides; ``refresh`` once per tick."""

    base: ModelSet
    overrides: LiveOverrides
    seen: int | None = field(default=None)

    def refresh(self) -> Applied | None:
        """The models with the overrides applied when the overrides changed since the last call, else None."""
        version = self.overrides.store.version()
        if version is not None and version == self.seen:
            return None
        version, stored = self.overrides.current()
        valid = valid_overrides(self.base, stored)
        models, paused = live_overrides.apply(self.base, valid)
        self.seen = version
        log.info(
            "live config overrides applied", extra={"version": version, "overrides": len(valid), "paused": len(paused)}
        )
        return Applied(version, models, paused, valid)


def valid_overrides(models: ModelSet, stored: Mapping[ModelId, Mapping[str, Any]]) -> dict[ModelId, LiveOverride]:
    """The stored overrides still valid for these models (the config may have changed since one was set): an invalid
    one is logged and left out, never applied half."""
    out: dict[ModelId, LiveOverride] = {}
    for model_id, fields in stored.items():
        try:
            out[model_id] = live_overrides.check(models, model_id, fields)
        except OverrideRejected as e:
            log.warning("a live config override is ignored", extra={"model": model_id, "reason": str(e)})
    return out


async def follow(view: ModelView, planner: Planner) -> None:
    """One tick of a service that only plans (the invalidator): plan with the overridden models from now on."""
    applied = await asyncio.to_thread(view.refresh)
    if applied is not None:
        planner.models, planner.paused = applied.models, applied.paused
