"""One contract for the state ports, run against the in-memory implementation and against real Redis.

Only the Redis cases are marked ``integration`` (the memory cases need no services). Each Redis case gets its own
key prefix, removed afterwards by the ``redis_client`` fixture.
"""

from __future__ import annotations

import functools
import random
import threading
import time
from collections.abc import Callable, Sequence

import pytest
from redis import Redis

from cbt.adapters.redis_state import RedisState
from cbt.models.spec import ModelId
from cbt.scheduling import coverage as cov
from cbt.scheduling.coverage import Coverage, Range
from cbt.scheduling.snapshot import RawBounds
from cbt.scheduling.task_runs import TaskRun
from cbt.state.holds import held_ranges
from cbt.state.ports import Fence, HeldInterval, InFlightTask, StatePorts
from tests.twins.memory_state import DEFAULT_KEEP_INVALIDATIONS, MemoryState

A, B, C = "db.a", "db.b", "db.c"


MakeState = Callable[..., StatePorts]


def singles(ranges: Sequence[Range]) -> list[TaskRun]:
    """Each range one task."""
    return [TaskRun.single(r) for r in ranges]


@pytest.fixture(
    params=[pytest.param("memory", id="memory"), pytest.param("redis", id="redis", marks=pytest.mark.integration)]
)
def make_state(request: pytest.FixtureRequest) -> MakeState:
    """A factory of fresh state ports of the parametrized kind: ``make_state(keep_invalidations=...)``."""
    if request.param == "memory":

        def memory(keep_invalidations: int = DEFAULT_KEEP_INVALIDATIONS) -> StatePorts:
            return MemoryState(keep_invalidations, built=False)

        return memory
    client = request.getfixturevalue("redis_client")
    prefix = request.getfixturevalue("redis_prefix")

    def redis(keep_invalidations: int = DEFAULT_KEEP_INVALIDATIONS) -> StatePorts:
        return RedisState(client, prefix, keep_invalidations)

    return redis


@pytest.fixture
def state(make_state: MakeState) -> StatePorts:
    return make_state()


# --- coverage ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ranges", "expected"),
    [
        pytest.param([], (), id="nothing"),
        pytest.param([(0, 10), (10, 20)], ((0, 20),), id="adjacent-merged"),
        pytest.param([(0, 15), (10, 20)], ((0, 20),), id="overlapping-merged"),
        pytest.param([(30, 40), (0, 10)], ((0, 10), (30, 40)), id="disjoint-kept-sorted"),
        pytest.param([(0, 10), (20, 30), (40, 50), (5, 45)], ((0, 50),), id="bridge-joins-three"),
        pytest.param([(0, 100), (20, 30)], ((0, 100),), id="contained-no-change"),
        pytest.param([(0, 10), (5, 5)], ((0, 10),), id="empty-range-ignored"),
        pytest.param([(2**50, 2**50 + 7)], ((2**50, 2**50 + 7),), id="large-positions-exact"),
    ],
)
def test_record_completed_merges_ranges(state: StatePorts, ranges: list[Range], expected: Coverage) -> None:
    for r in ranges:
        assert state.coverage.record_completed(A, r, observed_seq=0) is True
    assert state.coverage.coverage(A) == expected


@pytest.mark.parametrize(
    ("invalidated", "model", "done", "observed_after", "added"),
    [
        pytest.param((100, 200), A, (150, 250), False, ((200, 250),), id="newer-overlapping-cut-out"),
        pytest.param((100, 200), A, (50, 101), False, ((50, 100),), id="newer-one-position-overlap-cut-out"),
        pytest.param((100, 200), A, (120, 180), False, (), id="newer-covering-refused"),
        pytest.param((100, 200), A, (200, 300), False, ((200, 300),), id="newer-touching-accepted"),
        pytest.param((100, 200), A, (300, 400), False, ((300, 400),), id="newer-disjoint-accepted"),
        pytest.param((100, 200), A, (150, 250), True, ((150, 250),), id="older-overlapping-accepted"),
        pytest.param((100, 200), B, (150, 250), False, ((150, 250),), id="other-models-invalidation-ignored"),
    ],
)
def test_record_completed_against_invalidations(
    state: StatePorts, invalidated: Range, model: ModelId, done: Range, observed_after: bool, added: Coverage
) -> None:
    """A task that read the sequence before an overlapping invalidation may not mark what it overlaps covered
    (docs/protocol.md#re-runs); the rest of its range it computed from valid data
    (``cbt.scheduling.protocol.accepted_part``)."""
    observed = state.coverage.invalidation_seq(model)
    state.coverage.apply_invalidation(1, {A: singles([invalidated])})
    if observed_after:
        observed = state.coverage.invalidation_seq(model)
    assert state.coverage.record_completed(model, done, observed) is (added == (done,))
    assert state.coverage.coverage(model) == added


