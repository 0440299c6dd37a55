"""The e2e oracle's own rules (tests/e2e/oracle.py): what a model must cover of its dependencies' data."""

from __future__ import annotations

import pytest

from tests.e2e.oracle import Interval, coverage_problem


@pytest.mark.parametrize(("interval", "actual", "ok"), [
    pytest.param(Interval(60, 12), (0, 577), True, id="minute-to-the-end"),
    pytest.param(Interval(60, 12), (0, 570), True, id="minute-short-by-less-than-its-minimum"),
    pytest.param(Interval(60, 12), (0, 565), False, id="minute-short-by-its-minimum"),
    pytest.param(Interval(60, 12), (0, 540), False, id="minute-without-its-head"),
    pytest.param(Interval(60, 12), (60, 577), False, id="minute-without-its-start"),
    pytest.param(Interval(60, 12), (0, 600), False, id="minute-beyond-the-data"),
    pytest.param(Interval(120, 120), (0, 480), True, id="whole-intervals-from-the-start"),
    pytest.param(Interval(120, 120), (0, 517), True, id="whole-intervals-on-a-grid-started-elsewhere"),
    pytest.param(Interval(120, 120), (0, 457), False, id="short-by-a-whole-interval"),
    pytest.param(Interval(60, 0), (0, 577), True, id="any-partial-to-the-end"),
    pytest.param(Interval(60, 0), (0, 576), False, id="any-partial-short"),
    pytest.param(Interval(120, 60), (0, 565), True, id="gas-head-short-by-less-than-its-minimum"),
    pytest.param(Interval(120, 60), (0, 480), False, id="gas-head-missing"),
])
def test_what_a_model_must_cover_of_its_dependencies_data(interval: Interval, actual: tuple[int, int],
                                                          ok: bool) -> None:
    assert (coverage_problem("m", actual, (0, 577), interval) is None) == ok


def test_no_data_means_no_coverage() -> None:
    assert coverage_problem("m", None, None, Interval(60, 12)) is None
    assert coverage_problem("m", (0, 60), None, Interval(60, 12)) is not None
    assert coverage_problem("m", None, (0, 577), Interval(60, 12)) is not None
