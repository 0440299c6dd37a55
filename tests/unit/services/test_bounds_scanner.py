"""The bounds-cache scanner: each external model's scans run on their own, so one that hangs (until its timeout)
delays neither the other models' scans nor the loop that calls the scanner (it renews the leader lease)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from cbt.bounds_cache.scanner import BoundsScanner
from cbt.contract.messages import BoundsUpdated
from cbt.contract.topics import Topics
from cbt.models.spec import ExternalModel
from cbt.models.templates import ScanContext
from cbt.scheduling.scanning import ScanResult
from tests.twins.memory_state import MemoryState
from tests.unit.scheduling.factories import ext
from tests.unit.services.test_runner import Published

HUNG, QUICK = "src.hung", "src.quick"
SECOND = 60.0
"""An incremental scan is due every 60 s (the model default)."""


@dataclass
class Query:
    """``src.hung`` waits until released; every other model's scan returns at once, its max one further each time."""

    release: asyncio.Event = field(default_factory=asyncio.Event)
    scans: list[str] = field(default_factory=list)

    async def scan(self, model: ExternalModel, scan: ScanContext) -> ScanResult:
        self.scans.append(model.id)
        if model.id == HUNG:
            await self.release.wait()
            raise TimeoutError("query timeout: the bounds query ran longer than 120 s")
        return ScanResult(0, 100 + len(self.scans))


def scanner(query: Query, published: Published) -> BoundsScanner:
    return BoundsScanner([ext(HUNG), ext(QUICK)], MemoryState().bounds, query, published, Topics("t."))


def test_a_hung_scan_delays_neither_the_other_models_scans_nor_the_caller() -> None:
    async def scenario() -> tuple[Query, Published, BoundsScanner]:
        query, published = Query(), Published()
        scans = scanner(query, published)
        for tick in range(3):
            started = scans.start_due(now_s=1000 + tick * SECOND)  # returns at once: nothing is awaited here
            await asyncio.wait_for(asyncio.gather(*(s for s in started if s.get_name().endswith(QUICK))), 1)
            await asyncio.sleep(0)
        assert query.scans.count(HUNG) == 1, "a scan of a model already scanning was started again"
        assert query.scans.count(QUICK) == 3
        query.release.set()
        await scans.stop()
        return query, published, scans

    _, published, scans = asyncio.run(scenario())
    updates = [m for _, m in published.messages if isinstance(m, BoundsUpdated)]
    assert [u.model for u in updates] == [QUICK] * 3 and updates[-1].max > updates[0].max
    assert scans.store.bounds([HUNG]) == {}, "a failed scan stores nothing"


def test_a_failed_scan_is_logged_and_the_next_one_is_due_again() -> None:
    async def scenario() -> list[str]:
        query = Query()
        query.release.set()  # the hung model's scan now fails at once
        scans = scanner(query, Published())
        assert await scans.scan_due(now_s=1000) == 1, "only the quick model's bounds changed"
        await scans.scan_due(now_s=1000 + SECOND)
        return query.scans

    assert asyncio.run(scenario()).count(HUNG) == 2
