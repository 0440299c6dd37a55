"""Forward fill (docs/design/scheduling.md#forward-fill): start position, full/partial intervals, limits, holes in
dependencies."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from cbt.scheduling import bounds as bnd
from cbt.scheduling.coverage import Range
from cbt.scheduling.forward import FillPlan, plan_forward
from cbt.scheduling.plan import effective_coverage
from tests.unit.scheduling.factories import ext, inc, models_of, snapshot


def _forward(
    src: Range,
    own: Sequence[Range] = (),
    *,
    slots: int = 8,
    in_flight: Sequence[Range] = (),
    **model_kwargs: Any,
) -> FillPlan:
    model = inc("an.target", ["src.data"], **model_kwargs)
    state = snapshot(bounds={"src.data": src}, coverage={"an.target": own}, in_flight={"an.target": in_flight})
    ready = bnd.readiness(model, models_of(ext("src.data"), model), state)
    return plan_forward(model, ready, effective_coverage(model.id, state), slots)


@pytest.mark.parametrize(
    ("src", "own", "slots", "kwargs", "expected"),
    [
        pytest.param((0, 1050), [(900, 1000)], 8, {"imin": 20}, [(1000, 1050)], id="spec-partial-interval"),
        pytest.param((0, 1001), [(0, 1000)], 8, {"imin": 0}, [(1000, 1001)], id="partial-min-zero"),
        pytest.param(
            (0, 2000), [(0, 1000)], 3, {}, [(1000, 1100), (1100, 1200), (1200, 1300)], id="consecutive-up-to-slots"
        ),
        pytest.param((500, 800), [], 8, {}, [(500, 600), (600, 700), (700, 800)], id="tail-starts-at-min-valid"),
        pytest.param((500, 800), [], 8, {"direction": "head"}, [(700, 800)], id="head-starts-one-interval-back"),
        pytest.param((500, 550), [], 8, {"direction": "head", "imin": 20}, [(500, 550)], id="head-not-below-min-valid"),
        pytest.param((0, 5000), [(0, 1000)], 8, {"limits": (None, 1050)}, [(1000, 1050)], id="clipped-to-limits-max"),
        pytest.param(
            (0, 5000), [(0, 100)], 2, {"limits": (500, None)}, [(500, 600), (600, 700)], id="frontier-below-min"
        ),
        pytest.param(
            (0, 1000),
            [(0, 100), (300, 400)],
            8,
            {},
            [(400, 500), (500, 600), (600, 700), (700, 800), (800, 900), (900, 1000)],
            id="continues-from-highest-end",
        ),
        pytest.param((0, 1300), [(0, 1000)], 8, {"buffer": 200}, [(1000, 1100)], id="buffer"),
    ],
)
def test_forward_tasks(src: Range, own: list[Range], slots: int, kwargs: dict[str, Any], expected: list[Range]) -> None:
    assert list(_forward(src, own, slots=slots, **kwargs).tasks) == expected


@pytest.mark.parametrize(
    ("src", "own", "kwargs", "waiting_has"),
    [
        pytest.param((0, 1010), [(0, 1000)], {"imin": 20}, "interval.min 20", id="partial-below-interval-min"),
        pytest.param((0, 1050), [(0, 1000)], {}, "valid range ends at 1050", id="no-partial-when-min-equals-max"),
        pytest.param((0, 1000), [(0, 1000)], {}, None, id="caught-up"),
        pytest.param((0, 5000), [(0, 1050)], {"limits": (None, 1050)}, None, id="at-limits-max"),
    ],
)
def test_forward_waits(src: Range, own: list[Range], kwargs: dict[str, Any], waiting_has: str | None) -> None:
    plan = _forward(src, own, **kwargs)
    assert plan.tasks == ()
    if waiting_has is None:
        assert plan.waiting is None
    else:
        assert plan.waiting is not None and waiting_has in plan.waiting


def test_in_flight_tasks_are_not_planned_again() -> None:
    plan = _forward((0, 1300), [(0, 1000)], in_flight=[(1000, 1100)], slots=8)
    assert list(plan.tasks) == [(1100, 1200), (1200, 1300)]


def test_out_of_slots_is_reported() -> None:
    plan = _forward((0, 2000), [(0, 1000)], slots=1)
    assert plan.tasks == ((1000, 1100),)
    assert plan.is_out_of_slots


def _holey(gap_skipping: bool, slots: int = 3) -> FillPlan:
    model = inc("an.target", ["an.up"], gap_skipping=gap_skipping)
    state = snapshot(coverage={"an.up": [(0, 300), (400, 1000)], "an.target": [(0, 200)]})
    ready = bnd.readiness(model, models_of(inc("an.up"), model), state)
    return plan_forward(model, ready, effective_coverage(model.id, state), slots)


def test_hole_in_transformation_dependency_blocks_forward_fill() -> None:
    plan = _holey(gap_skipping=False)
    assert plan.tasks == ((200, 300),)
    assert plan.waiting is not None and "an.up" in plan.waiting and "[300, 400)" in plan.waiting


def test_gap_skipping_jumps_past_the_hole() -> None:
    plan = _holey(gap_skipping=True)
    assert plan.tasks == ((200, 300), (400, 500), (500, 600))
