"""Dependency bounds and readiness (docs/design/scheduling.md#dependency-bounds), from its worked example and the edge
cases."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from cbt.models.spec import Dependency, Model
from cbt.scheduling import bounds as bnd
from cbt.scheduling.coverage import Range
from cbt.scheduling.snapshot import RawBounds, StateSnapshot
from tests.unit.scheduling.factories import ext, inc, models_of, sched, snapshot

# docs/design/scheduling.md#dependency-bounds: externals blocks (1000, 5000, lag 100) and transactions (900, 4900);
# transformations hourly [1500, 4500] and daily [2000, 4000] → valid range [2000, 4000].
SPEC_MODELS: list[Model] = [
    ext("eth.blocks", lag=100),
    ext("eth.transactions"),
    inc("an.hourly"),
    inc("an.daily"),
    ext("eth.empty"),
    sched("ref.rates"),
]
SPEC_STATE = snapshot(
    bounds={"eth.blocks": (1000, 5000), "eth.transactions": (900, 4900)},
    coverage={"an.hourly": [(1500, 4500)], "an.daily": [(2000, 4000)]},
)
SPEC_DEPS: list[Dependency] = ["eth.blocks", "eth.transactions", "an.hourly", "an.daily"]


def _valid(
    deps: Sequence[Dependency],
    state: StateSnapshot = SPEC_STATE,
    *,
    limits: tuple[int | None, int | None] = (None, None),
    buffer: int = 0,
) -> bnd.Readiness:
    model = inc("an.target", deps, limits=limits, buffer=buffer)
    return bnd.readiness(model, models_of(*SPEC_MODELS, model), state)


@pytest.mark.parametrize(
    ("deps", "limits", "buffer", "expected"),
    [
        pytest.param(SPEC_DEPS, (None, None), 0, (2000, 4000), id="spec-worked-example"),
        pytest.param(["eth.blocks", "eth.transactions"], (None, None), 0, (900, 4900), id="externals-min-of-mins"),
        pytest.param(["an.hourly", "an.daily"], (None, None), 0, (2000, 4000), id="transformations-max-of-mins"),
        pytest.param(["eth.blocks"], (None, None), 0, (1000, 4900), id="lag-applied"),
        pytest.param(SPEC_DEPS, (2500, 3500), 0, (2500, 3500), id="limits-narrow"),
        pytest.param(SPEC_DEPS, (0, 9000), 0, (2000, 4000), id="limits-wider-than-deps"),
        pytest.param(SPEC_DEPS, (None, None), 300, (2000, 3700), id="buffer"),
        pytest.param(SPEC_DEPS, (None, 3500), 300, (2000, 3200), id="buffer-after-limits"),
        pytest.param(["ref.rates", "an.daily"], (None, None), 0, (2000, 4000), id="scheduled-unbounded"),
        pytest.param([], (100, 200), 0, (100, 200), id="no-deps-limits-give-both-ends"),
        pytest.param(["ref.rates"], (None, 700), 0, (0, 700), id="scheduled-only-starts-at-zero"),
        pytest.param([("eth.empty", "eth.blocks")], (None, None), 0, (1000, 4900), id="or-group-empty-member"),
        pytest.param([("eth.blocks", "eth.transactions")], (None, None), 0, (900, 4900), id="or-group-union-min-max"),
        pytest.param([("eth.empty", "ref.rates")], (10, 20), 0, (10, 20), id="or-group-with-scheduled-unbounded"),
    ],
)
def test_valid_range(
    deps: list[Dependency], limits: tuple[int | None, int | None], buffer: int, expected: Range
) -> None:
    ready = _valid(deps, limits=limits, buffer=buffer)
    assert ready.reason is None
    assert ready.valid == expected


@pytest.mark.parametrize(
    ("deps", "limits", "buffer", "reason_has"),
    [
        pytest.param(["eth.empty"], (None, None), 0, "eth.empty", id="external-not-scanned"),
        pytest.param(["an.never"], (None, None), 0, "an.never", id="unknown-model"),
        pytest.param([("eth.empty", "an.none")], (None, None), 0, "eth.empty", id="or-group-no-member"),
        pytest.param([], (None, None), 0, "limits.min", id="no-deps-no-limits"),
        pytest.param([], (100, None), 0, "limits.max", id="no-deps-only-limits-min"),
        pytest.param(SPEC_DEPS, (4000, None), 0, "empty", id="limits-beyond-data"),
        pytest.param(SPEC_DEPS, (None, None), 2000, "empty", id="buffer-eats-range"),
        pytest.param(["an.hourly", "an.unborn"], (None, None), 0, "an.unborn", id="transformation-without-coverage"),
    ],
)
def test_no_valid_range(
    deps: list[Dependency], limits: tuple[int | None, int | None], buffer: int, reason_has: str
) -> None:
    models = [*SPEC_MODELS, inc("an.unborn")]
    model = inc("an.target", deps, limits=limits, buffer=buffer)
    ready = bnd.readiness(model, models_of(*models, model), SPEC_STATE)
    assert ready.valid is None
    assert ready.reason is not None and reason_has in ready.reason


@pytest.mark.parametrize(
    ("raw", "lag", "expected"),
    [
        pytest.param(RawBounds(1000, 5000), 100, (1000, 4900), id="lag"),
        pytest.param(RawBounds(1000, 1050), 50, None, id="lag-equal-to-range"),
        pytest.param(RawBounds(1000, 1050), 80, None, id="lag-larger-than-range"),
        pytest.param(RawBounds(0, 10), 0, (0, 10), id="position-zero-is-data"),
        pytest.param(RawBounds(7, 7), 0, None, id="empty-table"),
        pytest.param(None, 0, None, id="not-scanned"),
    ],
)
def test_external_range(raw: RawBounds | None, lag: int, expected: Range | None) -> None:
    assert bnd.external_range(raw, lag) == expected


def test_lag_larger_than_range_names_the_dependency() -> None:
    state = snapshot(bounds={"eth.blocks": (1000, 1050)})
    ready = _valid(["eth.blocks"], state)
    assert ready.valid is None
    assert ready.reason is not None and "eth.blocks" in ready.reason and "lag" in ready.reason


def test_scheduled_dependency_without_a_successful_run_has_no_data() -> None:
    never_ran = StateSnapshot(coverage=SPEC_STATE.coverage, never_ran=frozenset({"ref.rates"}))
    ready = _valid(["ref.rates", "an.daily"], never_ran)
    assert ready.valid is None
    assert ready.reason is not None and "ref.rates" in ready.reason and "has not completed" in ready.reason
    in_or_group = _valid([("ref.rates", "an.daily")], never_ran)
    assert in_or_group.valid == (2000, 4000), "an OR group falls back to the members that have data"


def test_transformation_starting_at_zero_has_data() -> None:
    state = snapshot(coverage={"an.daily": [(0, 100)]})
    assert _valid(["an.daily"], state).valid == (0, 100)


HOLEY = snapshot(
    bounds={"eth.transactions": (0, 1000)},
    coverage={"an.hourly": [(0, 300), (400, 1000)], "an.daily": [(0, 1000)]},
)


@pytest.mark.parametrize(
    ("r", "ready"),
    [
        pytest.param((0, 300), True, id="below-hole"),
        pytest.param((250, 350), False, id="overlaps-hole-start"),
        pytest.param((300, 400), False, id="exactly-the-hole"),
        pytest.param((350, 450), False, id="overlaps-hole-end"),
        pytest.param((400, 500), True, id="above-hole"),
        pytest.param((900, 1001), False, id="past-valid-end"),
        pytest.param((500, 500), False, id="empty-interval"),
    ],
)
def test_readiness_rejects_holes_in_transformation_dependencies(r: Range, ready: bool) -> None:
    readiness = _valid(["eth.transactions", "an.hourly", "an.daily"], HOLEY)
    assert readiness.valid == (0, 1000)
    assert bnd.is_ready(readiness, r) is ready


def test_or_group_holes_are_where_no_member_has_data() -> None:
    state = snapshot(coverage={"an.hourly": [(0, 300), (400, 1000)], "an.daily": [(350, 380)]})
    readiness = _valid([("an.hourly", "an.daily")], state)
    assert readiness.valid == (0, 1000)
    assert bnd.is_ready(readiness, (340, 360)) is False
    assert bnd.is_ready(readiness, (350, 380)) is True
    hole = bnd.first_hole(readiness, (300, 500))
    assert hole is not None and hole[1] == (300, 350)


def test_resume_at_finds_where_every_dependency_has_data_again() -> None:
    state = snapshot(coverage={"an.hourly": [(0, 300), (400, 1000)], "an.daily": [(0, 420), (450, 1000)]})
    readiness = _valid(["an.hourly", "an.daily"], state)
    assert bnd.resume_at(readiness, 300) == 400
    assert bnd.resume_at(readiness, 420) == 450
    assert bnd.resume_at(readiness, 100) == 100
    assert bnd.resume_at(readiness, 1000) is None


@pytest.mark.parametrize(
    ("r", "why_has"),
    [
        pytest.param((0, 300), None, id="ready"),
        pytest.param((250, 350), "an.hourly has no data in [300, 350)", id="hole"),
        pytest.param((900, 1001), "outside the valid range [0, 1000)", id="outside"),
        pytest.param((5, 5), "empty interval", id="empty"),
    ],
)
def test_why_not_ready(r: Range, why_has: str | None) -> None:
    readiness = _valid(["eth.transactions", "an.hourly", "an.daily"], HOLEY)
    why = bnd.why_not_ready(readiness, r)
    assert why is None if why_has is None else (why is not None and why_has in why)


def test_why_not_ready_without_valid_range_names_the_dependency() -> None:
    why = bnd.why_not_ready(_valid(["eth.empty"]), (0, 10))
    assert why is not None and "eth.empty" in why
