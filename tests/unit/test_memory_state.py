"""What only the in-memory state can show deterministically: lease expiry on a fake clock, and log pruning.

The shared behaviour is checked against both implementations in ``tests/integration/test_redis_state_contract.py``.
"""

from __future__ import annotations

import pytest

from cbt.scheduling.task_runs import TaskRun
from cbt.state.ports import Fence
from tests.twins.memory_state import MemoryCoverage, MemoryLeases


class FakeClock:
    def __init__(self) -> None:
        self.now_ms = 0

    def __call__(self) -> int:
        return self.now_ms


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


def test_a_fence_holds_only_for_the_owner_and_token_that_hold_the_lease() -> None:
    clock = FakeClock()
    leases = MemoryLeases(clock)
    first = Fence("task:x", "a", leases.acquire("task:x", "a", ttl_ms=100) or 0)
    assert leases.holds(first)
    clock.now_ms = 100
    assert not leases.holds(first), "expired"
    second = Fence("task:x", "b", leases.acquire("task:x", "b", ttl_ms=100) or 0)
    assert leases.holds(second) and not leases.holds(first)


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
    for epoch in range(1, invalidations + 1):
        coverage.apply_invalidation(epoch, {"db.a": [TaskRun.single((100, 200))]})
    assert coverage.record_completed("db.a", (0, 10), observed) is is_accepted