def _rebuilt(state: StatePorts, model: ModelId, coverage: Coverage, seq: int) -> None:
    assert state.coverage.replace_coverage(model, coverage, seq, state.coverage.versions([model])[model])


def test_apply_invalidation_removes_only_the_ranges_across_models(state: StatePorts) -> None:
    _rebuilt(state, A, ((0, 100), (200, 300)), 0)
    _rebuilt(state, B, ((0, 1000),), 4)
    state.coverage.apply_invalidation(5, {A: singles([(50, 250), (280, 290)]), B: singles([(100, 200), (900, 1100)]),
                                          C: []})
    assert state.coverage.coverages([A, B, C]) == {
        A: ((0, 50), (250, 280), (290, 300)),
        B: ((0, 100), (200, 900)),
        C: (),
    }
    assert [state.coverage.invalidation_seq(m) for m in (A, B, C)] == [5, 5, 5]
    state.coverage.apply_invalidation(6, {A: singles([(0, 10)])})
    assert state.coverage.coverage(A) == ((10, 50), (250, 280), (290, 300))
    assert [state.coverage.invalidation_seq(m) for m in (A, B)] == [6, 5]


def test_invalidated_tasks_stay_listed_as_re_runs_until_the_coverage_holds_them_again(state: StatePorts) -> None:
    """Scenario 10: the tasks themselves are kept, so each is planned whole and once, not the gap they leave."""
    state.coverage.record_completed(A, (17, 917), 0)
    state.coverage.apply_invalidation(1, {A: singles([(317, 617), (617, 917)]), B: singles([(0, 10)])})
    assert state.coverage.reruns([A, B, C]) == {A: ((317, 617), (617, 917)), B: ((0, 10),), C: ()}
    assert state.coverage.record_completed(A, (617, 917), 0) is False, "read before the event: not a re-run"
    assert state.coverage.reruns([A])[A] == ((317, 617), (617, 917))
    assert state.coverage.record_completed(A, (617, 917), 1)
    assert state.coverage.record_completed(A, (317, 467), 1)
    assert state.coverage.reruns([A])[A] == ((317, 617),), "half of it ran: still to re-run whole"
    assert state.coverage.record_completed(A, (467, 617), 1)
    assert state.coverage.reruns([A])[A] == ()
    state.coverage.apply_invalidation(1, {A: singles([(317, 617)])})
    assert state.coverage.reruns([A])[A] == (), "a redelivered epoch lists nothing again"


def test_a_run_of_tasks_is_removed_and_listed_whole_then_split_as_its_tasks_run_again(state: StatePorts) -> None:
    """An affected set is stored as runs (one member for a year of tasks); each task still re-runs whole, once."""
    state.coverage.record_completed(A, (0, 6000), 0)
    state.coverage.apply_invalidation(1, {A: [TaskRun(1000, 5000, 60)]})  # 66 tasks of 60, the last one of 40
    assert state.coverage.coverage(A) == ((0, 1000), (5000, 6000))
    pending = state.coverage.reruns([A])[A]
    assert (len(pending), pending[0], pending[-1]) == (67, (1000, 1060), (4960, 5000))
    assert state.coverage.record_completed(A, (1060, 1120), 1)
    assert state.coverage.record_completed(A, (1100, 1130), 1), "part of a task: it stays pending"
    assert state.coverage.record_completed(A, (4960, 5000), 1), "the short last task"
    after = state.coverage.reruns([A])[A]
    assert (1060, 1120) not in after and (4960, 5000) not in after and (1120, 1180) in after
    assert len(after) == 65


