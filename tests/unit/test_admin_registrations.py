"""The thread that registers admin tables in Spark's catalog: it keeps trying through any failure (a closed
session raises errors that are not Spark's), and never dies with an unhandled exception."""

from __future__ import annotations

import threading

from cbt.adapters.admin_tables.session import AdminTableError
from cbt.adapters.delta_admin import DatabaseListings, Registrations


class FlakySession:
    """Fails its first statements with ``errors`` (in order), then succeeds, recording what it ran."""

    def __init__(self, *errors: Exception) -> None:
        self._errors = list(errors)
        self.created: list[str] = []

    def sql(self, what: str, statement: str) -> list[dict[str, object]]:
        self._fail()
        return []

    def create(self, what: str, statement: str) -> None:
        self._fail()
        self.created.append(statement)

    def _fail(self) -> None:
        if self._errors:
            raise self._errors.pop(0)


def _register(session: FlakySession) -> list[BaseException]:
    uncaught: list[BaseException] = []
    previous = threading.excepthook
    threading.excepthook = lambda hook: uncaught.append(hook.exc_value)  # type: ignore[arg-type,misc]
    try:
        registrations = Registrations(session, DatabaseListings(session), pause_s=0.001)  # type: ignore[arg-type]
        registrations.add(("admin", "cbt_incremental"), "/warehouse/admin.db/cbt_incremental")
        finished = threading.Event()
        threading.Thread(target=lambda: (registrations.wait(), finished.set()), daemon=True).start()
        assert finished.wait(5), f"not registered; uncaught: {uncaught}"
    finally:
        threading.excepthook = previous
    return uncaught


def test_a_spark_error_is_retried() -> None:
    session = FlakySession(AdminTableError("admin tables: list admin tables failed: boom"))
    assert _register(session) == []
    assert any("LOCATION '/warehouse/admin.db/cbt_incremental'" in s for s in session.created)


def test_an_error_that_is_not_spark_s_is_retried_and_does_not_kill_the_thread() -> None:
    session = FlakySession(ValueError("Cannot invoke RPC on closed channel!"))
    assert _register(session) == []
    assert any("CREATE TABLE IF NOT EXISTS" in s for s in session.created)
