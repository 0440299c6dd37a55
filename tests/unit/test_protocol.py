"""The coverage protocol's pure rules (``cbt.state.protocol``); the stores' adherence is tested in
``tests/integration/test_protocol_stores.py`` and ``tests/unit/test_protocol_interleavings.py``."""

from __future__ import annotations

import pytest

from cbt.scheduling.coverage import Coverage, Range
from cbt.state.protocol import Completion, Mark, accepted_part, is_applied, live_coverage, live_part, next_epoch


@pytest.mark.parametrize(
    ("row", "marks", "expected"),
    [
        pytest.param(Completion((0, 100), 0), [], ((0, 100),), id="no-marks"),
        pytest.param(Completion((0, 100), 0), [Mark(1, (40, 60))], ((0, 40), (60, 100)), id="only-the-range-goes"),
        pytest.param(Completion((0, 100), 1), [Mark(1, (40, 60))], ((0, 100),), id="same-epoch-was-read"),
        pytest.param(Completion((0, 100), 1), [Mark(2, (0, 100))], (), id="all-of-it"),
        pytest.param(Completion((0, 100), 0), [Mark(1, (100, 200))], ((0, 100),), id="touching-is-not-overlap"),
        pytest.param(Completion((0, 100), 0), [Mark(3, (10, 20)), Mark(1, (15, 30)), Mark(2, (90, 120))],
                     ((0, 10), (30, 90)), id="several"),
    ],
)
def test_a_row_keeps_what_no_newer_mark_overlaps(row: Completion, marks: list[Mark], expected: Coverage) -> None:
    assert live_part(row, marks) == expected


def test_live_coverage_is_the_union_of_live_parts() -> None:
    rows = [Completion((0, 100), 0), Completion((40, 60), 1), Completion((200, 300), 0)]
    assert live_coverage(rows, [Mark(1, (30, 70)), Mark(2, (250, 260))]) == ((0, 30), (40, 60), (70, 100),
                                                                           (200, 250), (260, 300))


def test_epochs_are_one_more_than_every_recorded() -> None:
    assert next_epoch([]) == 1
    assert next_epoch([3, 7, 5]) == 8


@pytest.mark.parametrize(
    ("observed", "seq", "floor", "expected"),
    [
        pytest.param(1, 2, 0, ((0, 10), (20, 30)), id="judged-against-the-log"),
        pytest.param(2, 2, 0, ((0, 30),), id="read-after-the-mark"),
        pytest.param(3, 2, 0, (), id="index-reset-since-read"),
        pytest.param(0, 2, 1, (), id="log-forgotten-below-floor"),
        pytest.param(1, 2, 1, ((0, 10), (20, 30)), id="at-the-floor"),
    ],
)
def test_the_hot_index_fails_closed_when_it_cannot_judge(observed: int, seq: int, floor: int,
                                                         expected: Coverage) -> None:
    log = [Mark(2, (10, 20))]
    done: Range = (0, 30)
    assert accepted_part(done, observed, seq, floor, log) == expected


def test_an_epoch_is_applied_once() -> None:
    assert is_applied(3, rebuilt_at=3, log=[])
    assert is_applied(5, rebuilt_at=3, log=[Mark(5, (0, 1))])
    assert not is_applied(4, rebuilt_at=3, log=[Mark(5, (0, 1))])
