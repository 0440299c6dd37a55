"""The task vocabulary every layer shares: how a task is named and why it runs.

A task is one run of one model: an incremental model over ``[position, position + interval)``, a scheduled model at
one fire time. Its id names it uniquely among tasks in flight (docs/design/index.md#tasks), so a duplicate message
is recognised wherever it arrives.
"""

from __future__ import annotations

from typing import Literal

FillDirection = Literal["forward", "backfill"]
"""Which of the planner's two fills plans a task: forward fill (new data at the head) or backfill (gaps below it)."""
FILL_DIRECTIONS: tuple[FillDirection, ...] = ("forward", "backfill")

TaskDirection = Literal["forward", "backfill", "rerun"]
"""Why a task runs: planned by one of the fills, or a re-run of a range an invalidation took back."""


def incremental_task_id(model: str, position: int, interval: int) -> str:
    """``model:position:interval``."""
    return f"{model}:{position}:{interval}"


def scheduled_task_id(model: str, scheduled_unix: int) -> str:
    """``model:@scheduled_unix``."""
    return f"{model}:@{scheduled_unix}"
