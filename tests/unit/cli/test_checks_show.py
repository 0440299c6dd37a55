"""``cbt checks show``: a task delivered twice (at-least-once) records its verdicts twice; the command shows each
check's verdict once, as one task gave it."""

from __future__ import annotations

from cbt.cli.checks_cmd import render_interval, render_summary
from cbt.state.admin_records import CheckedInterval

M = "an.m"


def verdict(check: str, status: str, at_ms: int, task: str = "recheck:an.m:0:60") -> CheckedInterval:
    return CheckedInterval(M, 0, 60, check, "error", status, 0 if status == "passed" else 1, None, task_id=task,
                           version="v2", checked_at_ms=at_ms)


TWICE = [verdict("a", "failed", 20), verdict("b", "passed", 20), verdict("a", "failed", 10), verdict("b", "passed", 10)]
"""Newest first, as the record answers: the same task's two verdicts, recorded again by its redelivery."""


def test_one_interval_shows_each_check_once() -> None:
    lines = render_interval(M, TWICE).splitlines()
    assert [line.split()[1] for line in lines[1:]] == ["a", "b"], lines


def test_the_summary_shows_each_check_once() -> None:
    line = render_summary(M, ["a", "b"], [], [r for r in TWICE if r.status != "passed"]).splitlines()[-1]
    assert line.count("FAILED a") + line.count("failed a") == 1, line