@pytest.mark.integration
@pytest.mark.timeout(30)
def test_a_re_run_member_with_a_step_that_is_not_positive_is_one_task(redis_client: Redis, redis_prefix: str) -> None:
    """A member written by hand (``start:end:0``) neither stalls the completion script in an endless loop over its
    tasks (Redis would answer BUSY to every client) nor breaks the listing: it is one task."""
    state = RedisState(redis_client, redis_prefix)
    redis_client.zadd(f"{redis_prefix}rerun:{A}", {"10:30:0": 10, "40:50:-5": 40})
    assert state.coverage.reruns([A])[A] == ((10, 30), (40, 50))
    assert state.coverage.record_completed(A, (0, 35), 0)
    assert state.coverage.reruns([A])[A] == ((40, 50),)
    state.coverage.apply_invalidation(1, {A: [TaskRun(60, 70, 0)]})
    assert state.coverage.reruns([A])[A] == ((40, 50), (60, 70))


def test_a_rebuild_replaces_the_re_runs(state: StatePorts) -> None:
    state.coverage.apply_invalidation(1, {A: singles([(0, 10)])})
    version = state.coverage.versions([A])[A]
    assert state.coverage.replace_coverage(A, ((10, 20),), 1, version, singles([(20, 30), (30, 40)]))
    assert state.coverage.reruns([A])[A] == ((20, 30), (30, 40))
    assert state.coverage.coverage(A) == ((10, 20),)


def test_an_epoch_is_applied_once(state: StatePorts) -> None:
    """A redelivered event must neither move the sequence nor remove what re-runs restored since (scenario 4)."""
    state.coverage.record_completed(A, (0, 100), 0)
    state.coverage.apply_invalidation(3, {A: singles([(40, 60)])})
    assert state.coverage.record_completed(A, (40, 60), 3), "the re-run"
    state.coverage.apply_invalidation(3, {A: singles([(40, 60)])})
    assert state.coverage.coverage(A) == ((0, 100),)
    assert state.coverage.invalidation_seq(A) == 3
    state.coverage.apply_invalidation(2, {A: singles([(0, 10)])})
    assert state.coverage.invalidation_seq(A) == 3, "an older epoch applied late never lowers the sequence"
    assert state.coverage.coverage(A) == ((10, 100),)


def test_an_event_applied_after_the_log_was_pruned_past_it_still_applies(make_state: MakeState) -> None:
    """A delayed event (an invalidator in a crash loop) must not be taken for applied because later marks pushed
    the pruning floor past its epoch."""
    state = make_state(keep_invalidations=2)
    state.coverage.record_completed(A, (0, 100), 0)
    for epoch in (4, 5, 6):
        state.coverage.apply_invalidation(epoch, {A: singles([(90 + epoch, 91 + epoch)])})
    state.coverage.apply_invalidation(3, {A: singles([(10, 20)])})
    assert state.coverage.coverage(A) == ((0, 10), (20, 94), (97, 100))


def test_unknown_model_has_sequence_zero_and_no_coverage(state: StatePorts) -> None:
    assert state.coverage.invalidation_seq(A) == 0
    assert state.coverage.coverage(A) == ()
    assert state.coverage.coverages([]) == {}
    state.coverage.apply_invalidation(1, {})


def test_replace_coverage_overwrites_and_restarts_the_log(state: StatePorts) -> None:
    state.coverage.record_completed(A, (0, 10), observed_seq=0)
    _rebuilt(state, A, ((20, 30), (30, 40), (60, 70)), 7)
    assert state.coverage.coverage(A) == ((20, 40), (60, 70))
    assert state.coverage.invalidation_seq(A) == 7
    assert state.coverage.record_completed(A, (100, 110), observed_seq=6) is False, "older than the rebuild"
    assert state.coverage.record_completed(A, (100, 110), observed_seq=7) is True
    _rebuilt(state, A, (), 7)
    assert state.coverage.coverage(A) == ()


def test_every_covered_range_says_which_version_computed_it(state: StatePorts) -> None:
    """A completion replaces the version its range held; one recorded without a version leaves its range unknown
    (``None``), as a deployment made before versions did; a partly refused completion versions only what it added."""
    hot = state.coverage
    assert hot.version_coverage([A]) == {A: {}}
    hot.record_completed(A, (0, 10), 0, version="v1")
    hot.record_completed(A, (10, 20), 0, version="v1")
    hot.record_completed(A, (30, 40), 0, version="v1")
    assert hot.version_coverage([A]) == {A: {"v1": ((0, 20), (30, 40))}}
    hot.record_completed(A, (5, 35), 0, version="v2")
    assert hot.version_coverage([A]) == {A: {"v1": ((0, 5), (35, 40)), "v2": ((5, 35),)}}
    hot.record_completed(A, (35, 50), 0)
    assert hot.version_coverage([A, B]) == {A: {"v1": ((0, 5),), "v2": ((5, 35),), None: ((35, 50),)}, B: {}}
    observed = hot.invalidation_seq(A)
    hot.apply_invalidation(1, {A: singles([(0, 10)])})
    assert hot.version_coverage([A]) == {A: {"v2": ((10, 35),), None: ((35, 50),)}}, "an invalidation unversions"
    assert hot.record_completed(A, (0, 20), observed, version="v3") is False
    assert hot.version_coverage([A]) == {A: {"v3": ((10, 20),), "v2": ((20, 35),), None: ((35, 50),)}}


