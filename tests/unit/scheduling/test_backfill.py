"""Backfill (SPEC §5.3): every gap, aligned cutting, interval.min widening, newest first, many per tick."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from cbt.scheduling import bounds as bnd
from cbt.scheduling.backfill import cut, plan_backfill
from cbt.scheduling.coverage import Range
from cbt.scheduling.forward import FillPlan
from cbt.scheduling.plan import effective_coverage
from tests.unit.scheduling.factories import ext, inc, models_of, snapshot


def _backfill(
    own: Sequence[Range],
    *,
    src: Range = (0, 1000),
    slots: int = 16,
    in_flight: Sequence[Range] = (),
    **model_kwargs: Any,
) -> FillPlan:
    model = inc("an.target", ["src.data"], **model_kwargs)
    state = snapshot(bounds={"src.data": src}, coverage={"an.target": own}, in_flight={"an.target": in_flight})
    ready = bnd.readiness(model, models_of(ext("src.data"), model), state)
    return plan_backfill(model, ready, effective_coverage(model.id, state), slots)


def test_cut_aligns_to_the_end_newest_first() -> None:
    assert list(cut((300, 650), 100)) == [(550, 650), (450, 550), (350, 450), (300, 350)]
    assert list(cut((0, 200), 100)) == [(100, 200), (0, 100)]


BACKFILL_ONLY: dict[str, Any] = {"forward": ""}


@pytest.mark.parametrize(
    ("own", "kwargs", "expected"),
    [
        pytest.param(
            [(0, 300), (650, 1000)],
            {},
            [(550, 650), (450, 550), (350, 450), (250, 350)],
            id="gap-in-middle-remainder-widened-down",
        ),
        pytest.param(
            [(0, 300), (650, 1000)],
            {"imin": 20},
            [(550, 650), (450, 550), (350, 450), (300, 350)],
            id="remainder-above-interval-min-kept",
        ),
        pytest.param(
            [(550, 1000)],
            {},
            [(450, 550), (350, 450), (250, 350), (150, 250), (50, 150), (0, 100)],
            id="leading-gap-remainder-widened-up",
        ),
        pytest.param([(0, 100), (200, 300), (400, 1000)], {}, [(300, 400), (100, 200)], id="newest-gap-first"),
        pytest.param(
            [],
            BACKFILL_ONLY,
            [
                (900, 1000),
                (800, 900),
                (700, 800),
                (600, 700),
                (500, 600),
                (400, 500),
                (300, 400),
                (200, 300),
                (100, 200),
                (0, 100),
            ],
            id="backfill-only-model-without-coverage-starts",
        ),
        pytest.param(
            [(300, 600)],
            BACKFILL_ONLY,
            [(900, 1000), (800, 900), (700, 800), (600, 700), (200, 300), (100, 200), (0, 100)],
            id="gaps-at-both-ends-backfill-only",
        ),
        pytest.param([(300, 600)], {}, [(200, 300), (100, 200), (0, 100)], id="trailing-part-belongs-to-forward"),
        pytest.param([], {}, [], id="forward-enabled-without-frontier-waits"),
        pytest.param(
            [(0, 950)], {**BACKFILL_ONLY, "limits": (None, 1000)}, [(900, 1000)], id="closed-end-remainder-widened"
        ),
    ],
)
def test_backfill_tasks(own: list[Range], kwargs: dict[str, Any], expected: list[Range]) -> None:
    assert list(_backfill(own, **kwargs).tasks) == expected


def test_concurrency_limit_spans_gaps() -> None:
    plan = _backfill([(0, 100), (200, 300), (400, 1000)], slots=1)
    assert plan.tasks == ((300, 400),)
    assert plan.is_out_of_slots


def test_in_flight_tasks_are_not_planned_again() -> None:
    plan = _backfill([(0, 100), (900, 1000)], in_flight=[(700, 900)])
    assert plan.tasks[0] == (600, 700)
    assert all(end <= 700 for _, end in plan.tasks)


def test_open_end_of_backfill_only_model_waits_for_a_full_interval_min() -> None:
    plan = _backfill([(0, 950)], **BACKFILL_ONLY)
    assert plan.tasks == ()
    assert plan.waiting is not None and "waiting for more data" in plan.waiting


def test_remainder_that_cannot_be_widened_inside_the_valid_range_waits() -> None:
    plan = _backfill([], src=(0, 50), limits=(None, 50), **BACKFILL_ONLY)
    assert plan.tasks == ()
    assert plan.waiting is not None and "cannot be widened" in plan.waiting


def test_hole_in_dependency_splits_the_gap() -> None:
    model = inc("an.target", ["an.up"])
    state = snapshot(coverage={"an.up": [(0, 400), (500, 1000)], "an.target": [(0, 100), (900, 1000)]})
    ready = bnd.readiness(model, models_of(inc("an.up"), model), state)
    plan = plan_backfill(model, ready, effective_coverage(model.id, state), 16)
    assert list(plan.tasks) == [(800, 900), (700, 800), (600, 700), (500, 600), (300, 400), (200, 300), (100, 200)]
    assert plan.waiting is not None and "an.up" in plan.waiting and "[400, 500)" in plan.waiting
