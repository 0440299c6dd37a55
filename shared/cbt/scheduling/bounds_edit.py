"""An operator's edit of an external model's bounds, checked before anything is stored (pure).

Bounds are raw and half-open, ``[min, max)``: the positions the external table holds, before its lag. An edit is
what the bounds-cache would have stored after a scan, so it obeys the same limits as a ``bounds-updated`` message:
whole numbers in ``[0, MAX_POSITION]``, ``min <= max`` (``min == max``: no position yet). What happens to it later
is the scan's rule (``merge_scan``): the next incremental scan widens it, the next full scan replaces it.
"""

from __future__ import annotations

from cbt.base.errors import CbtError
from cbt.contract.messages import MAX_POSITION
from cbt.scheduling.snapshot import RawBounds


class BoundsRejected(CbtError):
    """An edit that cannot be stored; the message names the field and what it expected."""


def _position(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise BoundsRejected(f"{name}: expected a whole number of the model's interval type, got {value!r}")
    if not 0 <= value <= MAX_POSITION:
        raise BoundsRejected(f"{name}: expected a position in [0, {MAX_POSITION}], got {value}")
    return value


def checked_bounds(low: object, high: object) -> RawBounds:
    """The bounds ``[low, high)`` to store, or ``BoundsRejected`` with the reason."""
    start, end = _position("min", low), _position("max", high)
    if start > end:
        raise BoundsRejected(
            f"min, max: bounds are half-open [min, max), so min must not exceed max; got [{start}, {end})"
        )
    return RawBounds(start, end)
