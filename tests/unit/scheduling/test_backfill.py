"""Backfill (docs/design/scheduling.md#backfill): every gap, aligned cutting, interval.min widening, newest first, many
per tick."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest

from cbt.scheduling import bounds as bnd
from cbt.scheduling.backfill import cut, plan_backfill
from cbt.scheduling.coverage import Range
from cbt.scheduling.forward import FillPlan
from cbt.scheduling.plan import effective_coverage, upstream_of
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


def _chain_backfill(own: Sequence[Range], up: Sequence[Range], *, up_backfill: str = "@every 5m",
                    up_in_flight: Sequence[Range] = (), src: Range = (1000, 4000), imax: int = 900,
                    imin: int | None = None, bounds_known: bool = True) -> FillPlan:
    """``an.top`` (``imax``) over ``an.up`` (300, coverage ``up``) over the source ``src.data``; as ``plan`` asks."""
    upper = inc("an.up", ["src.data"], imax=300, backfill=up_backfill, direction="head")
    top = inc("an.top", ["an.up"], imax=imax, imin=imin, direction="head")
    models = models_of(ext("src.data"), upper, top)
    state = snapshot(bounds={"src.data": src} if bounds_known else {}, coverage={"an.up": up, "an.top": own},
                     in_flight={"an.up": up_in_flight})
    ready = bnd.readiness(top, models, state)
    return plan_backfill(top, ready, effective_coverage(top.id, state), 16, upstream_of(top, models, state))


@pytest.mark.parametrize(
    ("up", "kwargs", "expected"),
    [
        pytest.param([(2800, 4000)], {}, [], id="start-still-moving-down-remainder-waits"),
        pytest.param([(1000, 4000)], {}, [(2200, 3100), (1300, 2200), (1000, 1900)],
                     id="start-at-its-floor-remainder-widened-once"),
        pytest.param([(2800, 4000)], {"up_backfill": ""}, [(2800, 3700)], id="forward-only-dependency-never-moves"),
        pytest.param([(2800, 4000)], {"bounds_known": False}, [(2800, 3700)], id="floor-unknown-widened-as-before"),
    ],
)
def test_short_remainder_at_a_moving_start_waits(up: list[Range], kwargs: dict[str, Any],
                                                 expected: list[Range]) -> None:
    """A 900-position model over a 300-position one catching up backward: widening its 300-position remainder
    upward re-ran 600 covered positions for every 300 its dependency added (3x the work at the bottom)."""
    plan = _chain_backfill([(3100, 4000)], up, **kwargs)
    assert list(plan.tasks) == expected
    if not expected:
        assert plan.waiting is not None and "start to move down to 1000" in plan.waiting


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        pytest.param({}, [(2200, 2500), (1600, 1900), (1300, 1600), (1000, 1300)], id="hole-filled-later-aligned"),
        pytest.param({"up_backfill": "", "up_in_flight": [(2000, 2100)]},
                     [(2200, 2500), (1600, 1900), (1300, 1600), (1000, 1300)], id="hole-in-flight-aligned"),
        pytest.param({"up_backfill": ""},
                     [(2200, 2500), (2100, 2400), (1700, 2000), (1400, 1700), (1100, 1400), (1000, 1300)],
                     id="permanent-hole-widened-as-before"),
    ],
)
def test_parts_beside_a_hole_that_will_be_filled_keep_the_gaps_grid(kwargs: dict[str, Any],
                                                                    expected: list[Range]) -> None:
    """``an.up`` has a hole [2000, 2100): the part above it no longer widens its short remainder over the interval
    just planned, and the part below is cut on the gap's own grid (ends 1900, 1600…), so that once the hole is filled
    one interval [1900, 2200) completes the gap instead of a sliver that would be widened over covered positions."""
    plan = _chain_backfill([(2500, 4000)], [(1000, 2000), (2100, 4000)], imax=300, **kwargs)
    assert list(plan.tasks) == expected


def test_a_skipped_hole_in_a_dependency_is_not_waited_for() -> None:
    """An operator skipped [2000, 2100) of ``an.up``: it stays a hole to ``an.top`` for good, so the parts beside it
    are planned as before instead of waiting for it."""
    upper = inc("an.up", ["src.data"], imax=300, direction="head")
    top = inc("an.top", ["an.up"], imax=300, direction="head")
    models = models_of(ext("src.data"), upper, top)
    state = replace(snapshot(bounds={"src.data": (1000, 4000)},
                             coverage={"an.up": [(1000, 2000), (2100, 4000)], "an.top": [(2500, 4000)]}),
                    skipped={"an.up": ((2000, 2100),)})
    plan = plan_backfill(top, bnd.readiness(top, models, state), effective_coverage(top.id, state), 16,
                         upstream_of(top, models, state))
    assert list(plan.tasks)[:2] == [(2200, 2500), (2100, 2400)]
    assert (1700, 2000) in plan.tasks
