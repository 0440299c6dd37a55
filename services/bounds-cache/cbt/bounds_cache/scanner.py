"""The bounds-cache use case: scan each external model when due, store merged bounds, announce changes."""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Protocol

from cbt.contract.messages import BoundsUpdated
from cbt.contract.topics import Topics
from cbt.models.spec import ExternalModel, ModelId
from cbt.models.templates import ScanContext
from cbt.observability import metrics
from cbt.scheduling.scanning import ScanKind, ScanResult, merge_scan, scan_kind_due
from cbt.state.ports import BoundsStore, Publisher, RefreshRequests

log = logging.getLogger("cbt.bounds_cache")


class BoundsQuery(Protocol):
    async def scan(self, model: ExternalModel, scan: ScanContext) -> ScanResult: ...


@dataclass
class BoundsScanner:
    """Scans run independently per model: a slow or hung one (bounded by its timeout) delays only its own model's
    next scan, never another model's, nor the caller's loop (which renews the scanner's leader lease)."""

    externals: list[ExternalModel]
    store: BoundsStore
    query: BoundsQuery
    publisher: Publisher
    topics: Topics
    refresh: RefreshRequests | None = None
    """Asked-for scans: a requested model gets a full scan at the next round, whatever its schedule."""
    _last_full: dict[ModelId, float] = field(default_factory=dict)
    _last_any: dict[ModelId, float] = field(default_factory=dict)
    _running: dict[ModelId, asyncio.Task[bool]] = field(default_factory=dict)

    def start_due(self, now_s: float | None = None) -> list[asyncio.Task[bool]]:
        """Start a scan of every external model whose full or incremental scan is due, or that was requested (a full
        scan), and that has none running;
        each task ends True when its model's bounds changed (a failed scan is logged and keeps the cached bounds)."""
        now = time.time() if now_s is None else now_s
        idle = [m for m in self.externals if m.id not in self._running]
        stored = self.store.bounds([m.id for m in idle]) if idle else {}
        requested = self.refresh.requested() if self.refresh is not None and idle else set()
        started: list[asyncio.Task[bool]] = []
        for model in idle:
            kind: ScanKind | None = "full" if model.id in requested else self._due(model, now, model.id in stored)
            if kind is None:
                continue
            if model.id in requested and self.refresh is not None:
                self.refresh.taken(model.id)
                log.info("bounds scan requested", extra={"model": model.id})
            scan = self._running[model.id] = asyncio.create_task(self._scan_logged(model, kind, now),
                                                                 name=f"bounds scan {model.id}")
            scan.add_done_callback(functools.partial(self._ended, model.id))
            started.append(scan)
        return started

    @property
    def is_scanning(self) -> bool:
        return bool(self._running)

    def _ended(self, model_id: ModelId, _: asyncio.Task[bool]) -> None:
        self._running.pop(model_id, None)

    async def scan_due(self, now_s: float | None = None) -> int:
        """Start the due scans and wait for them; returns how many bounds changed."""
        return sum(await asyncio.gather(*self.start_due(now_s)))

    async def stop(self) -> None:
        """Cancel the scans still running (a Spark scan is interrupted on the server) and wait for them."""
        running = list(self._running.values())
        for scan in running:
            scan.cancel()
        await asyncio.gather(*running, return_exceptions=True)

    async def _scan_logged(self, model: ExternalModel, kind: ScanKind, now: float) -> bool:
        started = time.monotonic()
        try:
            changed = await self.scan_one(model, kind, now)
        except Exception as e:
            log.warning("bounds scan failed; keeping cached bounds", extra={"model": model.id, "error": str(e)[:500]})
            changed, result = False, "failed"
        else:
            result = "changed" if changed else "unchanged"
        metrics.bounds_scans.add(1, {"model": model.id, "scan": kind, "result": result})
        metrics.bounds_scan_duration.record(time.monotonic() - started, {"model": model.id})
        return changed

    async def scan_one(self, model: ExternalModel, kind: ScanKind, now_s: float | None = None) -> bool:
        """Scan one model (at ``now_s``, default now); True when its stored bounds changed (and ``bounds-updated``
        was published)."""
        previous = self.store.bounds([model.id]).get(model.id)
        context = ScanContext(is_incremental_scan=kind == "incremental" and previous is not None,
                              previous_min=previous.min if previous else None,
                              previous_max=previous.max if previous else None)
        started = time.time() if now_s is None else now_s
        result = await self.query.scan(model, context)
        self._last_any[model.id] = started
        if kind == "full":
            self._last_full[model.id] = started
        merged = merge_scan(previous, result, "incremental" if context.is_incremental_scan else "full")
        if merged is None or merged == previous:
            return False
        self.store.put_bounds(model.id, merged)
        await self.publisher.publish(self.topics.bounds_updated, BoundsUpdated(
            model=model.id, min=merged.min, max=merged.max, previous_min=previous.min if previous else None,
            previous_max=previous.max if previous else None, scan=kind,
        ), key=model.id)
        return True

    def _due(self, model: ExternalModel, now: float, is_stored: bool) -> ScanKind | None:
        """A model without stored bounds (empty so far, or Redis was emptied) gets full scans at the incremental
        pace, so its data is found as soon as it appears."""
        last_any = self._last_any.get(model.id)
        if not is_stored:
            is_due = last_any is None or now - last_any >= model.cache.incremental_scan_interval_s
            return "full" if is_due else None
        return scan_kind_due(now, self._last_full.get(model.id), last_any,
                             model.cache.full_scan_interval_s, model.cache.incremental_scan_interval_s)


def parse_bounds_output(text: str) -> ScanResult:
    """An exec external model's stdout: one JSON object ``{"min": …, "max": …}`` (null for no data)."""
    data = json.loads(text.strip().splitlines()[-1]) if text.strip() else {}
    if not isinstance(data, dict):
        raise ValueError(f'expected {{"min": …, "max": …}}, got {text[-200:]!r}')
    low, high = data.get("min"), data.get("max")
    for name, value in (("min", low), ("max", high)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            raise ValueError(f"{name} must be a non-negative integer or null, got {value!r}")
    return ScanResult(low, high)