def test_a_rebuild_and_an_adoption_set_the_versions_of_ranges(state: StatePorts) -> None:
    """A rebuild takes each range's version from the durable record; a switch adopts its build's versions where
    the build covers (the head the build left keeps its own until its re-run)."""
    hot = state.coverage
    hot.record_completed(A, (0, 10), 0, version="old")
    assert hot.replace_coverage(A, ((0, 100),), 3, hot.versions([A])[A], (),
                                {"v1": ((0, 40), (90, 120)), "v2": ((40, 60),)})
    assert hot.version_coverage([A]) == {A: {"v1": ((0, 40), (90, 100)), "v2": ((40, 60),), None: ((60, 90),)}}
    version = hot.versions([A])[A]
    hot.adopt_versions(A, {"v3": ((0, 50),), "v4": ((80, 95),)})
    assert hot.version_coverage([A]) == {A: {"v3": ((0, 50),), "v2": ((50, 60),), None: ((60, 80),),
                                             "v4": ((80, 95),), "v1": ((95, 100),)}}
    assert hot.versions([A])[A] != version, "an adoption is a write a rebuild must not overwrite"
    assert hot.coverage(A) == ((0, 100),)


@pytest.mark.parametrize("write", ["completion", "invalidation", "rebuild"])
def test_a_rebuild_does_not_overwrite_a_model_written_since_it_read(state: StatePorts, write: str) -> None:
    """Scenario 2: a rebuild read the durable record, then an invalidation (or a completion) reached Redis."""
    version = state.coverage.versions([A])[A]
    if write == "completion":
        state.coverage.record_completed(A, (0, 10), 0)
    elif write == "invalidation":
        state.coverage.apply_invalidation(1, {A: singles([(0, 10)])})
    else:
        _rebuilt(state, A, ((0, 5),), 0)
    before = state.coverage.coverage(A), state.coverage.invalidation_seq(A)
    assert state.coverage.replace_coverage(A, ((0, 1000),), 0, version) is False
    assert (state.coverage.coverage(A), state.coverage.invalidation_seq(A)) == before
    assert state.coverage.versions([B])[B] == state.coverage.versions([B])[B], "reading changes nothing"


def test_index_is_untrusted_until_marked_built(state: StatePorts) -> None:
    assert state.coverage.is_built() is False, "a fresh (or emptied) index must not pass for an empty one"
    generation = state.coverage.generation()
    _rebuilt(state, A, ((0, 10),), 0)
    assert state.coverage.is_built() is False, "only the end of a rebuild marks it built"
    assert state.coverage.mark_built(1_700_000_000, "another-life") is False
    assert state.coverage.is_built() is False
    assert state.coverage.mark_built(1_700_000_000, generation) is True
    assert state.coverage.is_built() is True


def test_emptying_the_index_changes_its_generation_and_fences_the_rebuild(make_state: MakeState,
                                                                          request: pytest.FixtureRequest) -> None:
    state = make_state()
    generation, version = state.coverage.generation(), state.coverage.versions([A])[A]
    _flush(state, request)
    assert state.coverage.generation() != generation
    assert state.coverage.replace_coverage(A, ((0, 10),), 0, version) is False, "read before Redis was emptied"
    assert state.coverage.mark_built(1, generation) is False


def _flush(state: StatePorts, request: pytest.FixtureRequest) -> None:
    if isinstance(state, MemoryState):
        state.coverage.flush()
        return
    client, prefix = request.getfixturevalue("redis_client"), request.getfixturevalue("redis_prefix")
    client.delete(*client.scan_iter(match=prefix + "*"))


