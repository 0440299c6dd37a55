"""A message that decodes may still ask for what the planner could never have made: those are refused with a reason,
before any work (``cbt.scheduling.message_checks``); and decoding itself bounds every position and length."""

from __future__ import annotations

import pydantic
import pytest

from cbt.contract.messages import IntervalCompleted, TaskFailed, TaskRequested, decode
from cbt.scheduling.message_checks import event_problem, task_problem
from tests.unit.scheduling.factories import ext, inc, models_of, sched

MODELS = models_of(inc("an.minute", imax=60), inc("an.head", imax=120, imin=10), sched("an.report"),
                   ext("ext.blocks"))
POOLS = ("default", "python")
BATCH = 1024


def task(model: str = "an.minute", position: int | None = 0, interval: int | None = 60, step: int | None = None,
         pool: str = "default", scheduled_unix: int | None = None) -> TaskRequested:
    task_id = f"{model}:@{scheduled_unix}" if scheduled_unix is not None else f"{model}:{position}:{interval}"
    return TaskRequested(task_id=task_id, model=model, position=position, interval=interval, step=step, pool=pool,
                         scheduled_unix=scheduled_unix)


@pytest.mark.parametrize(("message", "problem"), [
    pytest.param(task(), None, id="one-interval"),
    pytest.param(task("an.head", interval=10), None, id="partial-at-interval-min"),
    pytest.param(task(interval=60 * 1024, step=60), None, id="largest-batch"),
    pytest.param(task("an.report", None, None, scheduled_unix=1_700_000_400, pool="python"), None, id="scheduled"),
    pytest.param(task(interval=31_536_000, step=1), "step 1 is outside the model's interval.min..interval.max (60..60)",
                 id="a-year-of-one-position-steps"),
    pytest.param(task(interval=60 * 1025, step=60), "a batch of 1025 intervals is more than "
                 "scheduler.batch.max_intervals (1024)", id="batch-too-long"),
    pytest.param(task(interval=600), "interval 600 is outside", id="interval-too-long"),
    pytest.param(task("an.head", interval=9), "interval 9 is outside the model's interval.min..interval.max (10..120)",
                 id="interval-too-short"),
    pytest.param(task(pool="gpu"), "pool 'gpu' is not one of the configured pools (default, python)",
                 id="unknown-pool"),
    pytest.param(task("an.nope"), "an.nope: no transformation of that name is loaded", id="unknown-model"),
    pytest.param(task("ext.blocks"), "no transformation of that name", id="external"),
    pytest.param(task("an.minute", None, None, scheduled_unix=1_700_000_400), "is incremental: a task needs position",
                 id="fire-time-for-incremental"),
    pytest.param(task("an.report"), "is scheduled: a task needs scheduled_unix", id="interval-for-scheduled"),
])
def test_a_task_must_be_one_the_planner_could_have_made(message: TaskRequested, problem: str | None) -> None:
    found = task_problem(message, MODELS, POOLS, BATCH)
    assert found == problem if problem is None else problem in (found or "")


@pytest.mark.parametrize(("event", "problem"), [
    pytest.param(IntervalCompleted(task_id="an.minute:0:600", model="an.minute", position=0, interval=600, step=60),
                 None, id="batch-completed"),
    pytest.param(IntervalCompleted(task_id="x:0:60", model="an.gone", position=0, interval=60),
                 "an.gone: no transformation", id="completed-unknown-model"),
    pytest.param(IntervalCompleted(task_id="an.minute:0:10", model="an.minute", position=0, interval=10),
                 "interval 10 is outside", id="completed-odd-length"),
    pytest.param(TaskFailed(task_id="an.minute:0:600", model="an.minute", position=0, interval=600, attempts=3,
                            error="boom"), None, id="failed-batch"),
    pytest.param(TaskFailed(task_id="an.minute:0:10000000", model="an.minute", position=0, interval=10_000_000,
                            attempts=3, error="boom"), "longer than a batch", id="failed-too-long"),
    pytest.param(TaskFailed(task_id="an.report:@1", model="an.report", scheduled_unix=1, attempts=1, error="x"),
                 None, id="failed-scheduled"),
])
def test_an_event_must_be_about_a_loaded_model_and_a_possible_range(event: IntervalCompleted | TaskFailed,
                                                                     problem: str | None) -> None:
    found = event_problem(event, MODELS, BATCH)
    assert found == problem if problem is None else problem in (found or "")


@pytest.mark.parametrize("body", [
    b'{"kind": "task-requested", "task_id": "r.s:@100000000000000000000000", "model": "r.s", '
    b'"scheduled_unix": 100000000000000000000000}',
    b'{"kind": "task-requested", "task_id": "m.t:0:9007199254740993", "model": "m.t", "position": 0, '
    b'"interval": 9007199254740993}',
    b'{"kind": "interval-completed", "task_id": "m.t:0:60", "model": "m.t", "position": 9007199254740993, '
    b'"interval": 60}',
    b'{"kind": "task-failed", "task_id": "m.t:0:60", "model": "m.t", "position": 0, "interval": -60, '
    b'"attempts": 1, "error": "x"}',
])
def test_positions_and_lengths_beyond_what_the_stores_hold_do_not_decode(body: bytes) -> None:
    """A scheduled_unix of 10^23 used to decode, then overflow the admin table's BIGINT on every redelivery."""
    with pytest.raises(pydantic.ValidationError):
        decode(body)
