"""The rate limit's token buckets: a burst is allowed, then one request per 1/rate seconds; each client has its own
bucket; a refused client is told how long to wait; the least recently seen client is forgotten first."""

from __future__ import annotations

import pytest

from cbt.api.access.token_bucket import TokenBuckets


def waits(buckets: TokenBuckets, client: str, times: list[float]) -> list[float]:
    return [round(buckets.take(client, t), 3) for t in times]


@pytest.mark.parametrize(("rate", "burst", "times", "expected"), [
    pytest.param(1.0, 3, [0, 0, 0, 0], [0, 0, 0, 1.0], id="burst-then-wait-one-token"),
    pytest.param(2.0, 1, [0, 0, 0.25, 0.5], [0, 0.5, 0.25, 0], id="refills-at-the-rate"),
    pytest.param(1.0, 2, [0, 0, 100, 100, 100], [0, 0, 0, 0, 1.0], id="refill-stops-at-the-burst"),
    pytest.param(10.0, 1, [5, 4.9, 5.1], [0, 0.1, 0], id="a-clock-going-back-refills-nothing"),
])
def test_a_client_gets_its_burst_then_the_rate(rate: float, burst: int, times: list[float],
                                               expected: list[float]) -> None:
    assert waits(TokenBuckets(rate, burst, max_clients=10), "a", times) == expected


def test_a_refused_request_takes_no_token() -> None:
    buckets = TokenBuckets(1.0, 1, max_clients=10)
    assert waits(buckets, "a", [0, 0.5, 0.6, 1.0]) == [0, 0.5, 0.4, 0]


def test_each_client_has_its_own_bucket() -> None:
    buckets = TokenBuckets(1.0, 2, max_clients=10)
    assert waits(buckets, "a", [0, 0, 0]) == [0, 0, 1.0]
    assert waits(buckets, "b", [0, 0]) == [0, 0]


def test_the_client_seen_least_recently_is_forgotten_first() -> None:
    buckets = TokenBuckets(0.001, 1, max_clients=2)
    assert waits(buckets, "a", [0]) == waits(buckets, "b", [0]) == [0]
    assert buckets.take("a", 1) > 0  # (a is now the most recent)
    assert buckets.take("c", 2) == 0 and len(buckets) == 2  # b is forgotten, not a
    assert buckets.take("a", 3) > 0
    assert buckets.take("b", 4) == 0  # back, full


@pytest.mark.parametrize(("rate", "burst", "clients"), [(0, 1, 1), (1, 0, 1), (1, 1, 0)])
def test_nonsense_limits_are_refused(rate: float, burst: int, clients: int) -> None:
    with pytest.raises(ValueError, match="need rate_per_s > 0"):
        TokenBuckets(rate, burst, clients)
