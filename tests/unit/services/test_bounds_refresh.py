"""A requested bounds refresh: the scanner runs a full scan of the model at its next round, even when no scan is due,
and takes the request (once); a model already scanning keeps its request for the round after."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from cbt.bounds_cache.scanner import BoundsScanner
from cbt.contract.topics import Topics
from cbt.models.spec import ExternalModel, ModelId
from cbt.models.templates import ScanContext
from cbt.scheduling.scanning import ScanResult
from tests.twins.memory_state import MemoryState
from tests.unit.scheduling.factories import ext
from tests.unit.services.test_runner import Published

A, B = "src.a", "src.b"


@dataclass
class Requests:
    pending: set[ModelId] = field(default_factory=set)

    def request(self, model_id: ModelId) -> None:
        self.pending.add(model_id)

    def requested(self) -> set[ModelId]:
        return set(self.pending)

    def taken(self, model_id: ModelId) -> None:
        self.pending.discard(model_id)


@dataclass
class Query:
    scans: list[tuple[str, bool]] = field(default_factory=list)

    async def scan(self, model: ExternalModel, scan: ScanContext) -> ScanResult:
        self.scans.append((model.id, scan.is_incremental_scan))
        return ScanResult(0, 100)


def test_a_requested_model_is_scanned_in_full_at_the_next_round_and_the_request_is_taken() -> None:
    async def scenario() -> tuple[Query, Requests]:
        query, requests = Query(), Requests()
        scanner = BoundsScanner([ext(A), ext(B)], MemoryState().bounds, query, Published(), Topics("t."),
                                refresh=requests)
        await scanner.scan_due(now_s=1000)  # first round: both scanned in full
        await scanner.scan_due(now_s=1001)  # nothing due a second later
        assert len(query.scans) == 2
        requests.pending.add(A)
        await scanner.scan_due(now_s=1002)
        await scanner.scan_due(now_s=1003)
        return query, requests

    query, requests = asyncio.run(scenario())
    assert query.scans[2:] == [(A, False)], "one full scan of the requested model, none of the other"
    assert requests.pending == set()


def test_without_a_request_nothing_is_scanned_before_it_is_due() -> None:
    async def scenario() -> Query:
        query = Query()
        scanner = BoundsScanner([ext(A)], MemoryState().bounds, query, Published(), Topics("t."), refresh=Requests())
        await scanner.scan_due(now_s=1000)
        await scanner.scan_due(now_s=1010)
        return query

    assert asyncio.run(scenario()).scans == [(A, False)]
