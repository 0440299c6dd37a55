"""The invalidation mapping (docs/design/invalidations.md#what-an-invalidation-re-runs): which tasks each model re-runs,
and the event schemas."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from cbt.contract.messages import Invalidation
from cbt.models.dag import ModelSet
from cbt.models.spec import Model
from cbt.scheduling.coverage import Range
from cbt.scheduling.invalidation import impact, most_tasks, reach, snap, why_rejected
from cbt.scheduling.protocol import UNKNOWN_STEP, Piece
from cbt.scheduling.task_runs import TaskRun, all_tasks
from tests.unit.scheduling.factories import ext, inc, models_of, sched

SCHEMAS = Path(__file__).resolve().parents[2] / "docs" / "schemas"

# ext.blocks -> an.minute (60) -> an.two (120) -> an.five (300) -> an.report (scheduled) -> an.after (60)
#            \-> an.hourly (3600)                   ext.tx -> an.tx (60)
PIPELINE: tuple[Model, ...] = (
    ext("ext.blocks"),
    ext("ext.tx"),
    inc("an.minute", ["ext.blocks"], imax=60, imin=12),
    inc("an.two", ["an.minute"], imax=120),
    inc("an.five", ["an.two"], imax=300, imin=120),
    inc("an.hourly", ["ext.blocks"], imax=3600),
    inc("an.tx", ["ext.tx"], imax=60),
    inc("an.after", ["an.report"], imax=60),
)


def model_set(*extra: Model) -> ModelSet:
    models = models_of(*PIPELINE, replace(sched("an.report"), dependencies=("an.five",)), *extra)
    return ModelSet(models)


def ranges_of(result: Mapping[str, Sequence[TaskRun]]) -> dict[str, list[Range]]:
    """The tasks of each model's runs, one by one (what the runs stand for)."""
    return {m: list(all_tasks(r)) for m, r in result.items()}


@pytest.mark.parametrize(
    ("rng", "interval", "expected"),
    [
        pytest.param((120, 180), 60, (120, 180), id="exact-interval"),
        pytest.param((130, 170), 60, (120, 180), id="inside-one-interval"),
        pytest.param((170, 190), 60, (120, 240), id="straddles-two-intervals"),
        pytest.param((0, 1), 3600, (0, 3600), id="one-position"),
    ],
)
def test_snap_widens_outward_to_the_models_grid(rng: Range, interval: int, expected: Range) -> None:
    assert snap(rng, interval) == expected


def ran(**pieces: list[tuple[int, int, int]]) -> dict[str, list[Piece]]:
    """Live pieces per model from ``an_minute=[(start, end, step), ...]``."""
    return {k.replace("_", ".", 1): [Piece((s, e), step) for s, e, step in v] for k, v in pieces.items()}


GRID = ran(an_minute=[(0, 3600, 60)], an_two=[(0, 3600, 120)], an_five=[(0, 3600, 300)],
           an_hourly=[(0, 3600, 3600)], an_tx=[(0, 3600, 60)])
"""Every model ran every interval on its own grid from 0."""


def test_exact_interval_of_a_transformation_re_runs_only_that_interval() -> None:
    result = impact(model_set(), "an.minute", (120, 180), cascade=False, ran=GRID)
    assert ranges_of(result.ranges) == {"an.minute": [(120, 180)]}


def test_partial_overlap_re_runs_each_whole_task_it_touches() -> None:
    result = impact(model_set(), "an.two", (130, 250), cascade=False, ran=GRID)
    assert ranges_of(result.ranges) == {"an.two": [(120, 240), (240, 360)]}


def test_the_tasks_that_ran_are_re_run_at_their_own_offsets_not_on_a_grid() -> None:
    """Scenario 10 of issue 10: a 300-position model whose tasks started at 17 re-runs [317, 617), not [300, 600)."""
    result = impact(model_set(), "an.five", (400, 410), cascade=False, ran=ran(an_five=[(17, 617, 300)]))
    assert ranges_of(result.ranges) == {"an.five": [(317, 617)]}


