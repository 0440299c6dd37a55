"""The bounds-cache use case: scan each external model when due, store merged bounds, announce changes."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Protocol

from cbt.contract.messages import BoundsUpdated
from cbt.contract.topics import Topics
from cbt.models.spec import ExternalModel, ModelId
from cbt.models.templates import ScanContext
from cbt.scheduling.scanning import ScanKind, ScanResult, merge_scan, scan_kind_due
from cbt.state.ports import BoundsStore, Publisher

log = logging.getLogger("cbt.bounds_cache")


class BoundsQuery(Protocol):
    async def scan(self, model: ExternalModel, scan: ScanContext) -> ScanResult: ...


@dataclass
class BoundsScanner:
    externals: list[ExternalModel]
    store: BoundsStore
    query: BoundsQuery
    publisher: Publisher
    topics: Topics
    _last_full: dict[ModelId, float] = field(default_factory=dict)
    _last_any: dict[ModelId, float] = field(default_factory=dict)

    async def scan_due(self, now_s: float | None = None) -> int:
        """Scan every external model whose full or incremental scan is due; returns how many bounds changed."""
        now = time.time() if now_s is None else now_s
        stored = self.store.bounds([m.id for m in self.externals])
        due = [(m, kind) for m in self.externals if (kind := self._due(m, now, m.id in stored)) is not None]
        results = await asyncio.gather(*(self.scan_one(m, kind) for m, kind in due), return_exceptions=True)
        for (model, _), result in zip(due, results, strict=True):
            if isinstance(result, BaseException):
                log.warning("bounds scan failed; keeping cached bounds",
                            extra={"model": model.id, "error": str(result)[:500]})
        return sum(1 for r in results if r is True)

    async def scan_one(self, model: ExternalModel, kind: ScanKind) -> bool:
        """Scan one model; True when its stored bounds changed (and ``bounds-updated`` was published)."""
        previous = self.store.bounds([model.id]).get(model.id)
        context = ScanContext(is_incremental_scan=kind == "incremental" and previous is not None,
                              previous_min=previous.min if previous else None,
                              previous_max=previous.max if previous else None)
        started = time.time()
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
