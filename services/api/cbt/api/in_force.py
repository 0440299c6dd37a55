"""The api's models with the live config overrides in force (docs/operations/overrides.md#live-config-overrides).

The api loads the models once, at start; an operator's override (a schedule, limits, tags, ``enabled: false``) changes
them while it runs. What the routes show and plan — listings, a model's config, schedules, run-now's pool and rerun
previews — must be the models in force, as the coordinators plan them. So each request's context is the loaded one
with the overrides applied (``ModelView``, the coordinators' own), re-read from Redis at most once per
``scheduler.tick_s`` (one small read of the version counter; the overrides only when it moved): a change shows within
one coordinator tick, without a restart, and a busy api does not read Redis per request.

If Redis does not answer, the last models in force stay (logged) and the read is tried again a tick later, not on
every request; the routes that read Redis answer 503 themselves.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import replace

from redis.exceptions import RedisError

from cbt.adapters.delta_admin import AdminTableError
from cbt.api.context import ApiContext
from cbt.planning.override_sync import ModelView

log = logging.getLogger("cbt.api")


class InForce:
    """The context of a request: ``loaded`` with the live overrides applied, refreshed at most every ``tick_s``."""

    def __init__(self, loaded: ApiContext, tick_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._loaded = loaded
        self._tick_s = tick_s
        self._clock = clock
        self._view = None if loaded.overrides is None else ModelView(loaded.models, loaded.overrides)
        self._current = loaded
        self._checked_at: float | None = None
        self._lock = threading.Lock()

    def current(self) -> ApiContext:
        """Blocking (a Redis read once per tick): call it off the event loop."""
        if self._view is None:
            return self._loaded
        with self._lock:
            now = self._clock()
            if self._checked_at is not None and now - self._checked_at < self._tick_s:
                return self._current
            self._checked_at = now  # (a failed read too: with Redis away, each request would wait on it)
            try:
                applied = self._view.refresh()
            except (RedisError, AdminTableError, OSError, RuntimeError) as e:
                log.warning("live config overrides not read; the models in force stay as they were",
                            extra={"error": f"{type(e).__name__}: {str(e)[:300]}"})
                return self._current
            if applied is not None:
                self._current = replace(self._loaded, models=applied.models, configured=self._loaded.models,
                                        paused=applied.paused,
                                        overridden={m: o.fields for m, o in applied.overrides.items()})
            return self._current
