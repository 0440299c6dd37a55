"""Spark Connect sessions (never a JVM in our processes) and statements that stop on the server when they time out.

A session holds state a statement can change: ``SET`` values, temporary views, the current database. ``SessionPool``
keeps a session per key — the worker gives a model that can change that state a session of its own, and the others
one shared session (``cbt.worker.executor``) — and it replaces a lost session, which is how a process reconnects
once the Spark Connect server has restarted (the old session is gone on the server and every statement on it fails).
Creating and dropping sessions can block (pyspark serializes them behind one lock): call them from a thread, never
on the event loop.

No session made here is ever garbage-collected while the process runs (``_EVERY_SESSION``): a pyspark session's
``__del__`` closes its client, and closing any client shuts down the thread pool every session of the process shares
for its ``ReleaseExecute`` calls. Run by the collector inside another thread's submit to that pool, it failed that
thread's statement ("cannot schedule new futures after shutdown") or deadlocked it on the pool's own lock.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import TypeVar

from pyspark.sql import SparkSession
from pyspark.sql.connect.client.retries import DefaultPolicy

from cbt.base.errors import CbtError
from cbt.models.templates import quote_part as quote_identifier

__all__ = ["QueryTimeout", "SessionPool", "connect", "delta_write_warm_up", "is_session_lost", "quote_identifier",
           "run_tagged"]

INTERRUPT_WAIT_S = 30.0
"""How long an interrupted statement's call is waited for before the caller moves on regardless."""
T = TypeVar("T")
log = logging.getLogger("cbt.spark")
_EVERY_SESSION: list[SparkSession] = []
"""Every session ``connect`` made, referenced until the process exits (see the module's docstring): a few objects
per model and per server restart."""
_EVERY_SESSION_LOCK = threading.Lock()


class QueryTimeout(CbtError):
    """A statement outlived its timeout and was interrupted on the Spark Connect server."""


RETRY_POLICY = DefaultPolicy(max_retries=10, max_backoff=5000)
"""How long a call rides out an unreachable server before it fails: about 35 s (the client's default is 10 minutes,
which would hold a task, a scan or a recording that long while the server restarts)."""
SESSION_LOST = ("NO_ACTIVE_SESSION", "No active or default Spark session", "INVALID_HANDLE", "SESSION_CLOSED",
                "RETRIES_EXCEEDED", "StatusCode.UNAVAILABLE", "stopped SparkContext")
"""Errors after which a session is unusable: the server restarted (it forgot the session) or could not be reached."""


def connect(remote: str) -> SparkSession:
    """A new Spark Connect client session on ``remote`` (``sc://host:port``)."""
    session: SparkSession = SparkSession.builder.remote(remote).create()
    client = getattr(session, "client", None)
    if client is not None:
        client.set_retry_policies([RETRY_POLICY])
    with _EVERY_SESSION_LOCK:
        _EVERY_SESSION.append(session)
    return session


def delta_write_warm_up(database: str, permit: Callable[[], AbstractContextManager[object]] = nullcontext,
                        ) -> Callable[[SparkSession], None]:
    """Warms a session for the writes models make: one tiny ``REPLACE WHERE`` into a Delta table of its own in
    ``database``, dropped afterwards. (An append, a read or an ``EXPLAIN`` leave the first real write as slow.) Each
    statement holds a ``permit`` of its own, so a task that arrives meanwhile waits for one statement, not the three
    (1.2 s in front of a restarted worker's first task when they held one permit together)."""
    def warm(session: SparkSession) -> None:
        table = f"{quote_identifier(database)}.{quote_identifier('cbt_warm_up_' + uuid.uuid4().hex)}"
        with permit():
            session.sql(f"CREATE TABLE {table} (position BIGINT) USING DELTA").collect()
        try:
            with permit():
                session.sql(f"INSERT INTO {table} REPLACE WHERE position >= 0 SELECT 1 AS position").collect()
        finally:
            with permit():
                session.sql(f"DROP TABLE IF EXISTS {table}").collect()
    return warm


def is_session_lost(error: BaseException) -> bool:
    """Whether ``error`` means the session must be replaced (see ``SESSION_LOST``)."""
    text = f"{type(error).__name__}: {error}"
    return any(marker in text for marker in SESSION_LOST)


