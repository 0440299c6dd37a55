"""What backfill tells about the gaps it examined (the original CBT's ``cbt_backfill_gaps_analyzed_total`` and
``cbt_backfill_gap_check_limit_reached_total``): each gap fillable or blocked, and whether it stopped, its task
slots full, with ready gaps left."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from cbt.scheduling import bounds as bnd
from cbt.scheduling.backfill import plan_backfill
from cbt.scheduling.coverage import Range
from cbt.scheduling.forward import GapTally
from cbt.scheduling.plan import effective_coverage, plan_model
from tests.unit.scheduling.factories import ext, inc, models_of, snapshot


def over_source(own: Sequence[Range], slots: int) -> GapTally:
    model = inc("an.target", ["src.data"])
    state = snapshot(bounds={"src.data": (0, 1000)}, coverage={"an.target": own})
    ready = bnd.readiness(model, models_of(ext("src.data"), model), state)
    return plan_backfill(model, ready, effective_coverage(model.id, state), slots).gaps


@pytest.mark.parametrize(
    ("own", "slots", "expected"),
    [
        pytest.param([(0, 1000)], 16, GapTally(0, 0, False), id="no-gap"),
        pytest.param([(0, 100), (200, 300), (400, 1000)], 16, GapTally(2, 0, False), id="two-gaps-all-planned"),
        # the newest gap gets the only slot; the next one is reached, found ready, and left: the limit
        pytest.param([(0, 100), (200, 300), (400, 1000)], 1, GapTally(2, 0, True), id="slots-full-with-gaps-left"),
        pytest.param([(0, 300), (400, 1000)], 1, GapTally(1, 0, False), id="one-slot-one-interval"),
    ],
)
def test_gaps_examined(own: list[Range], slots: int, expected: GapTally) -> None:
    assert over_source(own, slots) == expected


def test_a_gap_inside_a_dependency_s_hole_is_blocked() -> None:
    model = inc("an.target", ["an.up"])
    state = snapshot(coverage={"an.up": [(0, 400), (500, 1000)], "an.target": [(0, 100), (200, 400), (500, 1000)]})
    ready = bnd.readiness(model, models_of(inc("an.up"), model), state)
    assert plan_backfill(model, ready, effective_coverage(model.id, state), 16).gaps == GapTally(1, 1, False)


def test_the_model_plan_carries_backfill_s_tally_and_the_batched_limit() -> None:
    model = inc("an.target", ["src.data"], forward="")
    models = models_of(ext("src.data"), model)
    state = snapshot(bounds={"src.data": (0, 1000)}, coverage={"an.target": [(0, 100), (200, 300), (400, 1000)]})
    assert plan_model(model, models, state, concurrency=16).backfill_gaps == GapTally(2, 0, False)
    assert plan_model(model, models, state, concurrency=1).backfill_gaps == GapTally(2, 0, True)
    assert plan_model(model, models, state, concurrency=16, directions=("forward",)).backfill_gaps == GapTally()
