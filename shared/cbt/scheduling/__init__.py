"""The scheduling core (docs/design/scheduling.md), pure: values in, values out, no I/O and no clock.

- ``coverage``: merged half-open ranges (add, remove, gaps, frontier).
- ``protocol``: the coverage and invalidation protocol (epochs, live parts, the hot index's marks) both stores
  follow.
- ``state``: the ``StateSnapshot`` planning reads, its ``StateReader`` port, and its JSON form.
- ``bounds``: what each dependency offers, the valid range, and interval readiness.
- ``forward`` / ``backfill``: the two fill directions.
- ``plan``: the whole-model planner the coordinator and ``cbt plan`` call; ``status``: coverage, gaps, lag.
- ``scanning``: when to scan external bounds and how a result updates them;
  ``invalidation``: what an invalidation event removes, per model.
"""
