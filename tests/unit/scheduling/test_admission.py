"""Admission control's rules: priority classes, queue order, who is granted, expiry (``cbt.scheduling.admission``)."""

from __future__ import annotations

import pytest

from cbt.scheduling import admission as rules
from cbt.scheduling.admission import AdmissionStatus, Board, PriorityClass

TTL_MS, WAITER_TTL_MS = 10_000, 1_000


@pytest.mark.parametrize(("direction", "is_scheduled", "expected"), [
    pytest.param("forward", False, "forward", id="forward-fill"),
    pytest.param("forward", True, "forward", id="scheduled-fire"),
    pytest.param("backfill", False, "backfill", id="backfill"),
    pytest.param("rerun", False, "rerun", id="rerun"),
])
def test_a_task_s_class_follows_its_direction(direction: str, is_scheduled: bool, expected: PriorityClass) -> None:
    assert rules.task_priority(direction, is_scheduled) == expected


def test_the_class_orders_before_the_time_and_the_time_within_a_class() -> None:
    late_admin = rules.order_score("admin", 2_000_000_000_000)
    early_forward = rules.order_score("forward", 1_000_000_000_000)
    assert late_admin < early_forward < rules.order_score("forward", 1_000_000_000_001)
    t = 1_000_000_000_000
    assert rules.order_score("forward", t) < rules.order_score("rerun", t) < rules.order_score("backfill", t)
    assert rules.order_score("backfill", 4_000_000_000_000) < 2**53  # exact as a Redis score (a double)


def test_history_waits_behind_fresher_work_for_a_bounded_time_only() -> None:
    """Issue 24: bounds scans every 2 s and forward tasks kept the permits from a backfill for as long as they came."""
    t = 1_000_000_000_000
    backfill = rules.order_score("backfill", t)
    assert rules.order_score("forward", t + rules.HANDICAP_MS["backfill"] - 1) < backfill
    assert backfill < rules.order_score("forward", t + rules.HANDICAP_MS["backfill"] + 1)
    assert rules.order_score("rerun", t + 1) < rules.order_score("backfill", t)
    assert rules.order_score("admin", t + 10**9) < rules.order_score("forward", t), "the admin record never waits"


def test_a_task_in_a_chain_goes_ahead_of_leaves_by_a_bounded_lead_per_level() -> None:
    """Bench (h): a chain's second level waited for the permits behind leaf models fed by the same source write."""
    t, lead = 1_000_000_000_000, rules.CRITICAL_PATH_LEAD_MS
    leaf = rules.order_score("forward", t)
    assert rules.order_score("forward", t + lead - 1, lead_levels=1) < leaf
    assert leaf < rules.order_score("forward", t + lead + 1, lead_levels=1), "a leaf waits one lead per level at most"
    assert rules.order_score("forward", t + 2 * lead - 1, lead_levels=2) < leaf
    deepest = rules.order_score("forward", t, lead_levels=rules.MAX_LEAD_LEVELS)
    assert rules.order_score("forward", t, lead_levels=rules.MAX_LEAD_LEVELS + 50) == deepest, "the lead is capped"
    assert rules.order_score("admin", t + 10**9) < deepest, "the admin record still never waits"
    assert rules.order_score("forward", t, lead_levels=1) < rules.order_score("backfill", t, lead_levels=1)


@pytest.mark.parametrize(("priority", "feeds_others", "hand_off"), [
    pytest.param("forward", True, rules.HAND_OFF_S, id="forward-feeding"),
    pytest.param("forward", False, 0.0, id="forward-leaf"),
    pytest.param("backfill", True, 0.0, id="backfill-feeding"),
    pytest.param("rerun", True, 0.0, id="rerun-feeding"),
])
def test_only_forward_work_that_feeds_others_hands_its_permit_on(priority: PriorityClass, feeds_others: bool,
                                                                 hand_off: float) -> None:
    """Bench (j): a permit idle 0.3 s after every task of a model with dependents slowed a backlog's catch-up."""
    assert rules.hand_off_s(priority, feeds_others) == hand_off


@pytest.mark.parametrize(("remote", "cluster"), [
    pytest.param("sc://127.0.0.1:15002", "127.0.0.1:15002", id="plain"),
    pytest.param("sc://Spark.Example.com", "spark.example.com:15002", id="default-port-and-case"),
    pytest.param("sc://spark:443/;token=abc;user_id=me", "spark:443", id="parameters-dropped"),
])
def test_a_cluster_is_named_by_its_host_and_port(remote: str, cluster: str) -> None:
    assert rules.cluster_of(remote) == cluster