def test_positions_nothing_ran_over_need_no_re_run() -> None:
    result = impact(model_set(), "an.minute", (120, 180), cascade=False, ran=ran(an_minute=[(0, 120, 60)]))
    assert ranges_of(result.ranges) == {"an.minute": []}


def test_cascade_passes_each_models_re_run_tasks_down() -> None:
    result = impact(model_set(), "ext.blocks", (245, 250), ran=GRID)
    assert ranges_of(result.ranges) == {
        "an.minute": [(240, 300)],
        "an.two": [(240, 360)],
        "an.five": [(0, 300), (300, 600)],
        "an.hourly": [(0, 3600)],
    }


def test_a_dependent_re_runs_over_the_range_even_where_its_parent_had_nothing_to_re_run() -> None:
    result = impact(model_set(), "ext.blocks", (245, 250), ran=ran(an_two=[(0, 600, 120)]))
    assert ranges_of(result.ranges)["an.two"] == [(240, 360)]


def test_models_come_parents_first() -> None:
    order = impact(model_set(), "ext.blocks", (0, 10)).models
    assert order.index("an.minute") < order.index("an.two") < order.index("an.five")


def test_external_model_itself_loses_nothing_only_its_descendants() -> None:
    result = impact(model_set(), "ext.tx", (61, 62), ran=GRID)
    assert ranges_of(result.ranges) == {"an.tx": [(60, 120)]}


def test_no_cascade_on_an_external_model_removes_nothing() -> None:
    assert impact(model_set(), "ext.blocks", (0, 100), cascade=False, ran=GRID).ranges == {}


def test_no_cascade_keeps_descendants() -> None:
    result = impact(model_set(), "an.minute", (0, 60), cascade=False, ran=GRID)
    assert set(result.ranges) == {"an.minute"}


def test_scheduled_descendant_is_listed_and_the_cascade_stops_there() -> None:
    result = impact(model_set(), "an.two", (0, 120), ran=GRID)
    assert result.scheduled == ("an.report",)
    assert "an.after" not in result.ranges
    assert set(result.ranges) == {"an.two", "an.five"}


def test_unrelated_models_are_untouched() -> None:
    result = impact(model_set(), "ext.blocks", (0, 60), ran=GRID)
    assert "an.tx" not in result.ranges


def test_an_overlapping_in_flight_task_is_re_run_whole() -> None:
    in_flight = {"an.minute": [(217, 277), (400, 460)], "an.two": [(480, 600)]}
    result = impact(model_set(), "ext.blocks", (245, 250), in_flight=in_flight, ran=GRID)
    assert ranges_of(result.ranges)["an.minute"] == [(217, 277), (240, 300)]
    assert ranges_of(result.ranges)["an.two"] == [(120, 240), (240, 360)], "reached from the in-flight [217, 277)"


def test_a_task_overlapping_a_re_run_one_but_not_the_range_is_not_re_run() -> None:
    """A short gap widened to interval.min overlaps its neighbours; only the tasks over the range read changed data
    (found by the reorg e2e: a five-minute task next to the re-run one was re-run too)."""
    rows = ran(an_five=[(0, 300, 300), (300, 420, 120), (400, 520, 120)])
    result = impact(model_set(), "an.five", (310, 320), cascade=False, ran=rows)
    assert ranges_of(result.ranges) == {"an.five": [(300, 420)]}


def test_rows_consolidated_without_task_boundaries_fall_back_to_the_models_grid() -> None:
    rows = ran(an_two=[(0, 600, UNKNOWN_STEP)])
    result = impact(model_set(), "an.two", (130, 250), cascade=False, ran=rows)
    assert ranges_of(result.ranges) == {"an.two": [(120, 360)]}


def test_a_model_fed_by_two_affected_parents_gets_the_union() -> None:
    join = inc("an.join", ["an.minute", "an.hourly"], imax=60)
    result = impact(model_set(join), "ext.blocks", (245, 250), ran={**GRID, **ran(an_join=[(0, 7200, 60)])})
    assert ranges_of(result.ranges)["an.join"] == [(s, s + 60) for s in range(0, 3600, 60)]


