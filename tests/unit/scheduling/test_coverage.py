"""Coverage as merged half-open ranges: table-driven cases plus random checks against a set of positions."""

from __future__ import annotations

import itertools
import random

import pytest

from cbt.scheduling import coverage as cov
from cbt.scheduling.coverage import Coverage, Range


@pytest.mark.parametrize(
    ("ranges", "expected"),
    [
        pytest.param([], (), id="empty"),
        pytest.param([(5, 5), (7, 3)], (), id="empty-ranges-dropped"),
        pytest.param([(10, 20), (0, 5)], ((0, 5), (10, 20)), id="sorted"),
        pytest.param([(0, 10), (10, 20)], ((0, 20),), id="adjacent-joined"),
        pytest.param([(0, 15), (10, 20), (12, 13)], ((0, 20),), id="overlapping-joined"),
        pytest.param([(0, 0), (0, 1)], ((0, 1),), id="position-zero-is-data"),
    ],
)
def test_merge(ranges: list[Range], expected: Coverage) -> None:
    assert cov.merge(ranges) == expected


@pytest.mark.parametrize(
    ("start", "r", "expected"),
    [
        pytest.param((), (0, 10), ((0, 10),), id="into-empty"),
        pytest.param(((0, 10),), (10, 20), ((0, 20),), id="touching-end"),
        pytest.param(((10, 20),), (0, 10), ((0, 20),), id="touching-start"),
        pytest.param(((0, 10), (20, 30)), (10, 20), ((0, 30),), id="fills-gap-in-middle"),
        pytest.param(((0, 10), (20, 30)), (12, 18), ((0, 10), (12, 18), (20, 30)), id="inside-gap"),
        pytest.param(((0, 10), (20, 30), (40, 50)), (5, 45), ((0, 50),), id="spans-several"),
        pytest.param(((0, 10),), (3, 3), ((0, 10),), id="empty-range-noop"),
    ],
)
def test_add(start: Coverage, r: Range, expected: Coverage) -> None:
    assert cov.add(start, r) == expected


@pytest.mark.parametrize(
    ("start", "r", "expected"),
    [
        pytest.param(((0, 100),), (40, 60), ((0, 40), (60, 100)), id="hole-in-middle"),
        pytest.param(((0, 100),), (0, 100), (), id="everything"),
        pytest.param(((0, 10), (20, 30)), (5, 25), ((0, 5), (25, 30)), id="straddles-two"),
        pytest.param(((0, 10), (20, 30)), (10, 20), ((0, 10), (20, 30)), id="only-the-gap"),
        pytest.param(((10, 20),), (0, 10), ((10, 20),), id="touching-is-not-overlapping"),
    ],
)
def test_remove(start: Coverage, r: Range, expected: Coverage) -> None:
    assert cov.remove(start, r) == expected


@pytest.mark.parametrize(
    ("c", "window", "expected"),
    [
        pytest.param((), (0, 100), [(0, 100)], id="nothing-covered"),
        pytest.param(((0, 100),), (0, 100), [], id="fully-covered"),
        pytest.param(((0, 10), (20, 30)), (0, 30), [(10, 20)], id="gap-in-middle"),
        pytest.param(((20, 30),), (0, 50), [(0, 20), (30, 50)], id="gaps-at-both-ends"),
        pytest.param(((0, 10), (20, 30), (40, 50)), (25, 45), [(30, 40)], id="window-inside"),
        pytest.param(((0, 10), (20, 30)), (12, 18), [(12, 18)], id="window-inside-gap"),
        pytest.param(((0, 10),), (5, 5), [], id="empty-window"),
    ],
)
def test_gaps(c: Coverage, window: Range, expected: list[Range]) -> None:
    assert cov.gaps(c, window) == expected


def test_frontier_and_span_use_none_for_no_data() -> None:
    assert cov.frontier(()) is None
    assert cov.span(()) is None
    assert cov.frontier(((0, 10), (20, 30))) == 30
    assert cov.span(((0, 10), (20, 30))) == (0, 30)


@pytest.mark.parametrize(
    ("c", "r", "covered", "first_gap"),
    [
        pytest.param(((0, 100),), (10, 20), True, None, id="inside"),
        pytest.param(((0, 100),), (90, 110), False, (100, 110), id="past-end"),
        pytest.param(((0, 10), (20, 30)), (5, 25), False, (10, 20), id="over-hole"),
        pytest.param(((10, 20),), (0, 15), False, (0, 10), id="before-start"),
        pytest.param((), (0, 1), False, (0, 1), id="nothing"),
    ],
)
def test_covers_and_first_gap(c: Coverage, r: Range, covered: bool, first_gap: Range | None) -> None:
    assert cov.covers(c, r) is covered
    assert cov.first_gap(c, r) == first_gap


@pytest.mark.parametrize(
    ("pos", "expected"),
    [
        pytest.param(0, 10, id="before-first"),
        pytest.param(15, 15, id="covered"),
        pytest.param(20, 30, id="at-range-end"),
        pytest.param(45, None, id="after-last"),
    ],
)
def test_next_covered(pos: int, expected: int | None) -> None:
    assert cov.next_covered(((10, 20), (30, 40)), pos) == expected


def test_clip_and_intersect() -> None:
    c = ((0, 10), (20, 30), (40, 50))
    assert cov.clip(c, (5, 45)) == ((5, 10), (20, 30), (40, 45))
    assert cov.intersect(((0, 25), (45, 100)), c) == ((0, 10), (20, 25), (45, 50))


def _positions(c: Coverage) -> set[int]:
    return {p for start, end in c for p in range(start, end)}


def _is_canonical(c: Coverage) -> bool:
    return all(s < e for s, e in c) and all(a[1] < b[0] for a, b in itertools.pairwise(c))


def test_random_add_remove_match_a_set_of_positions() -> None:
    rng = random.Random(20240601)
    for _ in range(300):
        c: Coverage = ()
        expected: set[int] = set()
        for _ in range(rng.randint(1, 25)):
            start = rng.randint(0, 200)
            r = (start, start + rng.randint(0, 40))
            if rng.random() < 0.6:
                c, expected = cov.add(c, r), expected | set(range(*r))
            else:
                c, expected = cov.remove(c, r), expected - set(range(*r))
            assert _is_canonical(c)
            assert _positions(c) == expected
        window = (rng.randint(0, 120), rng.randint(120, 260))
        gap_positions = _positions(tuple(cov.gaps(c, window)))
        assert gap_positions == set(range(*window)) - expected
        assert _positions(cov.clip(c, window)) == expected & set(range(*window))
        assert cov.merge(cov.gaps(c, window) + list(cov.clip(c, window))) in ((), (window,))