@pytest.mark.parametrize(("parallelism", "limit"), [(1, 1), (2, 1), (3, 1), (4, 2), (16, 8)])
def test_auto_gives_half_the_cluster_s_parallelism_and_never_zero(parallelism: int, limit: int) -> None:
    assert rules.auto_limit(parallelism) == limit


def test_a_remote_without_a_host_is_refused() -> None:
    with pytest.raises(ValueError, match="sc://host:15002"):
        rules.cluster_of("sc://")


@pytest.mark.parametrize(("holders", "limit", "rank", "expected"), [
    pytest.param(0, 2, 0, True, id="free-head"),
    pytest.param(0, 2, 1, True, id="second-of-two-free"),
    pytest.param(1, 2, 1, False, id="one-free-but-one-ahead"),
    pytest.param(2, 2, 0, False, id="full"),
    pytest.param(3, 2, 0, False, id="over-full-after-a-restore"),
])
def test_a_waiter_is_granted_only_with_fewer_waiters_ahead_than_free_permits(
        holders: int, limit: int, rank: int, expected: bool) -> None:
    assert rules.is_granted(holders, limit, rank) is expected


def attempt(board: Board, member: str, score: int, now_ms: int, limit: int = 1) -> bool:
    return rules.attempt(board, member, score, now_ms, TTL_MS, WAITER_TTL_MS, limit)[0]


def test_waiters_are_served_by_class_then_by_arrival() -> None:
    board = Board()
    assert attempt(board, "holder", rules.order_score("forward", 0), now_ms=0)
    arrivals: list[tuple[str, PriorityClass]] = [("b1", "backfill"), ("f1", "forward"), ("r1", "rerun"),
                                                 ("a1", "admin"), ("f2", "forward")]
    for t, (member, priority) in enumerate(arrivals, start=1):
        assert not attempt(board, member, rules.order_score(priority, t), now_ms=t)
    served: list[str] = []
    for now in range(10, 15):
        rules.release(board, served[-1] if served else "holder")
        granted = [m for m, _ in reversed(arrivals) if m not in served and attempt(board, m, 0, now_ms=now)]
        assert len(granted) == 1, granted
        served += granted
    assert served == ["a1", "f1", "f2", "r1", "b1"]


def test_a_waiter_keeps_the_place_it_took_first() -> None:
    board = Board()
    attempt(board, "holder", 0, now_ms=0)
    attempt(board, "early", 5, now_ms=1)
    attempt(board, "late", 6, now_ms=2)
    assert not attempt(board, "early", 99, now_ms=3)  # a later poll does not move it back
    rules.release(board, "holder")
    assert not attempt(board, "late", 6, now_ms=4)
    assert attempt(board, "early", 5, now_ms=5)


def test_an_expired_permit_comes_back_and_a_renewed_one_does_not() -> None:
    board = Board()
    assert attempt(board, "dies", 0, now_ms=0, limit=2)
    assert attempt(board, "lives", 0, now_ms=0, limit=2)
    assert rules.renew(board, ["lives"], now_ms=TTL_MS - 1, ttl_ms=TTL_MS) == []
    assert not attempt(board, "next", 1, now_ms=TTL_MS - 1, limit=2)
    assert attempt(board, "next", 1, now_ms=TTL_MS, limit=2)
    assert board.status(TTL_MS) == AdmissionStatus(2, executing=2, waiting=0)


def test_a_lost_permit_is_counted_again_only_when_asked() -> None:
    board = Board()
    attempt(board, "stalled", 0, now_ms=0)
    assert rules.renew(board, ["stalled"], now_ms=TTL_MS, ttl_ms=TTL_MS) == ["stalled"]
    assert board.holders == {}
    assert rules.renew(board, ["stalled"], now_ms=TTL_MS, ttl_ms=TTL_MS, add_missing=True) == ["stalled"]
    assert board.holders == {"stalled": 2 * TTL_MS}


def test_a_waiter_that_stopped_polling_stops_blocking_the_queue() -> None:
    board = Board()
    attempt(board, "holder", 0, now_ms=0)
    assert not attempt(board, "dead", rules.order_score("admin", 0), now_ms=0)
    assert not attempt(board, "alive", rules.order_score("forward", 0), now_ms=0)
    rules.release(board, "holder")
    assert not attempt(board, "alive", 0, now_ms=WAITER_TTL_MS - 1)  # the dead one is still ahead
    assert attempt(board, "alive", 0, now_ms=WAITER_TTL_MS)
    assert "dead" not in board.queue
