"""Batched runs of a backlog (docs/design/scheduling.md#batched-runs): which intervals one task holds, and how big a
batch the measurements allow."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from cbt.models.batch_choice import batch_mode
from cbt.models.spec import Batch, Write
from cbt.scheduling import coverage as cov
from cbt.scheduling.batching import BatchSizer, estimate, group
from cbt.scheduling.plan import plan_model
from cbt.scheduling.snapshot import StateSnapshot
from tests.unit.scheduling.factories import ext, inc, models_of, snapshot

REPLACE = Write("replace", replace_where="p >= {{ bounds.start }} AND p < {{ bounds.end }}")


def test_touching_full_intervals_are_grouped_in_planning_order_and_short_ones_stay_alone() -> None:
    backfill = [(540, 600), (480, 540), (420, 480), (400, 420), (340, 400), (280, 340)]  # newest first
    assert group(backfill, 60, 2) == [((480, 600), 2), ((420, 480), 1), ((400, 420), 1), ((280, 400), 2)]
    forward = [(0, 60), (60, 120), (180, 240), (240, 300)]  # a skipped hole between 120 and 180
    assert group(forward, 60, 8) == [((0, 120), 2), ((180, 300), 2)]
    assert group(forward, 60, 1) == [((r), 1) for r in forward]


def test_a_backlog_is_planned_in_batches_of_the_size_asked_and_the_head_stays_single() -> None:
    model = replace(inc("an.hourly", ["src.data"], imax=60, direction="tail"), sql="SELECT 1", write=REPLACE)
    models = models_of(ext("src.data"), model)
    backlog = snapshot(bounds={"src.data": (0, 6000)})

    plan = plan_model(model, models, backlog, concurrency=2, batch_size=20)

    assert [(t.position, t.interval, t.step) for t in plan.tasks] == [(0, 1200, 60), (1200, 1200, 60)]
    assert plan.waiting is not None and "concurrency limit 2" in plan.waiting
    head = snapshot(bounds={"src.data": (0, 6000)}, coverage={"an.hourly": [(0, 5940)]})
    (single,) = plan_model(model, models, head, concurrency=2, batch_size=20).tasks
    assert (single.position, single.interval, single.step) == (5940, 60, None)


def test_a_model_behind_its_head_catches_up_in_one_forward_job() -> None:
    """Minutes behind a live source (a restart, a slow job): the ready forward intervals run as one batch, not one
    task per interval one after another; each interval still gets its record (the task's step)."""
    model = replace(inc("an.minute", ["src.data"], imax=60, direction="head"), sql="SELECT 1", write=REPLACE)
    models = models_of(ext("src.data"), model)
    behind = snapshot(bounds={"src.data": (0, 6000)}, coverage={"an.minute": [(0, 5700)]})

    (catch_up,) = plan_model(model, models, behind, concurrency=1, batch_size=20).tasks

    assert (catch_up.position, catch_up.interval, catch_up.step, catch_up.direction) == (5700, 300, 60, "forward")


def test_a_head_first_backlog_runs_as_one_job_with_its_newest_interval() -> None:
    """Head-first, nothing covered: forward fill takes the newest interval and backfill the rest below it — two
    jobs on one table, one after the other. When both fit one batch they are one task."""
    model = replace(inc("an.hourly", ["src.data"], imax=60, direction="head"), sql="SELECT 1", write=REPLACE)
    models = models_of(ext("src.data"), model)
    backlog = snapshot(bounds={"src.data": (0, 6000)})

    (whole,) = plan_model(model, models, backlog, concurrency=4, batch_size=100).tasks
    assert (whole.position, whole.interval, whole.step, whole.direction) == (0, 6000, 60, "forward")
    tasks = plan_model(model, models, backlog, concurrency=4, batch_size=40).tasks
    assert [(t.position, t.end, t.direction) for t in tasks] == [
        (5940, 6000, "forward"), (3540, 5940, "backfill"), (1140, 3540, "backfill"), (0, 1140, "backfill")]


def test_batched_planning_still_converges_to_full_coverage_without_overlapping_tasks() -> None:
    rng = random.Random(11)
    for _ in range(200):
        imax = rng.randint(1, 40)
        imin = rng.choice([imax, rng.randint(0, imax)])
        low, high = rng.randint(0, 100), rng.randint(150, 900)
        model = replace(inc("an.t", ["src.data"], imax=imax, imin=imin, direction=rng.choice(["head", "tail"]),
                            forward=rng.choice(["@every 1m", ""]), backfill="@every 1m"), sql="SELECT 1",
                        write=REPLACE)
        models = models_of(ext("src.data"), model)
        covered = cov.merge([(s, s + rng.randint(1, 30)) for s in (rng.randint(low, high) for _ in range(3))])
        state = snapshot(bounds={"src.data": (low, high)}, coverage={"an.t": covered})
        for _ in range(400):
            plan = plan_model(model, models, state, concurrency=rng.randint(1, 4), batch_size=rng.randint(1, 50))
            if not plan.tasks:
                break
            for task in plan.tasks:
                assert low <= task.position < task.end <= high
                if task.step is None:
                    assert task.interval <= imax
                else:
                    assert task.step == imax and task.interval % imax == 0
            assert len(cov.merge([(t.position, t.end) for t in plan.tasks])) <= len(plan.tasks)
            covered = cov.union(covered, cov.merge([(t.position, t.end) for t in plan.tasks]))
            state = StateSnapshot(bounds=state.bounds, coverage={"an.t": covered})
        else:
            raise AssertionError("batched planning did not converge")
        left = cov.gaps(covered, (low, high))
        assert left == [] or (len(left) == 1 and left[0][1] == high and high - left[0][0] < imin)


def test_models_that_cannot_combine_intervals_are_not_batched() -> None:
    sizer = BatchSizer(max_intervals=100, first_size=16)
    sql_model = replace(inc("an.sql"), sql="INSERT INTO t REPLACE WHERE … SELECT 1")
    exec_model = replace(inc("an.script"), exec="python x.py")
    assert sizer.size(sql_model) == 1 and sizer.size(exec_model) == 1
    assert sizer.size(replace(exec_model, batch=Batch("bounds"))) == 100, "an exec model may opt in (from the cap)"
    assert sizer.size(replace(inc("an.r"), sql="SELECT 1", write=REPLACE)) == 16


@pytest.mark.parametrize(("runs", "expected"), [
    pytest.param([(1, 1_300)], 46, id="only-single-runs-average-per-interval"),
    pytest.param([(1, 1_300), (46, 1_750)], 6_000 // 10, id="fit-fixed-and-per-interval-capped"),
    pytest.param([(1, 1_000), (10, 10_000)], 60, id="no-fixed-cost-budget-bound"),
])
def test_the_batch_size_is_what_fits_the_job_budget_by_the_measured_costs(runs: list[tuple[int, int]],
                                                                          expected: int) -> None:
    sizer = BatchSizer(max_intervals=600, budget_s=60, first_size=16)
    model = replace(inc("an.r"), sql="SELECT 1", write=REPLACE)
    for intervals, duration_ms in runs:
        sizer.observe(model.id, intervals, duration_ms)
    assert sizer.size(model) == expected
    assert sizer.size(replace(model, batch=Batch(max_intervals=8))) == 8, "the model's own cap wins"


def test_a_failed_batch_halves_the_models_batches_until_the_bad_interval_fails_alone() -> None:
    """A backlog with one interval that always fails: batches must shrink around it, or the same batch is planned
    again, identically, forever (and the good intervals in it never complete)."""
    sizer = BatchSizer(max_intervals=64, first_size=16)
    model = replace(inc("an.r"), sql="SELECT 1", write=REPLACE)
    sizes = []
    for _ in range(5):
        sizes.append(sizer.size(model))
        sizer.failed(model.id, sizes[-1])
    assert sizes == [16, 8, 4, 2, 1]
    sizer.failed(model.id, 1)
    assert sizer.size(model) == 1, "a single interval failing changes nothing"
    sizer.observe(model.id, 1, 1_000)
    sizer.observe(model.id, 2, 2_000)
    assert sizer.size(model) == 4, "batches that complete grow it back"
    other = replace(inc("an.other"), sql="SELECT 1", write=REPLACE)
    assert sizer.size(other) == 16, "per model"


def test_a_model_whose_sql_reads_its_own_table_is_not_batched_unless_it_opts_in() -> None:
    """In one statement every interval would read the table as it was before the batch (a running total)."""
    running = replace(inc("an.r"), sql="SELECT p, v + (SELECT max(v) FROM {{ self.from }}) AS v FROM src",
                      write=REPLACE)
    assert batch_mode(running) == "off"
    assert batch_mode(replace(running, batch=Batch("union"))) == "union"
    assert batch_mode(replace(running, sql="SELECT p, v FROM src")) == "union"


def test_a_recompute_is_estimated_as_the_batches_it_would_run_timed_by_the_recorded_runs() -> None:
    model = replace(inc("an.m", ["ext.e"], imax=60), write=REPLACE, batch=Batch("bounds", max_intervals=10))
    runs = [(1, 1_000), (1, 1_200), (4, 2_200), (4, 2_400), (8, 4_000)]  # about 0.7 s + 0.4 s an interval
    found = estimate(model, [(0, 1500), (3000, 3090)], runs, BatchSizer(max_intervals=100, budget_s=60))
    assert (found.intervals, found.tasks) == (27, 4), "25 intervals as 10 + 10 + 5, then 2 in one"
    assert found.seconds is not None and 10 < found.seconds < 16, found
    unknown = estimate(model, [(0, 600)], [], BatchSizer(max_intervals=100))
    assert (unknown.intervals, unknown.tasks, unknown.seconds) == (10, 1, None), "no run recorded: no time"
    single = replace(model, batch=Batch("off"))
    assert estimate(single, [(0, 600)], runs, BatchSizer()).tasks == 10, "a model that never batches: one each"
