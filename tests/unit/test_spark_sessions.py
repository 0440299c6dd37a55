"""``SessionPool``: one session per model, replaced after a failure (also how a restarted server is reconnected)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from cbt.adapters.spark import SessionPool, delta_write_warm_up, is_session_lost


@dataclass
class FakeClient:
    closed: bool = False

    def close(self) -> None:
        self.closed = True

    def release_session(self) -> None:
        raise AssertionError("a lost session must not be released on the server (it would block)")


@dataclass
class FakeSession:
    number: int
    client: FakeClient = field(default_factory=FakeClient)


def pool() -> tuple[SessionPool, list[FakeSession]]:
    made: list[FakeSession] = []

    def create(remote: str) -> FakeSession:
        made.append(FakeSession(len(made)))
        return made[-1]

    return SessionPool("sc://spark:15002", create), made  # type: ignore[arg-type]


def test_each_model_gets_a_session_of_its_own_and_keeps_it() -> None:
    sessions, made = pool()
    a, b = sessions.session("an.a"), sessions.session("an.b")
    assert a is not b and sessions.session("an.a") is a and len(made) == 2


def test_a_discarded_session_is_replaced_without_a_server_call_or_a_close() -> None:
    """(pyspark's close shuts down a thread pool every session of the process shares.)"""
    sessions, made = pool()
    first = sessions.session("an.a")
    sessions.discard("an.a", first)
    second = sessions.session("an.a")
    assert not made[0].client.closed and second is not first


def test_discarding_a_session_already_replaced_leaves_the_new_one() -> None:
    sessions, _ = pool()
    first = sessions.session("an.a")
    sessions.discard("an.a", first)
    second = sessions.session("an.a")
    sessions.discard("an.a", first)  # a second failed statement of the old session
    assert sessions.session("an.a") is second


def test_errors_after_which_a_session_is_unusable() -> None:
    assert is_session_lost(RuntimeError("[NO_ACTIVE_SESSION] No active Spark session found."))
    assert is_session_lost(RuntimeError("[RETRIES_EXCEEDED] The maximum number of retries has been exceeded."))
    assert not is_session_lost(RuntimeError("[TABLE_OR_VIEW_NOT_FOUND] The table `x` cannot be found."))


def test_a_session_is_warmed_in_the_background_and_then_used() -> None:
    sessions, made = pool()
    warmed: list[FakeSession] = []
    sessions.warm("shared", warmed.append).join(5)
    assert warmed == [made[0]] and sessions.session("shared") is made[0] and len(made) == 1


def test_a_session_that_fails_to_warm_is_still_used() -> None:
    """(Spark Connect unreachable at start: the worker still runs; a lost session is replaced on first failure.)"""
    sessions, made = pool()

    def fail(session: FakeSession) -> None:
        raise RuntimeError("StatusCode.UNAVAILABLE")

    sessions.warm("shared", fail).join(5)
    assert sessions.session("shared") is made[0]


def test_each_warm_up_statement_holds_a_permit_of_its_own() -> None:
    """A task arriving during the warm-up waits for one statement, not for all three (issue 36's bench (k): the
    restarted worker's first task waited 1.2 s behind the three)."""
    events: list[str] = []

    @contextlib.contextmanager
    def permit() -> Iterator[None]:
        events.append("permit")
        yield
        events.append("released")

    class Recording:
        def sql(self, statement: str) -> Any:
            events.append(statement.split()[0])
            return self

        def collect(self) -> list[object]:
            return []

    delta_write_warm_up("admin", permit)(Recording())  # type: ignore[arg-type]
    assert events == ["permit", "CREATE", "released", "permit", "INSERT", "released", "permit", "DROP", "released"]
