"""Per-model status: coverage, gaps below the frontier, lag behind the valid range's end."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from cbt.scheduling.coverage import Range
from cbt.scheduling.status import backlog, model_status
from tests.unit.scheduling.factories import ext, inc, models_of, snapshot


@pytest.mark.parametrize(
    ("own", "src", "gaps", "lag"),
    [
        pytest.param([], (0, 1000), [], 1000, id="nothing-covered"),
        pytest.param([(0, 1000)], (0, 1000), [], 0, id="caught-up"),
        pytest.param([(200, 300), (500, 700)], (0, 1000), [(0, 200), (300, 500)], 300, id="leading-and-middle"),
        pytest.param([(0, 1200)], (0, 1000), [], 0, id="ahead-of-valid-range"),
    ],
)
def test_status(own: Sequence[Range], src: Range, gaps: list[Range], lag: int) -> None:
    model = inc("an.target", ["src.data"])
    state = snapshot(bounds={"src.data": src}, coverage={"an.target": own}, in_flight={"an.target": [(700, 800)]})
    status = model_status(model, models_of(ext("src.data"), model), state)
    assert status.valid == src
    assert list(status.gaps) == gaps
    assert status.lag == lag
    assert status.in_flight == ((700, 800),)


def test_status_without_valid_range_lists_holes_and_reason() -> None:
    model = inc("an.target", ["src.data"])
    state = snapshot(coverage={"an.target": [(0, 100), (200, 300)]})
    status = model_status(model, models_of(ext("src.data"), model), state)
    assert status.valid is None and status.lag is None
    assert list(status.gaps) == [(100, 200)]
    assert status.reason is not None and "src.data" in status.reason


@pytest.mark.parametrize(
    ("own", "in_flight", "imin", "expected"),
    [
        pytest.param([], [], 100, 10, id="nothing-covered: every interval"),
        pytest.param([(0, 1000)], [], 100, 0, id="caught-up"),
        pytest.param([(0, 500)], [(500, 700)], 100, 3, id="in-flight is not backlog"),
        pytest.param([(100, 200)], [(0, 100), (200, 1000)], 100, 0, id="all enqueued"),
        pytest.param([(0, 950)], [], 100, 0, id="the head's partial interval waits for interval.min"),
        pytest.param([(0, 950)], [], 0, 1, id="unless any partial interval may run"),
        pytest.param([(0, 950)], [], 40, 1, id="or it reached interval.min"),
        pytest.param([(50, 1000)], [], 100, 1, id="a short gap below the frontier runs widened"),
    ],
)
def test_backlog_counts_the_intervals_that_could_run_and_are_not_enqueued(
    own: Sequence[Range], in_flight: Sequence[Range], imin: int, expected: int
) -> None:
    model = inc("an.target", ["src.data"], imax=100, imin=imin)
    state = snapshot(bounds={"src.data": (0, 1000)}, coverage={"an.target": own}, in_flight={"an.target": in_flight})
    assert backlog(model_status(model, models_of(ext("src.data"), model), state), model) == expected


def test_no_valid_range_means_no_backlog() -> None:
    model = inc("an.target", ["src.data"])
    status = model_status(model, models_of(ext("src.data"), model), snapshot(coverage={"an.target": [(0, 100)]}))
    assert backlog(status, model) == 0


def test_a_disabled_schedule_leaves_its_stretches_out_of_the_backlog() -> None:
    state = snapshot(bounds={"src.data": (0, 1000)}, coverage={"an.target": [(200, 600)]})
    for forward, backfill, expected in (("@every 1m", "@every 5m", 6), ("@every 1m", "", 4), ("", "@every 5m", 2)):
        model = inc("an.target", ["src.data"], imax=100, forward=forward, backfill=backfill)
        status = model_status(model, models_of(ext("src.data"), model), state)
        assert backlog(status, model) == expected, (forward, backfill)