def test_a_completion_counts_only_under_the_lease_it_ran_with(state: StatePorts) -> None:
    token = state.leases.acquire("task:x", "w1", 60_000)
    assert token is not None
    assert state.coverage.record_completed(A, (0, 10), 0, Fence("task:x", "w1", token))
    state.leases.release("task:x", "w1")
    assert state.leases.acquire("task:x", "w2", 60_000) is not None
    assert state.coverage.record_completed(A, (10, 20), 0, Fence("task:x", "w1", token)) is False, "taken over"
    assert state.coverage.coverage(A) == ((0, 10),)


def test_scheduled_runs_are_flagged_per_model(state: StatePorts) -> None:
    assert state.coverage.scheduled_ran([A, B]) == set()
    assert not state.coverage.has_fired(A, 120)
    state.coverage.record_scheduled_run(A, 120)
    state.coverage.record_scheduled_run(A, 60)
    assert state.coverage.scheduled_ran([A, B]) == {A}
    assert state.coverage.latest_fires([A, B]) == {A: 120}, "the latest fire, not the last recorded"
    assert [state.coverage.has_fired(A, t) for t in (60, 90, 120)] == [True, False, True]
    assert state.coverage.scheduled_ran([B]) == set()
    assert state.coverage.scheduled_ran([]) == set()


def test_record_refused_when_observed_sequence_is_ahead_of_the_state(state: StatePorts) -> None:
    """The hot state was reset after the worker read the sequence: fail closed, the task is planned again."""
    assert state.coverage.record_completed(A, (0, 10), observed_seq=3) is False
    assert state.coverage.coverage(A) == ()


def test_pruned_invalidation_log_fails_closed(make_state: MakeState) -> None:
    state = make_state(keep_invalidations=2)
    for epoch in (1, 2, 3):
        state.coverage.apply_invalidation(epoch, {A: singles([(1000, 2000)])})
    assert state.coverage.record_completed(A, (0, 10), observed_seq=0) is False, "invalidation 1 was forgotten"
    assert state.coverage.record_completed(A, (0, 10), observed_seq=1) is True
    assert state.coverage.record_completed(A, (1500, 1600), observed_seq=2) is False, "invalidation 3 is kept"


# --- bounds -----------------------------------------------------------------------------------------------------


def test_bounds_put_returns_previous_and_reads_many(state: StatePorts) -> None:
    assert state.bounds.put_bounds(A, RawBounds(0, 100)) is None
    assert state.bounds.put_bounds(A, RawBounds(10, 200)) == RawBounds(0, 100)
    assert state.bounds.put_bounds(B, RawBounds(5, 2**50)) is None
    assert state.bounds.bounds([A, B, C]) == {A: RawBounds(10, 200), B: RawBounds(5, 2**50)}
    assert state.bounds.bounds([]) == {}


# --- task ledger ------------------------------------------------------------------------------------------------


def _task(task_id: str, r: Range | None = (0, 10), deadline_ms: int = 10_000) -> InFlightTask:
    return InFlightTask(task_id=task_id, range=r, deadline_ms=deadline_ms)


def test_ledger_claim_deduplicates_by_task_id(state: StatePorts) -> None:
    assert state.ledger.claim(A, _task("t1")) is True
    assert state.ledger.claim(A, _task("t1", r=(50, 60), deadline_ms=20_000)) is False
    assert state.ledger.claim(B, _task("t1")) is True, "ids are per model"
    assert state.ledger.in_flight([A], now_ms=0) == {A: (_task("t1"),)}


def test_ledger_claims_and_extends_a_pass_of_tasks_in_one_call(state: StatePorts) -> None:
    """(A tick claims thousands of tasks: one call, not one round trip each.) Ids in flight, or repeated in the
    batch, are refused; only claimed tasks are extended."""
    state.ledger.claim(A, _task("busy"))
    claimed = state.ledger.claim_all([(A, _task("busy")), (A, _task("t1")), (B, _task("t1")), (A, _task("t1"))])
    assert claimed == [False, True, True, False]
    extended = state.ledger.extend_all([(A, _task("t1", deadline_ms=50_000)), (B, _task("gone", deadline_ms=50_000))])
    assert extended == [True, False]
    assert state.ledger.in_flight([A, B], now_ms=0) == {A: (_task("busy"), _task("t1", deadline_ms=50_000)),
                                                        B: (_task("t1"),)}
    assert state.ledger.claim_all([]) == [] and state.ledger.extend_all([]) == []


