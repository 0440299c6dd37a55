"""An operator's bounds edit: whole positions within the messages' range, min <= max, checked before storing."""

from __future__ import annotations

import pytest

from cbt.contract.messages import MAX_POSITION
from cbt.scheduling.bounds_edit import BoundsRejected, checked_bounds
from cbt.scheduling.snapshot import RawBounds


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [
        pytest.param(100, 200, RawBounds(100, 200), id="a-range"),
        pytest.param(5, 5, RawBounds(5, 5), id="empty-range-is-allowed"),
        pytest.param(0, MAX_POSITION, RawBounds(0, MAX_POSITION), id="the-whole-message-range"),
    ],
)
def test_valid_bounds_are_kept_as_given(low: int, high: int, expected: RawBounds) -> None:
    assert checked_bounds(low, high) == expected


@pytest.mark.parametrize(
    ("low", "high", "reason"),
    [
        pytest.param(200, 100, "min must not exceed max; got [200, 100)", id="reversed"),
        pytest.param(-1, 10, "min: expected a position in [0, ", id="negative"),
        pytest.param(0, MAX_POSITION + 1, "max: expected a position in [0, ", id="beyond-the-messages"),
        pytest.param("1", 10, "min: expected a whole number", id="a-string"),
        pytest.param(1.5, 10, "min: expected a whole number", id="a-float"),
        pytest.param(0, True, "max: expected a whole number", id="a-boolean"),
        pytest.param(None, 10, "min: expected a whole number", id="missing"),
    ],
)
def test_invalid_bounds_are_refused_with_the_field_and_the_reason(low: object, high: object, reason: str) -> None:
    with pytest.raises(BoundsRejected, match=None) as refused:
        checked_bounds(low, high)
    assert reason in str(refused.value)
