"""Task runs (``cbt.scheduling.task_runs``): the stored form of an affected set keeps exactly its tasks."""

from __future__ import annotations

import hypothesis.strategies as st
import pytest
from hypothesis import given

from cbt.scheduling import coverage as cov
from cbt.scheduling.task_runs import TaskRun, all_tasks, clip, compress, count, normalize, not_held, tasks

runs_st = st.builds(
    lambda start, n, step, cut: TaskRun(start, start + max(n * step - cut, 1), step),
    st.integers(0, 60),
    st.integers(1, 6),
    st.sampled_from([1, 3, 5, 10]),
    st.integers(0, 2),
)


@pytest.mark.parametrize(
    ("run", "expected"),
    [
        pytest.param(TaskRun(0, 30, 10), [(0, 10), (10, 20), (20, 30)], id="whole-tasks"),
        pytest.param(TaskRun(0, 25, 10), [(0, 10), (10, 20), (20, 25)], id="last-cut-at-end"),
        pytest.param(TaskRun.single((7, 9)), [(7, 9)], id="one-task"),
    ],
)
def test_tasks_of_a_run(run: TaskRun, expected: list[tuple[int, int]]) -> None:
    assert list(tasks(run)) == expected
    assert run.task_count == len(expected)


def test_a_month_of_minutes_is_one_run() -> None:
    month = [(s, s + 60) for s in range(0, 43_200 * 60, 60)]
    assert compress(month) == (TaskRun(0, 43_200 * 60, 60),)
    assert count(compress(month)) == 43_200


@pytest.mark.parametrize(
    ("runs", "expected"),
    [
        pytest.param([TaskRun(0, 20, 10), TaskRun(20, 40, 10)], [TaskRun(0, 40, 10)], id="touching"),
        pytest.param([TaskRun(0, 30, 10), TaskRun(10, 50, 10)], [TaskRun(0, 50, 10)], id="overlapping-same-grid"),
        pytest.param(
            [TaskRun(0, 20, 10), TaskRun(5, 25, 10)],
            [TaskRun(0, 20, 10), TaskRun(5, 25, 10)],
            id="other-grid-kept-apart",
        ),
        pytest.param(
            [TaskRun(0, 25, 10), TaskRun(20, 30, 10)],
            [TaskRun(0, 25, 10), TaskRun(20, 30, 10)],
            id="short-last-task-not-swallowed",
        ),
        pytest.param([TaskRun(0, 20, 10), TaskRun(0, 20, 10)], [TaskRun(0, 20, 10)], id="duplicates"),
    ],
)
def test_normalize(runs: list[TaskRun], expected: list[TaskRun]) -> None:
    assert list(normalize(runs)) == expected


@given(st.lists(runs_st, max_size=6))
def test_normalize_keeps_the_task_set(runs: list[TaskRun]) -> None:
    assert all_tasks(normalize(runs)) == all_tasks(runs)


@given(runs_st, st.integers(0, 80), st.integers(0, 80))
def test_clip_keeps_the_overlapping_tasks(run: TaskRun, a: int, b: int) -> None:
    within = (min(a, b), max(a, b))
    expected = [t for t in tasks(run) if t[0] < within[1] and within[0] < t[1] and within[0] < within[1]]
    clipped = clip(run, within)
    assert (list(tasks(clipped)) if clipped else []) == expected


@given(runs_st, st.lists(st.tuples(st.integers(0, 90), st.integers(1, 20)), max_size=5))
def test_not_held_is_the_tasks_the_coverage_misses(run: TaskRun, parts: list[tuple[int, int]]) -> None:
    coverage = cov.merge((s, s + n) for s, n in parts)
    expected = [t for t in tasks(run) if not cov.covers(coverage, t)]
    assert [t for r in not_held(run, coverage) for t in tasks(r)] == expected


def test_not_held_of_a_long_run_costs_the_coverage_not_the_tasks() -> None:
    end = 6 * 10**11
    run = TaskRun(0, end, 60)
    assert not_held(run, ((120, end - 60),)) == (TaskRun(0, 120, 60), TaskRun(end - 60, end, 60))
    assert not_held(run, ((100, end - 10),)) == (TaskRun(0, 120, 60), TaskRun(end - 60, end, 60))
