"""``cbt_scheduled_tasks_registered`` (the original CBT's gauge): one series per schedule the leader's tracker fires,
labelled as CBT did — model and operation (forward, backfill, scheduled)."""

from __future__ import annotations

from cbt.coordinator.ticker import DueTracker
from tests.unit.scheduling.factories import inc, sched


def test_one_series_per_registered_schedule() -> None:
    tracker = DueTracker.for_models(
        [inc("a.both", forward="@every 10s", backfill="@every 1m"), inc("a.back", forward="", backfill="@every 1m")],
        [sched("a.s", schedule="* * * * *")],
        now=1_000,
    )
    assert tracker.registered() == {
        (("model", "a.both"), ("operation", "forward")): 1,
        (("model", "a.both"), ("operation", "backfill")): 1,
        (("model", "a.back"), ("operation", "backfill")): 1,
        (("model", "a.s"), ("operation", "scheduled")): 1,
    }


def test_no_schedule_no_series() -> None:
    assert DueTracker.for_models([], [], now=0).registered() == {}
