"""What a relative row_count compares with: the published intervals' row counts, newest verdict per interval."""

from __future__ import annotations

from cbt.state.admin_records import CheckedInterval
from cbt.worker.app import published_row_counts


def verdict(position: int, status: str, rows: int, check: str = "c") -> CheckedInterval:
    return CheckedInterval("an.m", position, position + 10, check, "error", status, 0, rows)


def test_each_interval_counts_once_by_its_newest_verdict_and_failed_ones_were_not_published() -> None:
    newest_first = [verdict(20, "passed", 7), verdict(20, "passed", 7, "d"), verdict(10, "failed", 90),
                    verdict(0, "warned", 5), verdict(10, "passed", 6), verdict(0, "passed", 4)]
    assert published_row_counts(newest_first) == [7, 5]
