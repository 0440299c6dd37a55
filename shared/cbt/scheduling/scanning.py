"""Rules for external bounds scans (docs/design/scheduling.md#external-bounds-scans): when to scan, and how a result
updates cached bounds.

Bounds are raw ``[min, max)`` (lag is applied by planning). An incremental scan only looks for data outside the
known bounds, so its result is merged: bounds never shrink on an incremental scan. A full scan may shrink them
(data deleted upstream). An empty or null result never overwrites good bounds: a failing or empty scan must not
make every dependent stop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from cbt.scheduling.snapshot import RawBounds

ScanKind = Literal["full", "incremental"]


@dataclass(frozen=True)
class ScanResult:
    min: int | None
    max: int | None

    @property
    def has_data(self) -> bool:
        return self.min is not None and self.max is not None and self.max > self.min


def merge_scan(previous: RawBounds | None, result: ScanResult, kind: ScanKind) -> RawBounds | None:
    """The bounds to store after a scan; ``None`` means keep what is there (nothing new to store)."""
    if not result.has_data:
        return None
    assert result.min is not None and result.max is not None
    if kind == "full" or previous is None:
        return RawBounds(result.min, result.max)
    return RawBounds(min(previous.min, result.min), max(previous.max, result.max))


def scan_kind_due(now_s: float, last_full_s: float | None, last_any_s: float | None,
                  full_every_s: float, incremental_every_s: float) -> ScanKind | None:
    """Which scan is due now: a full scan first (and whenever its interval passed), else an incremental one."""
    if last_full_s is None or now_s - last_full_s >= full_every_s:
        return "full"
    if last_any_s is None or now_s - last_any_s >= incremental_every_s:
        return "incremental"
    return None
