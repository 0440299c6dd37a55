"""What an invalidation removes (SPEC §8): per model, the coverage ranges to drop so they are re-run. Pure.

Ranges are half-open ``[start, end)``. Every model of a pipeline shares one position domain (the loader checks that
a model's ``interval.type`` equals its dependencies'), so positions ``[s, e)`` of a dependency feed positions
``[s, e)`` of its dependents.

The rule, per incremental model M (the named one, then with ``cascade`` every descendant, parents first):

* M's *input* is the invalidated range if M is the named model, plus what every affected dependency of M had
  affected (so a dependency re-run over a widened range counts as changed over all of it);
* M's input is widened outward to multiples of M's ``interval.max`` — the model's own grid: an hourly model loses
  whole hours, never a few minutes of one, so it is re-run in whole intervals;
* every in-flight task of M that overlaps the widened range is added whole, so its completion is refused and its
  admin row removed whole (``cbt.state.ports``: a task that read the old data must not mark anything covered).

Removing more than was covered is harmless (a removal of uncovered positions changes nothing, and a re-run is
idempotent); removing less would leave stale rows, so every choice here errs wide. The result does not depend on
coverage, so a redelivered event maps to the same ranges. External models have no coverage: only their
descendants lose any. Scheduled models have no positions: they are listed, keep their runs, and the cascade does
not pass through them (they refresh on their own schedule).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cbt.contract.messages import Invalidation, InvalidationRejected
from cbt.models.dag import ModelSet, UnknownModel
from cbt.models.spec import ExternalModel, IncrementalModel, ModelId
from cbt.scheduling.coverage import Coverage, Range, merge


@dataclass(frozen=True)
class Impact:
    """The ranges an invalidation removes per incremental model, and the scheduled models it reached."""

    ranges: Mapping[ModelId, Coverage] = field(default_factory=dict)
    """Every affected incremental model, in topological order (parents first), with merged ranges."""
    scheduled: tuple[ModelId, ...] = ()

    @property
    def models(self) -> tuple[ModelId, ...]:
        return tuple(self.ranges)


def snap(r: Range, interval: int) -> Range:
    """``r`` widened outward to multiples of ``interval`` (an empty range stays as it is)."""
    start, end = r
    if start >= end:
        return r
    return (start // interval * interval, -(-end // interval) * interval)


def _overlaps(a: Range, b: Range) -> bool:
    return max(a[0], b[0]) < min(a[1], b[1])


def _incremental_ranges(model: IncrementalModel, inputs: Coverage, in_flight: Sequence[Range]) -> Coverage:
    widened = merge(snap(r, model.interval.max) for r in inputs)
    running = [t for t in in_flight if any(_overlaps(t, w) for w in widened)]
    return merge([*widened, *running])


def impact(
    models: ModelSet,
    model_id: ModelId,
    rng: Range,
    *,
    cascade: bool = True,
    in_flight: Mapping[ModelId, Sequence[Range]] | None = None,
) -> Impact:
    """The ranges to remove when ``rng`` of ``model_id`` is invalidated (see the module docstring)."""
    running = in_flight or {}
    order = (model_id, *models.descendants(model_id)) if cascade else (model_id,)
    inputs: dict[ModelId, list[Range]] = {model_id: [rng]}
    ranges: dict[ModelId, Coverage] = {}
    scheduled: list[ModelId] = []
    for current in order:
        model = models.models[current]
        received = merge(inputs.get(current, ()))
        if not received:
            continue
        if isinstance(model, ExternalModel):
            changed = received
        elif isinstance(model, IncrementalModel):
            changed = ranges[current] = _incremental_ranges(model, received, running.get(current, ()))
        else:
            scheduled.append(current)
            continue
        if cascade:
            for dependent in models.dependents(current):
                inputs.setdefault(dependent, []).extend(changed)
    return Impact(ranges, tuple(scheduled))


def why_rejected(models: ModelSet, event: Invalidation, max_range: int) -> str | None:
    """Why a well-formed event cannot be applied here (unknown model, range too wide), or ``None``."""
    try:
        models.resolve(event.model)
    except UnknownModel as e:  # no such model, or a table name several databases have
        return f"model: {e}"
    if event.end - event.start > max_range:
        return (f"range [{event.start}, {event.end}) spans {event.end - event.start} positions, more than "
                f"invalidator.max_range ({max_range}); split it or raise the limit")
    return None


def event_schemas() -> dict[str, dict[str, Any]]:
    """JSON Schemas (draft 2020-12) of the ``invalidation`` and ``invalidation-rejected`` bodies, by file name."""
    out: dict[str, dict[str, Any]] = {}
    for name, message in (("invalidation", Invalidation), ("invalidation-rejected", InvalidationRejected)):
        schema = message.model_json_schema(mode="validation")
        out[f"{name}.schema.json"] = {"$schema": "https://json-schema.org/draft/2020-12/schema",
                                      "$id": f"https://cbt.invalid/schemas/{name}.schema.json", **schema}
    return out


def schema_text(schema: Mapping[str, Any]) -> str:
    """The committed form of a schema: sorted keys, two-space indent, a final newline."""
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"
