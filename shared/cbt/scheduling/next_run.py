"""When each scheduled model runs next: its schedule (live override applied) evaluated from its last run.

Pure: values in, values out, so the dashboard's and ``cbt status``'s "next run" is computed once, here, with the
project's cron support (``cbt.base.cron``), and never re-implemented in the browser. Schedules fire at aligned UTC
times, so the next fire after the last run is the run the coordinator owes next; when that time has already passed
the run is due (the coordinator catches up at its next tick).
"""

from __future__ import annotations

from dataclasses import dataclass

from cbt.base.cron import ScheduleError, next_fire


@dataclass(frozen=True)
class NextRun:
    """``next_unix``: the next fire time (UTC unix seconds), ``None`` while the model is paused or when the schedule
    has none (``problem`` says why); ``is_due``: that time is not in the future (a run is owed now)."""

    next_unix: int | None
    is_due: bool
    problem: str | None = None


def next_run(schedule: str, last_scheduled_unix: int | None, now_unix: int, is_enabled: bool = True) -> NextRun:
    """The next run of a model on ``schedule`` whose latest run fired at ``last_scheduled_unix`` (``None``: it never
    ran, so the next fire after ``now_unix``)."""
    if not is_enabled:
        return NextRun(None, False)
    after = now_unix if last_scheduled_unix is None else last_scheduled_unix
    try:
        upcoming = next_fire(schedule, after)
    except ScheduleError as e:  # (the coordinator sets such a schedule aside; shown, never a failed page)
        return NextRun(None, False, str(e))
    return NextRun(upcoming, upcoming <= now_unix)
