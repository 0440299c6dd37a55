"""A model's task history: every attempt of a task from the durable record, newest first."""

from cbt.api.history import Completion, failures_known, merged
from cbt.contract.messages import TaskFailed
from cbt.state.admin_records import RetriedAttempt

M = "an.minute"


def test_every_attempt_of_a_task_is_listed_newest_first_with_its_own_status() -> None:
    task = f"{M}:60:60"
    first = RetriedAttempt(M, task, 1, "boom 1", position=60, interval=60, direction="backfill", worker="w1",
                           duration_ms=1_500, failed_at_ms=1_000)
    second = RetriedAttempt(M, task, 2, "boom 2", position=60, interval=60, direction="backfill", worker="w1",
                            duration_ms=1_400, failed_at_ms=2_000)
    last = TaskFailed(task_id=task, model=M, position=60, interval=60, attempts=3, error="boom 3",
                      failed_at_ms=3_000, worker="w1")
    done = Completion(task_id=task, position=60, interval=60, direction="backfill", worker="w2", duration_ms=800,
                      at_ms=9_000)

    history = merged([done], [last], [], limit=10, retries=[first, second])

    assert [(t.status, t.attempts, t.error, t.at_ms) for t in history] == [
        ("success", None, None, 9_000), ("failed", 3, "boom 3", 3_000),
        ("retried", 2, "boom 2", 2_000), ("retried", 1, "boom 1", 1_000)]
    retried = history[2]
    assert (retried.range, retried.direction, retried.worker, retried.duration_ms) == ((60, 120), "backfill", "w1",
                                                                                       1_400)
    assert merged([done], [last], [], limit=2, retries=[first, second]) == history[:2]


def test_attempts_recorded_in_the_same_millisecond_list_the_later_attempt_first() -> None:
    task = f"{M}:0:60"
    attempts = [RetriedAttempt(M, task, n, f"boom {n}", position=0, interval=60, failed_at_ms=5) for n in (1, 2)]
    assert [t.attempts for t in merged([], [], [], limit=10, retries=attempts)] == [2, 1]


def test_failures_are_the_recorded_ones_plus_those_only_the_failure_log_has_yet() -> None:
    def failed(task: str, at_ms: int) -> TaskFailed:
        return TaskFailed(task_id=task, model=M, position=0, interval=60, attempts=3, error="e", failed_at_ms=at_ms)

    old, both, fresh = failed(f"{M}:0:60", 1_000), failed(f"{M}:60:60", 2_000), failed(f"{M}:120:60", 3_000)
    assert failures_known([both, old], [fresh, both], limit=10) == [fresh, both, old]
    assert failures_known([both, old], [fresh, both], limit=2) == [fresh, both]
    again = failed(f"{M}:0:60", 4_000)  # the same task failed again later: a second failure, not a duplicate
    assert failures_known([old], [again], limit=10) == [again, old]
