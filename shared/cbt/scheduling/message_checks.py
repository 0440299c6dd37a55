"""Whether a message that decoded fits what is loaded, before any work is done for it.

Decoding (``cbt.contract.messages``) bounds every field on its own: positions and lengths at most ``MAX_POSITION``,
a step that divides its interval, a task id that matches. What a message may ask of *this* deployment is checked
here, against the loaded models and config: a task of 31.5 million one-position intervals of a 60-position model,
a pool no worker consumes, an event for a model nobody loaded. Each check answers why the message cannot be used
(for ``message-rejected``), or ``None``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from cbt.contract.messages import IntervalCompleted, TaskFailed, TaskRequested
from cbt.models.spec import IncrementalModel, Model, ModelId, ScheduledModel


def task_problem(task: TaskRequested, models: Mapping[ModelId, Model], pools: Collection[str],
                 max_batch_intervals: int) -> str | None:
    """Why a worker must not run ``task``: its model is not a loaded transformation, its shape is not the model's
    (a scheduled fire time for an incremental model, or the other way round), its pool is unknown, or its interval
    or batch is not one the planner could have made — one interval of ``interval.min``..``interval.max``, or a batch
    of at most ``max_batch_intervals`` such steps."""
    model = models.get(task.model)
    if not isinstance(model, IncrementalModel | ScheduledModel):
        return f"{task.model}: no transformation of that name is loaded"
    if task.pool not in pools:
        return f"pool {task.pool!r} is not one of the configured pools ({', '.join(sorted(pools))})"
    if isinstance(model, ScheduledModel):
        return None if task.scheduled_unix is not None else f"{task.model} is scheduled: a task needs scheduled_unix"
    if task.position is None or task.interval is None:
        return f"{task.model} is incremental: a task needs position and interval"
    return _length_problem(model, task.interval, task.step, max_batch_intervals)


def event_problem(event: IntervalCompleted | TaskFailed, models: Mapping[ModelId, Model],
                  max_batch_intervals: int) -> str | None:
    """Why the coordinator must not apply a completion or failure: the same checks as the task it reports on
    (without the pool), so an event for an unknown model or of an impossible length never reaches the state."""
    model = models.get(event.model)
    if not isinstance(model, IncrementalModel | ScheduledModel):
        return f"{event.model}: no transformation of that name is loaded"
    if isinstance(model, ScheduledModel) or event.interval is None:
        return None
    if isinstance(event, TaskFailed):  # a failed batch reports its whole range, without its step
        longest = model.interval.max * max_batch_intervals
        if event.interval > longest:
            return (f"{model.id}: interval {event.interval} is longer than a batch of scheduler.batch.max_intervals "
                    f"({max_batch_intervals}) intervals of {model.interval.max}")
        return None
    return _length_problem(model, event.interval, event.step, max_batch_intervals)


def _length_problem(model: IncrementalModel, interval: int, step: int | None, max_batch_intervals: int) -> str | None:
    low, high = model.interval.min or 1, model.interval.max
    one = interval if step is None else step
    if not low <= one <= high:
        what = "interval" if step is None else "step"
        return f"{model.id}: {what} {one} is outside the model's interval.min..interval.max ({low}..{high})"
    if step is not None and interval // step > max_batch_intervals:
        return (f"{model.id}: a batch of {interval // step} intervals is more than scheduler.batch.max_intervals "
                f"({max_batch_intervals})")
    return None