class SessionPool:
    """One Spark Connect session per key, created on first use and replaced once it is lost."""

    def __init__(self, remote: str, create: Callable[[str], SparkSession] = connect) -> None:
        self._remote = remote
        self._create = create
        self._sessions: dict[str, SparkSession] = {}
        self._lock = threading.Lock()

    def session(self, key: str) -> SparkSession:
        with self._lock:
            found = self._sessions.get(key)
            if found is None:
                found = self._sessions[key] = self._create(self._remote)
            return found

    def warm(self, key: str, warm: Callable[[SparkSession], None]) -> threading.Thread:
        """Create ``key``'s session and pass it to ``warm`` in a thread of its own (started and returned); a
        failure is logged: the session is then used cold."""
        def run() -> None:
            began = time.monotonic()
            try:
                warm(self.session(key))
                log.info("Spark session warmed", extra={"key": key, "seconds": round(time.monotonic() - began, 2)})
            except Exception as e:  # the server may be down; a lost session is replaced on its first failure
                log.info("warming a Spark session failed; it is used cold", extra={"key": key, "error": str(e)[:300]})
        thread = threading.Thread(target=run, name=f"cbt-spark-warm-{key}", daemon=True)
        thread.start()
        return thread

    def discard(self, key: str, session: SparkSession) -> None:
        """Forget a lost ``session`` (if it is still ``key``'s): the next ``session(key)`` starts a fresh one. It is
        neither released on the server (gone or unreachable: asking would block for the retry policy) nor closed:
        pyspark's close shuts down a thread pool all sessions of the process share — waiting, under a global lock,
        for its pending calls to an unreachable server. (``connect`` keeps it from the garbage collector.)"""
        with self._lock:
            if self._sessions.get(key) is session:
                del self._sessions[key]

    def close(self) -> None:
        with self._lock:
            sessions, self._sessions = list(self._sessions.values()), {}
        for session in sessions:
            _stop_quietly(session)


async def run_tagged(spark: SparkSession, call: Callable[[], T], timeout_s: float, what: str, limit: str) -> T:
    """Run ``call`` (statements on ``spark``) in a thread under its own operation tag. Past ``timeout_s``, or when
    the caller is cancelled, the tag is interrupted on the Spark Connect server so the work stops there too (instead
    of writing after its task has ended); a timeout raises ``QueryTimeout`` naming ``what`` and the setting
    ``limit`` that gave ``timeout_s``."""
    tag = f"cbt-{uuid.uuid4().hex}"

    def tagged() -> T:
        spark.addTag(tag)  # tags are per thread: this call's statements only
        try:
            return call()
        finally:
            spark.removeTag(tag)

    running = asyncio.ensure_future(asyncio.to_thread(tagged))
    try:
        return await asyncio.wait_for(asyncio.shield(running), timeout_s)
    except TimeoutError:
        await _interrupt(spark, tag, running)
        raise QueryTimeout(f"query timeout: {what} ran longer than {limit} ({timeout_s:g} s) and was interrupted on "
                           "the Spark Connect server") from None
    except asyncio.CancelledError:
        await _interrupt(spark, tag, running)
        raise


async def _interrupt(spark: SparkSession, tag: str, running: asyncio.Future[T]) -> None:
    """Interrupt the tagged statements on the server and wait (bounded) for their call to return."""
    running.add_done_callback(_retrieve)  # its error (interrupted) is expected: not worth a warning
    try:
        await asyncio.wait_for(asyncio.shield(asyncio.to_thread(spark.interruptTag, tag)), INTERRUPT_WAIT_S)
    except Exception as e:  # the server may be gone: the statement then dies with its session
        log.warning("interrupting a statement failed", extra={"tag": tag, "error": str(e)[:300]})
    await asyncio.wait({running}, timeout=INTERRUPT_WAIT_S)
    if not running.done():
        log.warning("an interrupted statement has not returned; moving on", extra={"tag": tag})


def _retrieve(future: asyncio.Future[T]) -> None:
    if not future.cancelled():
        future.exception()


def _stop_quietly(session: SparkSession) -> None:
    try:
        session.stop()
    except Exception as e:  # the server may be gone; the session is abandoned either way
        log.info("stopping a Spark Connect session failed", extra={"error": str(e)[:200]})
