"""A synthetic pipeline for (f) scale: thousands of models in a deep DAG, and their coverage in the hot index.

Layer 0 holds the external models; each later layer holds incremental models that depend on 1-4 models of earlier
layers, one of them always from the layer just above (so the DAG is as deep as it has layers). Picks are skewed
toward the first models of a layer, so a few models feed many, as shared staging tables do; a few dependencies are
OR groups. Every model runs tasks of ``INTERVAL`` positions; coverage starts at 0 with one-interval holes in it,
so a model's intervals are stored as a few merged ranges, not one.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cbt.adapters.redis_state import RedisState
from cbt.models.dag import ModelSet
from cbt.models.spec import (
    Dependency,
    ExternalModel,
    IncrementalModel,
    Interval,
    ModelId,
    Schedules,
    SourceRef,
    all_dependency_ids,
)
from cbt.scheduling.coverage import Coverage
from cbt.scheduling.snapshot import RawBounds

SOURCE = SourceRef("bench/synthetic.py")
INTERVAL = 100
"""Every model's ``interval.max`` and ``interval.min``, in positions (blocks)."""
FAN_IN_WEIGHTS = (4, 3, 2, 1)
"""Relative odds of 1, 2, 3 and 4 dependencies."""
SKEW = 2.0
"""A pick is ``layer[int(len(layer) * random() ** SKEW)]``: the higher, the more a few models feed many."""
OR_GROUP_SHARE = 0.05
"""Share of models with more than one dependency whose last one is an OR group of two models."""


@dataclass(frozen=True)
class Dag:
    models: ModelSet
    layers: tuple[tuple[ModelId, ...], ...]
    """Layer 0: the externals; then the incrementals, layer by layer."""

    @property
    def incrementals(self) -> list[ModelId]:
        return [m for layer in self.layers[1:] for m in layer]

    def shape(self) -> dict[str, Any]:
        """Counts, depth and fan-in/out, for the report."""
        edges = Counter(dep for m in self.models.models.values() for dep in set(all_dependency_ids(m)))
        fan_in = [len(self.models.dependencies(m)) for m in self.incrementals]
        groups = sum(isinstance(d, tuple) for m in self.models.incrementals for d in m.dependencies)
        return {"models": len(self.models), "externals": len(self.layers[0]), "incrementals": len(fan_in),
                "depth": depth(self.models), "edges": sum(edges.values()), "or_groups": groups,
                "mean_fan_in": round(sum(fan_in) / len(fan_in), 2), "max_fan_out": max(edges.values())}


def synthetic_dag(externals: int, incrementals: int, layers: int, seed: int) -> Dag:
    """``externals`` external models and ``incrementals`` incremental ones in ``layers`` layers (see the module)."""
    rng = random.Random(seed)
    tiers: list[tuple[ModelId, ...]] = [tuple(f"ext.source_{i:03d}" for i in range(externals))]
    specs: dict[ModelId, ExternalModel | IncrementalModel] = {
        m: ExternalModel(database="ext", table=m.partition(".")[2], interval_type="block", source=SOURCE)
        for m in tiers[0]}
    for layer, size in enumerate(_sizes(incrementals, layers), start=1):
        tier = []
        for i in range(size):
            model = _incremental(f"layer{layer:02d}", f"model_{i:04d}", _dependencies(rng, tiers))
            specs[model.id] = model
            tier.append(model.id)
        tiers.append(tuple(tier))
    return Dag(ModelSet(specs), tuple(tiers))


def depth(models: ModelSet) -> int:
    """Models on the longest dependency path (externals included)."""
    level: dict[ModelId, int] = {}
    for model_id in models.topological_order():
        level[model_id] = 1 + max((level[d] for d in models.dependencies(model_id)), default=0)
    return max(level.values(), default=0)


def _sizes(total: int, layers: int) -> list[int]:
    per, extra = divmod(total, layers)
    return [per + (i < extra) for i in range(layers)]


def _incremental(database: str, table: str, deps: tuple[Dependency, ...]) -> IncrementalModel:
    return IncrementalModel(database=database, table=table, interval=Interval(INTERVAL, INTERVAL, "block"),
                            schedules=Schedules(forwardfill="@every 1m", backfill="@every 5m"), source=SOURCE,
                            dependencies=deps)


def _pick(rng: random.Random, tier: Sequence[ModelId]) -> ModelId:
    return tier[int(len(tier) * rng.random() ** SKEW)]


def _dependencies(rng: random.Random, tiers: Sequence[Sequence[ModelId]]) -> tuple[Dependency, ...]:
    """One from the layer just above, the others from any earlier layer; maybe the last as an OR group."""
    count = rng.choices(range(1, len(FAN_IN_WEIGHTS) + 1), weights=FAN_IN_WEIGHTS)[0]
    picks = [_pick(rng, tiers[-1]), *(_pick(rng, rng.choice(tiers)) for _ in range(count - 1))]
    deps: list[Dependency] = list(dict.fromkeys(picks))
    if len(deps) > 1 and rng.random() < OR_GROUP_SHARE:
        tier = rng.choice(tiers)
        group = tuple(dict.fromkeys(_pick(rng, tier) for _ in range(2)))
        if len(group) == 2 and not set(group) & set(picks):
            deps[-1] = group
    return tuple(deps)


def layout(rng: random.Random, intervals: int, holes: int) -> Coverage:
    """``intervals`` completed intervals from position 0 with ``holes`` one-interval gaps among them, never the
    first or last interval nor two side by side: ``holes + 1`` ranges, however many intervals."""
    slots = intervals + holes
    gaps = [pick + i for i, pick in enumerate(sorted(rng.sample(range(1, slots - holes), holes)))]
    edges = [0, *(edge for gap in gaps for edge in (gap, gap + 1)), slots]
    return tuple((a * INTERVAL, b * INTERVAL) for a, b in zip(edges[::2], edges[1::2], strict=True) if a < b)


def seed(state: RedisState, dag: Dag, intervals: int, holes: int, seed: int) -> dict[str, Any]:
    """Write ``intervals`` completed intervals over the incrementals (``holes`` gaps each) as a rebuild does, mark
    the index built, and give every external bounds one interval past the furthest coverage."""
    started = time.monotonic()
    rng = random.Random(seed)
    ids = dag.incrementals
    per, extra = divmod(intervals, len(ids))
    versions = state.coverage.versions(ids)
    ranges = 0
    for i, model_id in enumerate(ids):
        coverage = layout(rng, per + (i < extra), holes)
        ranges += len(coverage)
        if not state.coverage.replace_coverage(model_id, coverage, 0, versions[model_id]):
            raise RuntimeError(f"{model_id}: written to while seeding; is the key prefix shared?")
    if not state.coverage.mark_built(int(time.time()), state.coverage.generation()):
        raise RuntimeError("the hot index was emptied while seeding")
    end = (per + 1 + holes + 1) * INTERVAL
    for model_id in dag.layers[0]:
        state.bounds.put_bounds(model_id, RawBounds(0, end))
    return {"completed_intervals": intervals, "holes_per_model": holes, "stored_ranges": ranges,
            "seed_s": round(time.monotonic() - started, 2)}