def test_ledger_in_flight_by_deadline_with_ranges(state: StatePorts) -> None:
    tasks = [_task("late", (20, 30), 3000), _task("sched", None, 2000), _task("early", (0, 10), 1000)]
    for t in tasks:
        state.ledger.claim(A, t)
    assert state.ledger.in_flight([A, B], now_ms=0) == {A: tuple(reversed(tasks)), B: ()}
    assert state.ledger.in_flight([], now_ms=0) == {}


def test_ledger_drops_entries_past_their_deadline(state: StatePorts) -> None:
    state.ledger.claim(A, _task("stale", deadline_ms=999))
    state.ledger.claim(A, _task("due-now", deadline_ms=1000))
    assert state.ledger.in_flight([A], now_ms=1000) == {A: (_task("due-now", deadline_ms=1000),)}
    assert state.ledger.in_flight([A], now_ms=0) == {A: (_task("due-now", deadline_ms=1000),)}, "removed for good"
    assert state.ledger.claim(A, _task("stale", deadline_ms=5000)) is True, "an expired task is planned again"


def test_ledger_release(state: StatePorts) -> None:
    state.ledger.claim(A, _task("t1"))
    state.ledger.claim(A, _task("t2"))
    state.ledger.release(A, "t1")
    state.ledger.release(A, "missing")
    state.ledger.release(B, "t2")
    assert state.ledger.in_flight([A], now_ms=0) == {A: (_task("t2"),)}
    assert state.ledger.claim(A, _task("t1")) is True


def test_ledger_extend_moves_only_a_claimed_task(state: StatePorts) -> None:
    state.ledger.claim(A, InFlightTask("t1", (0, 10), 100))
    assert state.ledger.extend(A, InFlightTask("t1", (0, 10), 5_000)) is True
    assert state.ledger.in_flight([A], now_ms=1_000) == {A: (InFlightTask("t1", (0, 10), 5_000),)}
    assert state.ledger.extend(A, InFlightTask("gone", (10, 20), 5_000)) is False
    assert state.ledger.in_flight([A], now_ms=0) == {A: (InFlightTask("t1", (0, 10), 5_000),)}, "nothing registered"


# --- leases -----------------------------------------------------------------------------------------------------


def test_lease_is_exclusive_until_released(state: StatePorts) -> None:
    first = state.leases.acquire("tick", "owner-a", ttl_ms=10_000)
    assert first is not None
    assert state.leases.acquire("tick", "owner-b", ttl_ms=10_000) is None
    assert state.leases.acquire("tick", "owner-a", ttl_ms=10_000) is None, "not re-entrant"
    state.leases.release("tick", "owner-b")
    assert state.leases.acquire("tick", "owner-b", ttl_ms=10_000) is None, "only the owner releases"
    state.leases.release("tick", "owner-a")
    second = state.leases.acquire("tick", "owner-b", ttl_ms=10_000)
    assert second is not None and second > first
    other = state.leases.acquire("other", "owner-a", ttl_ms=10_000)
    assert other is not None, "names are independent"


def test_lease_renew_only_by_owner(state: StatePorts) -> None:
    state.leases.acquire("tick", "owner-a", ttl_ms=10_000)
    assert state.leases.renew("tick", "owner-a", ttl_ms=10_000) is True
    assert state.leases.renew("tick", "owner-b", ttl_ms=10_000) is False
    assert state.leases.renew("never", "owner-a", ttl_ms=10_000) is False


def test_lease_expires_and_fencing_token_increases(state: StatePorts) -> None:
    first = state.leases.acquire("task", "owner-a", ttl_ms=100)
    time.sleep(0.25)
    assert state.leases.renew("task", "owner-a", ttl_ms=100) is False, "expired"
    second = state.leases.acquire("task", "owner-b", ttl_ms=10_000)
    assert first is not None and second is not None and second > first
    state.leases.release("task", "owner-a")
    assert state.leases.acquire("task", "owner-c", ttl_ms=10_000) is None, "a stale owner cannot release"


# --- concurrency ------------------------------------------------------------------------------------------------


def _run_threads(targets: Sequence[Callable[[], None]]) -> None:
    threads = [threading.Thread(target=t) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)


def test_concurrent_completions_all_merge(state: StatePorts) -> None:
    done: list[Range] = []

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(150):
            start = rng.randrange(0, 3000, 10)
            r = (start, start + rng.choice((10, 20, 50)))
            assert state.coverage.record_completed(A, r, observed_seq=0)
            done.append(r)

    _run_threads([functools.partial(worker, seed) for seed in range(4)])
    assert state.coverage.coverage(A) == cov.merge(done)


