"""The state a plan is computed from, as one immutable value, and the port that reads it.

Planning is pure: adapters (Redis hot index, Delta admin tables, the bounds cache) fill a ``StateSnapshot``
through a ``StateReader``; ``cbt plan --state FILE`` fills it from a JSON file instead. Nothing here does I/O.

JSON form (what ``cbt plan --state`` reads)::

    {"bounds":    {"db.table": {"min": 1000, "max": 5000}},  # externals: raw, max exclusive, no lag
     "coverage":  {"db.table": [[0, 100], [200, 300]]},       # transformations: half-open, any order
     "in_flight": {"db.table": [[300, 400]]},                 # optional: tasks enqueued or running
     "reruns":    {"db.table": [[100, 200]]},                 # optional: invalidated tasks to run again
     "now": 1700000000}                                       # optional, informational

A bounds entry whose ``min`` or ``max`` is ``null`` means the table is empty (no data), like a missing entry.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from cbt.base.errors import CbtError
from cbt.models.spec import ModelId
from cbt.scheduling import coverage as cov
from cbt.scheduling.coverage import Coverage, Range

KNOWN_KEYS = ("bounds", "coverage", "in_flight", "reruns", "skipped", "now")


class StateFileError(CbtError):
    """A state snapshot file is malformed; the message names the JSON path of the problem."""


@dataclass(frozen=True)
class RawBounds:
    """An external table's scanned bounds: positions ``[min, max)`` exist, before ``lag`` is applied."""

    min: int
    max: int


@dataclass(frozen=True)
class StateSnapshot:
    """Everything the planner reads, at one moment.

    ``bounds``: raw external bounds (a missing entry means not scanned yet: no data). ``coverage``: completed ranges
    per incremental transformation (missing means nothing completed). ``in_flight``: the ranges of tasks already
    enqueued or running per model, one entry per task (they are never planned again and count against the model's
    concurrency limit). ``reruns``: per model, the tasks invalidations removed that have not run again (each is
    planned whole, once). ``skipped``: per model, ranges an operator told the scheduler to stop trying (a range that
    cannot succeed): never planned, still a gap to dependents. ``now``: unix seconds, informational only (planning
    never depends on the clock). ``never_ran``: scheduled transformations known not to have completed a run yet —
    they offer no data until their first success (a state file cannot say so: there every scheduled model counts as
    run). ``coverage_known``: False while the live coverage index is being rebuilt (Redis emptied): nothing is
    planned then, since a missing coverage may mean "lost", not "never ran".
    """

    bounds: Mapping[ModelId, RawBounds] = field(default_factory=dict)
    coverage: Mapping[ModelId, Coverage] = field(default_factory=dict)
    in_flight: Mapping[ModelId, tuple[Range, ...]] = field(default_factory=dict)
    reruns: Mapping[ModelId, tuple[Range, ...]] = field(default_factory=dict)
    skipped: Mapping[ModelId, Coverage] = field(default_factory=dict)
    now: int | None = None
    never_ran: frozenset[ModelId] = frozenset()
    coverage_known: bool = True


class StateReader(Protocol):
    """Reads a consistent snapshot of bounds, coverage and in-flight tasks for the given models."""

    def read_snapshot(self, model_ids: Collection[ModelId]) -> StateSnapshot: ...


@dataclass(frozen=True)
class StaticStateReader:
    """A ``StateReader`` over a fixed snapshot (``--state FILE``, tests)."""

    snapshot: StateSnapshot

    def read_snapshot(self, model_ids: Collection[ModelId]) -> StateSnapshot:
        del model_ids
        return self.snapshot


def snapshot_from_json(data: object) -> tuple[StateSnapshot, list[str]]:
    """A snapshot from parsed JSON, with warnings (unknown top-level keys are ignored, not fatal).

    Raises ``StateFileError`` naming the JSON path of the first malformed value.
    """
    if not isinstance(data, dict):
        raise StateFileError(f"$: expected an object with keys {', '.join(KNOWN_KEYS)}, got {_kind(data)}")
    warnings = [
        f"$.{key}: unknown key ignored (known: {', '.join(KNOWN_KEYS)})" for key in data if key not in KNOWN_KEYS
    ]
    now = data.get("now")
    if now is not None and not _is_position(now):
        raise StateFileError(f"$.now: expected a non-negative integer or null, got {now!r}")
    snapshot = StateSnapshot(
        bounds=_parse_bounds(data.get("bounds", {})),
        coverage={k: cov.merge(v) for k, v in _parse_range_map(data.get("coverage", {}), "coverage").items()},
        in_flight=_parse_range_map(data.get("in_flight", {}), "in_flight"),
        reruns=_parse_range_map(data.get("reruns", {}), "reruns"),
        skipped={k: cov.merge(v) for k, v in _parse_range_map(data.get("skipped", {}), "skipped").items()},
        now=now,
    )
    return snapshot, warnings


def _parse_bounds(raw: object) -> dict[ModelId, RawBounds]:
    out: dict[ModelId, RawBounds] = {}
    for model_id, entry in _object(raw, "$.bounds").items():
        where = f"$.bounds[{model_id!r}]"
        if not isinstance(entry, dict) or set(entry) - {"min", "max"}:
            raise StateFileError(f'{where}: expected {{"min": int, "max": int}}, got {entry!r}')
        low, high = entry.get("min"), entry.get("max")
        if low is None or high is None:
            continue  # an empty table: no data, same as not scanned
        if not (_is_position(low) and _is_position(high)):
            raise StateFileError(f"{where}: min and max must be non-negative integers, got {entry!r}")
        out[model_id] = RawBounds(min=low, max=high)
    return out


def _parse_range_map(raw: object, key: str) -> dict[ModelId, tuple[Range, ...]]:
    out: dict[ModelId, tuple[Range, ...]] = {}
    for model_id, ranges in _object(raw, f"$.{key}").items():
        where = f"$.{key}[{model_id!r}]"
        if not isinstance(ranges, list):
            raise StateFileError(f"{where}: expected a list of [start, end] pairs, got {_kind(ranges)}")
        out[model_id] = tuple(_parse_range(r, f"{where}[{i}]") for i, r in enumerate(ranges))
    return out


def _parse_range(raw: object, where: str) -> Range:
    if not isinstance(raw, list) or len(raw) != 2 or not all(_is_position(x) for x in raw) or raw[0] > raw[1]:
        raise StateFileError(f"{where}: expected [start, end] with 0 <= start <= end (half-open), got {raw!r}")
    return (raw[0], raw[1])


def _object(raw: object, where: str) -> dict[str, object]:
    if not isinstance(raw, dict):
        raise StateFileError(f"{where}: expected an object keyed by model id, got {_kind(raw)}")
    return raw


def _is_position(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__