def test_reach_holds_every_task_the_cascade_can_reach() -> None:
    assert reach(model_set(), "an.five", (1000, 1010)) == (280, 1730), "an.five (300) and an.after (60)"
    assert reach(model_set(), "an.five", (10, 20), cascade=False) == (0, 620)


def test_reach_widens_along_the_longest_path_not_by_every_descendant() -> None:
    """Siblings do not feed each other: a re-run cascades along dependency paths only (at scale, summing every
    descendant made the invalidator read millions of positions around a small range)."""
    siblings = [inc(f"an.sibling{i}", ["an.five"], imax=600) for i in range(5)]
    assert reach(model_set(*siblings), "an.five", (10_000, 10_010)) == (10_000 - 1800, 10_010 + 1800)


def event(**fields: object) -> Invalidation:
    base: dict[str, object] = {"id": "e1", "model": "an.minute", "start": 0, "end": 60, "reason": "reorg",
                               "source": "test"}
    return Invalidation.model_validate({**base, **fields})


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        pytest.param({"model": "an.nope"}, "model: no model 'an.nope'", id="unknown-model"),
        pytest.param({"start": 0, "end": 10**12 + 1}, "more than invalidator.max_range", id="huge-range"),
        pytest.param({"start": 0, "end": 10 * 365 * 86400}, "tasks over 5 models, more than "
                     "invalidator.max_tasks (100000)", id="a-decade-of-the-chain"),
    ],
)
def test_well_formed_events_that_cannot_apply_say_why(fields: dict[str, object], reason: str) -> None:
    why = why_rejected(model_set(), event(**fields), 10**12, 100_000)
    assert why is not None and reason in why


@pytest.mark.parametrize("name", ["an.minute", "minute", "blocks"])
def test_known_models_by_id_or_unique_table_name_are_accepted(name: str) -> None:
    assert why_rejected(model_set(), event(model=name), 10**12, 100_000) is None


def test_range_exactly_at_the_limit_is_accepted() -> None:
    assert why_rejected(model_set(), event(start=0, end=1000), 1000, 100_000) is None


def test_schema_describes_the_required_fields() -> None:
    schema = json.loads((SCHEMAS / "invalidation.schema.json").read_text(encoding="utf-8"))
    assert set(schema["required"]) == {"id", "model", "start", "end", "reason", "source"}
    assert schema["additionalProperties"] is False


def test_most_tasks_bounds_what_impact_lists_when_every_task_ran() -> None:
    """The refusal comes before anything is read; the bound holds when every position of every model ran, each model
    in tasks of its interval.min (the most there can be)."""
    models, rng = model_set(), (600, 1200)
    window = reach(models, "an.minute", rng)
    pieces = {m.id: [Piece((s, s + m.interval.min), m.interval.min)
                     for s in range(0, window[1] + m.interval.max, m.interval.min)]
              for m in PIPELINE if m.id.startswith("an.")}
    listed = sum(len(r) for r in impact(models, "an.minute", rng, ran=pieces).ranges.values())
    assert 0 < listed <= most_tasks(models, "an.minute", rng)


def test_a_decade_that_ran_is_mapped_to_one_run_per_model_without_listing_its_tasks() -> None:
    """Five million one-minute tasks per model: the mapping's work and result grow with the runs."""
    decade = 10 * 365 * 86400
    ran_everywhere = ran(an_minute=[(0, decade, 60)], an_two=[(0, decade, 120)], an_five=[(0, decade, 300)])
    found = impact(model_set(), "ext.blocks", (0, decade), ran=ran_everywhere)
    assert {m: list(r) for m, r in found.ranges.items()} == {
        "an.minute": [TaskRun(0, decade, 60)], "an.two": [TaskRun(0, decade, 120)],
        "an.five": [TaskRun(0, decade, 300)], "an.hourly": []}
    assert found.task_count == decade // 60 + decade // 120 + decade // 300