Attempt = tuple[ModelId, Range, int, bool]


def test_invalidation_wins_over_racing_completions(state: StatePorts) -> None:
    """Workers record while an invalidator removes random ranges; the result equals a serial oracle
    (docs/design/invalidations.md#invalidation-wins-over-in-flight-tasks)."""
    models = (A, B)
    attempts: list[Attempt] = []
    invalidations: list[tuple[int, dict[ModelId, Range]]] = []

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(150):
            model = rng.choice(models)
            observed = state.coverage.invalidation_seq(model)
            start = rng.randrange(0, 20_000, 10)
            r = (start, start + 10)
            time.sleep(rng.random() / 1000)  # the task runs
            attempts.append((model, r, observed, state.coverage.record_completed(model, r, observed)))

    def invalidator() -> None:
        rng = random.Random(99)
        for _ in range(40):
            chosen: dict[ModelId, Range] = {}
            for model in models:
                start = rng.randrange(0, 20_000, 100)
                chosen[model] = (start, start + rng.choice((100, 1000, 4000)))
            epoch = len(invalidations) + 1
            state.coverage.apply_invalidation(epoch, {m: singles([r]) for m, r in chosen.items()})
            invalidations.append((epoch, chosen))
            time.sleep(0.002)

    _run_threads([invalidator, *(functools.partial(worker, seed) for seed in range(4))])
    for model in models:
        assert state.coverage.invalidation_seq(model) == len(invalidations)
        ranges = [(seq, chosen[model]) for seq, chosen in invalidations]
        mine = [a for a in attempts if a[0] == model]
        assert state.coverage.coverage(model) == _expected_coverage(ranges, mine)
        for _, r, observed, is_accepted in mine:
            is_stale = any(seq > observed and r[0] < e and s < r[1] for seq, (s, e) in ranges)
            assert is_accepted or is_stale, f"{r} observed {observed} refused with no newer overlapping invalidation"


def _expected_coverage(invalidations: list[tuple[int, Range]], attempts: list[Attempt]) -> Coverage:
    """Position p stays covered iff a completion covers it having observed the last invalidation of p (a refused
    completion still adds the parts no newer invalidation overlaps)."""
    last_seq: dict[int, int] = {}
    for seq, (s, e) in sorted(invalidations):
        for p in range(s, e):
            last_seq[p] = seq
    covered = {p for _, (s, e), observed, _ in attempts for p in range(s, e) if last_seq.get(p, 0) <= observed}
    return cov.merge((p, p + 1) for p in covered)


# --- skipped ranges ---------------------------------------------------------------------------------------------


def test_skipped_ranges_merge_split_and_go_away_per_model(state: StatePorts) -> None:
    assert state.skips.skipped([A, B]) == {}
    assert state.skips.skip(A, (100, 200)) == ((100, 200),)
    assert state.skips.skip(A, (200, 260)) == ((100, 260),), "touching ranges merge"
    assert state.skips.skip(B, (0, 10)) == ((0, 10),)
    assert state.skips.unskip(A, (150, 160)) == ((100, 150), (160, 260)), "unskipping a middle part splits it"
    assert state.skips.skipped([A, B, C]) == {A: ((100, 150), (160, 260)), B: ((0, 10),)}
    assert state.skips.unskip(B, (0, 100)) == ()
    assert state.skips.skipped([A, B]) == {A: ((100, 150), (160, 260))}


def test_concurrent_skips_of_one_model_are_all_kept(state: StatePorts) -> None:
    ranges = [(i * 10, i * 10 + 5) for i in range(40)]
    threads = [threading.Thread(target=state.skips.skip, args=(A, r)) for r in ranges]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert state.skips.skipped([A]) == {A: tuple(ranges)}


