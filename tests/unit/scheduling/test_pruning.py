"""Which invalidations may be pruned (``cbt.scheduling.protocol.is_prunable``): only those whose deletion changes
no live part, no sequence and no pending re-run."""

from __future__ import annotations

import pytest

from cbt.scheduling.coverage import Coverage, Range
from cbt.scheduling.protocol import CompletedRange, Mark, is_prunable, live_coverage

STALE = CompletedRange((0, 100), seq=0)
RERUN = CompletedRange((40, 60), seq=3)
FOLDED = CompletedRange((0, 100), seq=5)  # consolidated: carries the model's highest epoch


@pytest.mark.parametrize(
    ("epoch", "top", "rows", "coverage", "expected"),
    [
        pytest.param(3, 5, [STALE, RERUN], ((0, 100),), False, id="still-hides-a-stale-row"),
        pytest.param(3, 5, [FOLDED], ((0, 100),), True, id="folded-by-consolidation"),
        pytest.param(3, 5, [CompletedRange((0, 40), 5)], ((0, 40),), False, id="not-run-again"),
        pytest.param(5, 5, [FOLDED], ((0, 100),), False, id="newest-epoch-of-the-model"),
        pytest.param(
            3,
            5,
            [CompletedRange((0, 40), 0), CompletedRange((40, 60), 4)],
            ((0, 60),),
            True,
            id="stale-row-outside-its-range",
        ),
    ],
)
def test_is_prunable(epoch: int, top: int, rows: list[CompletedRange], coverage: Coverage, expected: bool) -> None:
    assert is_prunable(epoch, top, [(40, 60)], rows, coverage) is expected


def test_pruning_what_still_hides_a_stale_row_would_mark_stale_data_covered() -> None:
    """Why the rule exists: the same rows, with and without the mark."""
    rows, mark = [STALE], Mark(3, (40, 60))
    spans: list[Range] = [mark.range]
    assert live_coverage(rows, [mark]) == ((0, 40), (60, 100))
    assert live_coverage(rows, []) == ((0, 100),), "without it, [40, 60) of the stale row counts again"
    assert not is_prunable(3, 5, spans, rows, live_coverage(rows, [mark]))
