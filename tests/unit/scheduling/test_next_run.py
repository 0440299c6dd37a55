"""The dashboard's next run of a scheduled model: its schedule evaluated from the last run (or now)."""

from __future__ import annotations

import pytest

from cbt.scheduling.next_run import NextRun, next_run

NOW = 1_700_000_000  # 2023-11-14 22:13:20 UTC


@pytest.mark.parametrize(
    ("schedule", "last", "now", "expected"),
    [
        pytest.param("@every 60s", NOW - 20, NOW, NextRun(NOW + 40, False), id="every-from-last-run"),
        pytest.param("@every 60s", None, NOW, NextRun(NOW + 40, False), id="every-never-ran-from-now"),
        pytest.param("@every 60s", NOW - 3600, NOW, NextRun(NOW - 3600 + 40, True), id="every-overdue-is-due"),
        pytest.param("*/5 * * * *", NOW - 200, NOW, NextRun(1_700_000_100, False), id="cron-from-last-run"),
        pytest.param("@hourly", None, NOW, NextRun(1_700_002_800, False), id="descriptor-never-ran"),
        pytest.param("@every 30s", NOW - 10, NOW - 10, NextRun(NOW + 10, False), id="just-ran"),
    ],
)
def test_next_run(schedule: str, last: int | None, now: int, expected: NextRun) -> None:
    assert next_run(schedule, last, now) == expected


def test_paused_model_has_no_next_run() -> None:
    assert next_run("@every 60s", NOW - 20, NOW, is_enabled=False) == NextRun(None, False)