def test_intervals_held_by_a_failed_check_are_replaced_and_released_whole(state: StatePorts) -> None:
    assert state.holds.held([A, B]) == {}
    first = [HeldInterval(0, 10, "v1", "check not_null_a failed: 1 violating row"), HeldInterval(20, 30, "v1", "x")]
    state.holds.hold(A, first)
    state.holds.hold(A, [HeldInterval(20, 30, "v2", "y")])
    state.holds.hold(B, [HeldInterval(0, 10, None, "z")])
    assert state.holds.held([A, B, C]) == {A: (first[0], HeldInterval(20, 30, "v2", "y")),
                                           B: (HeldInterval(0, 10, None, "z"),)}

    assert state.holds.release(A, (5, 6)) == [first[0]], "any overlap releases the whole interval"
    assert state.holds.release(A, (10, 20)) == []
    assert state.holds.held([A]) == {A: (HeldInterval(20, 30, "v2", "y"),)}
    assert state.holds.release(A, (0, 100)) == [HeldInterval(20, 30, "v2", "y")]
    assert state.holds.held([A, B]) == {B: (HeldInterval(0, 10, None, "z"),)}


def test_an_accepted_interval_stays_listed_but_planning_no_longer_leaves_it_alone(state: StatePorts) -> None:
    state.holds.hold(A, [HeldInterval(0, 10, "v1", "x"), HeldInterval(20, 30, "v2", "y")])
    assert state.holds.accept(A, (0, 100), "tok-1", "v1") == [HeldInterval(0, 10, "v1", "x", "tok-1")]
    assert state.holds.accept(A, (0, 5), "tok-2", None) == [HeldInterval(0, 10, "v1", "x", "tok-1")], \
        "who accepted first stays"
    assert state.holds.accept(B, (0, 100), "tok-1", None) == []
    held = state.holds.held([A])
    assert held == {A: (HeldInterval(0, 10, "v1", "x", "tok-1"), HeldInterval(20, 30, "v2", "y"))}
    assert held_ranges(held, {A: "v2"}) == {A: ((20, 30),)}
    assert held_ranges(held, {A: "v1"}) == {}
    assert state.holds.release(A, (0, 10)) == [HeldInterval(0, 10, "v1", "x", "tok-1")]


def test_concurrent_holds_of_one_model_are_all_kept(state: StatePorts) -> None:
    held = [HeldInterval(i * 10, i * 10 + 5, "v", "r") for i in range(40)]
    threads = [threading.Thread(target=state.holds.hold, args=(A, [h])) for h in held]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert state.holds.held([A]) == {A: tuple(held)}


def test_a_re_run_listed_before_runs_one_task_per_member_is_still_read_and_dropped(redis_client: Redis,
                                                                                    redis_prefix: str) -> None:
    """Redis holding members written by an earlier version ("start:end", one task) keeps working after an upgrade."""
    state = RedisState(redis_client, redis_prefix)
    state.coverage.apply_invalidation(1, {A: [TaskRun(0, 30, 10)]})
    redis_client.zadd(f"{redis_prefix}rerun:{A}", {"100:160": 100})
    assert state.coverage.reruns([A])[A] == ((0, 10), (10, 20), (20, 30), (100, 160))
    assert state.coverage.record_completed(A, (100, 160), 1)
    assert state.coverage.reruns([A])[A] == ((0, 10), (10, 20), (20, 30))


def test_a_pruned_invalidation_is_forgotten_and_older_completions_fail_closed(state: StatePorts) -> None:
    state.coverage.record_completed(A, (0, 100), 0)
    state.coverage.apply_invalidation(1, {A: singles([(0, 10)])})
    state.coverage.apply_invalidation(2, {A: singles([(50, 60)])})
    assert state.coverage.record_completed(A, (0, 10), 1)
    state.coverage.forget_invalidation({A: 1})
    assert state.coverage.record_completed(A, (20, 30), 0) is False, "read before the pruned epoch: refused"
    assert state.coverage.record_completed(A, (50, 60), 1) is False, "the kept mark of epoch 2 still applies"
    assert state.coverage.record_completed(A, (50, 60), 2)
    assert state.coverage.coverage(A) == ((0, 100),)
    assert state.coverage.invalidation_seq(A) == 2


def test_the_announced_version_of_each_model_is_the_latest_one_and_unknown_models_are_absent(state: StatePorts) -> None:
    assert state.coverage.deployed_versions(["an.a", "an.b"]) == {}
    state.coverage.announce_versions({"an.a": "1111aaaa2222", "an.b": "3333bbbb4444"})
    state.coverage.announce_versions({"an.a": "5555cccc6666"})
    assert state.coverage.deployed_versions(["an.a", "an.b", "an.c"]) == {"an.a": "5555cccc6666",
                                                                          "an.b": "3333bbbb4444"}
    assert state.coverage.deployed_versions([]) == {}
