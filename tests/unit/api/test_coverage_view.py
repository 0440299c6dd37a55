"""The coverage view: a window cut into merged status ranges, overlaps resolved by precedence, with counts."""

from __future__ import annotations

import itertools

import pytest

from cbt.api.coverage_view import Status, coverage_view, default_window, layer, verdict_layers
from cbt.scheduling.coverage import Coverage, Range

Layers = dict[Status, list[Range]]


def view_of(window: Range, layers: Layers, interval: int | None = None) -> list[tuple[int, int, str]]:
    found = coverage_view(window, {k: layer(v) for k, v in layers.items()}, interval)
    return [(r.start, r.end, r.status) for r in found.ranges]


@pytest.mark.parametrize(("window", "layers", "expected"), [
    pytest.param((0, 100), {}, [(0, 100, "missing")], id="nothing-is-missing"),
    pytest.param((0, 100), {"covered": [(0, 40), (60, 100)]},
                 [(0, 40, "covered"), (40, 60, "missing"), (60, 100, "covered")], id="gap-in-middle"),
    pytest.param((10, 50), {"covered": [(0, 20), (30, 100)]},
                 [(10, 20, "covered"), (20, 30, "missing"), (30, 50, "covered")], id="clipped-to-window"),
    pytest.param((0, 100), {"covered": [(0, 50)], "in_flight": [(40, 60)]},
                 [(0, 40, "covered"), (40, 60, "in_flight"), (60, 100, "missing")], id="in-flight-wins"),
    pytest.param((0, 100), {"covered": [(0, 50)], "failed": [(0, 100)]},
                 [(0, 50, "covered"), (50, 100, "failed")], id="covered-beats-an-old-failed-batch"),
    pytest.param((0, 100), {"failed": [(20, 40)], "invalidated_pending": [(0, 60)]},
                 [(0, 20, "invalidated_pending"), (20, 40, "failed"), (40, 60, "invalidated_pending"),
                  (60, 100, "missing")], id="failed-rerun-shows-failed"),
    pytest.param((0, 30), {"covered": [(0, 10), (10, 20)]}, [(0, 20, "covered"), (20, 30, "missing")],
                 id="touching-ranges-merge"),
    pytest.param((0, 100), {"covered": [(0, 30)], "skipped": [(20, 60)], "failed": [(40, 80)]},
                 [(0, 30, "covered"), (30, 60, "skipped"), (60, 80, "failed"), (80, 100, "missing")],
                 id="skipped-beats-failed-not-covered"),
    pytest.param((0, 100), {"covered": [(0, 40)], "held": [(40, 60)], "failed": [(40, 80)],
                            "invalidated_pending": [(50, 90)]},
                 [(0, 40, "covered"), (40, 60, "held"), (60, 80, "failed"), (80, 90, "invalidated_pending"),
                  (90, 100, "missing")], id="held-by-a-check-beats-failed-and-pending"),
])
def test_status_ranges_cover_the_window_exactly(window: Range, layers: Layers,
                                                expected: list[tuple[int, int, str]]) -> None:
    found = view_of(window, layers)
    assert found == expected
    assert found[0][0] == window[0] and found[-1][1] == window[1]
    assert all(a[1] == b[0] and a[2] != b[2] for a, b in itertools.pairwise(found))


def test_counts_in_positions_and_in_intervals() -> None:
    view = coverage_view((0, 100), {"covered": layer([(0, 45)]), "in_flight": layer([(45, 50)])}, interval=10)
    assert dict(view.counts) == {"covered": 45, "in_flight": 5, "failed": 0, "missing": 50, "invalidated_pending": 0,
                                 "skipped": 0, "held": 0, "passed": 0, "warned": 0, "accepted": 0}
    assert view.intervals is not None
    assert dict(view.intervals) == {"covered": 5, "in_flight": 1, "failed": 0, "missing": 5,
                                    "invalidated_pending": 0, "skipped": 0, "held": 0, "passed": 0, "warned": 0,
                                    "accepted": 0}


def test_covered_intervals_take_the_colour_of_their_latest_checks() -> None:
    """Newest first: [0, 10) warned in its latest run (its older run passed), [10, 20) passed, [20, 30) failed then
    was accepted, [30, 40) failed and is held (not covered: no verdict colour)."""
    results = [(0, 10, "t3", "warned"), (0, 10, "t3", "passed"), (10, 20, "t2", "passed"), (20, 30, "t4", "accepted"),
               (30, 40, "t1", "failed"), (0, 10, "t1", "passed")]
    covered = layer([(0, 30)])
    layers = {"covered": covered, "held": layer([(30, 40)]), **verdict_layers(results, covered)}
    assert view_of((0, 50), layers) == [(0, 10, "warned"), (10, 20, "passed"), (20, 30, "accepted"),
                                        (30, 40, "held"), (40, 50, "missing")]


@pytest.mark.parametrize(("valid", "layers", "expected"), [
    pytest.param(None, [], None, id="nothing-to-show"),
    pytest.param((100, 200), [], (100, 200), id="valid-range"),
    pytest.param((100, 200), [((50, 120),), ((190, 260),)], (50, 260), id="widened-to-coverage-and-tasks"),
    pytest.param(None, [((5, 9),)], (5, 9), id="coverage-without-valid-range"),
])
def test_default_window(valid: Range | None, layers: list[Coverage], expected: Range | None) -> None:
    assert default_window(valid, layers) == expected
