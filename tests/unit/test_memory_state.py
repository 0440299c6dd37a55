"""What only the in-memory state can show deterministically: lease expiry on a fake clock, and log pruning.

The shared behaviour is checked against both implementations in ``tests/integration/test_redis_state_contract.py``.
"""

from __future__ import annotations

import pytest

from cbt.scheduling.coverage import Range
from cbt.testing.memory_state import MemoryCoverage, MemoryLeases, overlaps


class FakeClock:
    def __init__(self) -> None:
        self.now_ms = 0

    def __call__(self) -> int:
        return self.now_ms


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        pytest.param((0, 10), (5, 15), True, id="overlapping"),
        pytest.param((0, 10), (10, 20), False, id="touching-is-not-overlap"),
        pytest.param((0, 10), (9, 10), True, id="last-position"),
        pytest.param((0, 10), (3, 3), False, id="empty"),
        pytest.param((0, 10), (20, 30), False, id="disjoint"),
    ],
)
def test_overlaps(a: Range, b: Range, expected: bool) -> None:
    assert overlaps(a, b) is expected
    assert overlaps(b, a) is expected


def test_lease_expires_exactly_at_its_ttl() -> None:
    clock = FakeClock()
    leases = MemoryLeases(clock)
    assert leases.acquire("tick", "a", ttl_ms=100) == 1
    clock.now_ms = 99
    assert leases.acquire("tick", "b", ttl_ms=100) is None
    assert leases.renew("tick", "a", ttl_ms=100) is True, "now held until 199"
    clock.now_ms = 199
    assert leases.renew("tick", "a", ttl_ms=100) is False
    assert leases.acquire("tick", "b", ttl_ms=100) == 2
    leases.release("tick", "a")
    assert leases.acquire("tick", "c", ttl_ms=100) is None, "the expired owner's release is a no-op"


@pytest.mark.parametrize(
    ("keep", "invalidations", "observed", "is_accepted"),
    [
        pytest.param(3, 3, 0, True, id="all-kept"),
        pytest.param(3, 4, 0, False, id="oldest-pruned-fails-closed"),
        pytest.param(3, 4, 1, True, id="observed-at-floor"),
        pytest.param(1, 10, 9, True, id="only-latest-kept"),
    ],
)
def test_pruned_log_refuses_completions_older_than_its_floor(
    keep: int, invalidations: int, observed: int, is_accepted: bool
) -> None:
    coverage = MemoryCoverage(keep_invalidations=keep)
    for _ in range(invalidations):
        coverage.apply_invalidation({"db.a": [(100, 200)]})
    assert coverage.record_completed("db.a", (0, 10), observed) is is_accepted
