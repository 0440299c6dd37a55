"""The coverage protocol's pure rules (``cbt.scheduling.protocol``); the stores' adherence is tested in
``tests/integration/test_protocol_stores.py`` and ``tests/unit/test_protocol_interleavings.py``."""

from __future__ import annotations

import pytest

from cbt.scheduling.coverage import Coverage, Range
from cbt.scheduling.protocol import (
    UNKNOWN_STEP,
    CompletedRange,
    Mark,
    Piece,
    accepted_part,
    is_applied,
    live_coverage,
    live_part,
    live_pieces,
    next_epoch,
    runs,
    tasks_over,
    version_coverage,
    version_runs,
)


@pytest.mark.parametrize(
    ("row", "marks", "expected"),
    [
        pytest.param(CompletedRange((0, 100), 0), [], ((0, 100),), id="no-marks"),
        pytest.param(CompletedRange((0, 100), 0), [Mark(1, (40, 60))], ((0, 40), (60, 100)), id="only-the-range-goes"),
        pytest.param(CompletedRange((0, 100), 1), [Mark(1, (40, 60))], ((0, 100),), id="same-epoch-was-read"),
        pytest.param(CompletedRange((0, 100), 1), [Mark(2, (0, 100))], (), id="all-of-it"),
        pytest.param(CompletedRange((0, 100), 0), [Mark(1, (100, 200))], ((0, 100),), id="touching-is-not-overlap"),
        pytest.param(CompletedRange((0, 100), 0), [Mark(3, (10, 20)), Mark(1, (15, 30)), Mark(2, (90, 120))],
                     ((0, 10), (30, 90)), id="several"),
    ],
)
def test_a_row_keeps_what_no_newer_mark_overlaps(row: CompletedRange, marks: list[Mark], expected: Coverage) -> None:
    assert live_part(row, marks) == expected


def test_live_coverage_is_the_union_of_live_parts() -> None:
    rows = [CompletedRange((0, 100), 0), CompletedRange((40, 60), 1), CompletedRange((200, 300), 0)]
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


def test_a_live_piece_keeps_its_rows_tasks_when_the_marks_follow_them() -> None:
    row = CompletedRange((17, 917), 0, step=300)
    assert live_pieces(row, [Mark(1, (317, 617))]) == [Piece((17, 317), 300), Piece((617, 917), 300)]


def test_a_piece_cut_off_its_rows_task_boundaries_is_one_task_of_its_own() -> None:
    row = CompletedRange((0, 600), 0, step=300)
    assert live_pieces(row, [Mark(1, (250, 350))]) == [Piece((0, 250), 250), Piece((350, 600), 250)]


def test_a_row_without_a_step_is_one_task() -> None:
    assert live_pieces(CompletedRange((10, 70), 0), []) == [Piece((10, 70), 60)]


def test_a_piece_lists_the_tasks_it_holds_over_a_range() -> None:
    assert Piece((17, 917), 300).tasks((400, 700)) == [(317, 617), (617, 917)]
    assert Piece((17, 917), 300).tasks((917, 1000)) == []
    assert Piece((0, 600), UNKNOWN_STEP).tasks((0, 600)) == []


def test_runs_merge_touching_pieces_of_one_step_and_keep_every_task_boundary() -> None:
    pieces = [Piece((0, 300), 300), Piece((300, 600), 300), Piece((600, 700), 100), Piece((700, 800), 100),
              Piece((650, 750), 100), Piece((0, 300), 300), Piece((800, 1100), 300),
              Piece((2000, 2100), UNKNOWN_STEP), Piece((2100, 2200), UNKNOWN_STEP)]
    assert runs(pieces) == [Piece((0, 600), 300), Piece((600, 700), 100), Piece((650, 750), 100),
                            Piece((700, 800), 100), Piece((800, 1100), 300), Piece((2000, 2100), UNKNOWN_STEP),
                            Piece((2100, 2200), UNKNOWN_STEP)]
    tasks = {t for p in pieces for t in p.tasks((0, 3000))}
    assert {t for p in runs(pieces) for t in p.tasks((0, 3000))} == tasks


@pytest.mark.parametrize(("row", "step", "span", "kept"), [
    pytest.param((0, 60), 10, (55, 60), (50, 60), id="the-task-holding-the-head"),
    pytest.param((17, 917), 300, (880, 917), (617, 917), id="tasks-from-the-row-start"),
    pytest.param((0, 60), 10, (25, 42), (20, 50), id="every-task-overlapping"),
    pytest.param((0, 65), 10, (61, 90), (60, 65), id="a-short-last-task"),
    pytest.param((0, 60), UNKNOWN_STEP, (55, 60), (0, 60), id="unknown-boundaries-whole-row"),
    pytest.param((0, 60), 10, (60, 70), None, id="no-overlap"),
])
def test_the_tasks_of_a_row_over_a_span(row: Range, step: int, span: Range, kept: Range | None) -> None:
    assert tasks_over(row, step, span) == kept


def test_runs_never_mix_versions_and_each_version_says_what_it_holds() -> None:
    rows = [CompletedRange((0, 10), 0, 10, "a"), CompletedRange((10, 20), 0, 10, "b"),
            CompletedRange((20, 30), 0, 10, "a"), CompletedRange((30, 40), 0, 10, None)]
    assert version_runs(rows, []) == [(None, Piece((30, 40), 10)), ("a", Piece((0, 10), 10)),
                                      ("a", Piece((20, 30), 10)), ("b", Piece((10, 20), 10))]
    assert version_coverage(rows, [Mark(1, (20, 30))]) == {"a": ((0, 10),), "b": ((10, 20),), None: ((30, 40),)}
