"""A token bucket per client: pure, the clock passed in.

Each client's bucket holds up to ``burst`` tokens and refills at ``rate_per_s``; a request takes one. A client that
finds its bucket empty is told how long until the next token. At most ``max_clients`` buckets are kept: the one used
least recently is forgotten first (it comes back full, as after a quiet spell).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass


@dataclass
class _Bucket:
    tokens: float
    at_s: float


class TokenBuckets:
    def __init__(self, rate_per_s: float, burst: int, max_clients: int) -> None:
        if rate_per_s <= 0 or burst < 1 or max_clients < 1:
            raise ValueError(f"need rate_per_s > 0, burst >= 1, max_clients >= 1; got {rate_per_s}, {burst}, "
                             f"{max_clients}")
        self.rate_per_s = rate_per_s
        self.burst = burst
        self.max_clients = max_clients
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()

    def take(self, client: str, now_s: float) -> float:
        """Take one token from ``client``'s bucket: 0.0 when there was one, else the seconds until there is."""
        bucket = self._buckets.pop(client, None)
        if bucket is None:
            bucket = _Bucket(float(self.burst), now_s)
        else:
            elapsed_s = max(0.0, now_s - bucket.at_s)
            bucket = _Bucket(min(float(self.burst), bucket.tokens + elapsed_s * self.rate_per_s), now_s)
        self._buckets[client] = bucket
        while len(self._buckets) > self.max_clients:
            self._buckets.popitem(last=False)
        if bucket.tokens >= 1:
            bucket.tokens -= 1
            return 0.0
        return (1 - bucket.tokens) / self.rate_per_s

    def __len__(self) -> int:
        return len(self._buckets)
