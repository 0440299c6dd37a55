"""The api shows an invalidation's affected tasks one by one, whatever form the record keeps them in."""

from __future__ import annotations

from cbt.api.translate import invalidation_item
from cbt.scheduling.task_runs import TaskRun
from cbt.state.admin_records import InvalidationRecord


def test_runs_are_shown_as_their_tasks() -> None:
    record = InvalidationRecord(id="e1", model="an.minute", start=0, end=150, reason="reorg", source="test",
                                affected={"an.minute": (TaskRun(0, 150, 60),), "an.two": (TaskRun(0, 120, 120),)})
    item = invalidation_item(record)
    assert item.affected == {"an.minute": [(0, 60), (60, 120), (120, 150)], "an.two": [(0, 120)]}
