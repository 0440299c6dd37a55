"""The Spark Connect session every admin table is read and written through: each statement under the admission
permit, a lost session replaced, conflicting rewrites retried and concurrent creation tolerated.

One ``AdminSession`` is shared by the tables of one installation, so a session replaced after a loss serves them all.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext

from pyspark.errors import PySparkException
from pyspark.sql import Row, SparkSession
from pyspark.sql.types import StructType

from cbt.adapters.admin_tables.columns import TableSpec
from cbt.adapters.spark import is_session_lost, quote_identifier
from cbt.base.errors import CbtError

log = logging.getLogger("cbt.admin")
TableName = tuple[str, str]
"""``(database, table)``."""

_CONFLICTS = ("DELTA_CONCURRENT", "ConcurrentAppendException", "ConcurrentDeleteReadException")
Permit = Callable[[], AbstractContextManager[object]]
"""Held around each statement on the admin tables: a Spark admission permit (``cbt.concurrency.admission``)."""

CREATE_ATTEMPTS = 12
_CREATE_RACES = ("ALREADY_EXISTS", "already exists", "DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION",
                 "DELTA_PROTOCOL_CHANGED", "DELTA_METADATA_CHANGED")


class AdminTableError(CbtError):
    """A statement on an admin table failed; the Spark error is chained."""


class AdminTableMissing(AdminTableError):
    """The admin table does not exist (yet): nothing was ever recorded in it."""


def is_conflict(error: BaseException) -> bool:
    """Whether Delta refused a commit because another one changed what this one read (safe to retry)."""
    text = str(error)
    return any(marker in text for marker in _CONFLICTS)


def qualified(name: TableName) -> str:
    """``database.table``, each part back-quoted."""
    return ".".join(quote_identifier(part) for part in name)


class AdminSession:
    """Statements on the admin tables, each one under ``permit`` (none is held while a retry pauses)."""

    def __init__(self, spark: SparkSession, *, conflict_retries: int = 8,
                 reconnect: Callable[[], SparkSession] | None = None, permit: Permit | None = None) -> None:
        self._spark = spark
        self._reconnect = reconnect
        """Makes a new session when the current one is lost (the Spark Connect server restarted)."""
        self._permit: Permit = permit or nullcontext
        self._conflict_retries = conflict_retries

    def sql(self, what: str, statement: str, params: Mapping[str, object] | None = None) -> list[Row]:
        try:
            with self._permit():
                rows: list[Row] = self._spark.sql(statement, args=dict(params or {})).collect()
        except PySparkException as e:
            self._replace_lost_session(e)
            raise AdminTableError(f"admin tables: {what} failed: {e}") from e
        return rows

    def _replace_lost_session(self, error: Exception) -> None:
        """After a lost session, the next call gets a new one; this call fails (its callers retry)."""
        if self._reconnect is not None and is_session_lost(error):
            log.warning("admin tables: the Spark Connect session was lost; reconnecting")
            self._spark = self._reconnect()

    def rewrite(self, what: str, statement: str, params: Mapping[str, object]) -> list[Row]:
        """Run a read-then-rewrite commit, again when Delta reports a concurrent change to what it read."""
        for attempt in range(1, self._conflict_retries):
            try:
                return self.sql(what, statement, params)
            except AdminTableError as e:
                if not is_conflict(e):
                    raise
                log.info("admin tables: %s conflicted with a concurrent commit, retry %d", what, attempt)
                time.sleep(random.uniform(0.0, min(0.05 * 2**attempt, 1.0)))
        return self.sql(what, statement, params)

    def append(self, what: str, table: str, schema: StructType, rows: Sequence[tuple[object, ...]]) -> None:
        """Append ``rows`` in one blind Delta commit (it never conflicts)."""
        try:
            with self._permit():
                self._spark.createDataFrame(rows, schema).write.format("delta").mode("append").saveAsTable(table)
        except PySparkException as e:
            self._replace_lost_session(e)
            raise AdminTableError(f"admin tables: {what} failed: {e}") from e

    def columns(self, table: str) -> set[str]:
        try:
            with self._permit():
                return set(self._spark.table(table).columns)
        except PySparkException as e:
            self._replace_lost_session(e)
            raise AdminTableError(f"admin tables: read the schema of {table} failed: {e}") from e

    def ensure(self, table: str, spec: TableSpec, before_check: Callable[[], None] = lambda: None) -> None:
        """Create ``table`` from ``spec`` when missing (``before_check`` may then migrate it), then check it has the
        columns this code uses."""
        self.create(f"create {table}", spec.create(table))
        before_check()
        self.check_columns(table, spec.names)

    def add_columns(self, table: str, spec: TableSpec, names: Sequence[str]) -> None:
        """Give a table created by an older version the nullable columns ``names`` of ``spec`` it lacks (old rows
        read them as null). Another service may add them at once."""
        for attempt in range(CREATE_ATTEMPTS):
            missing = [name for name in names if name not in self.columns(table)]
            if not missing:
                return
            log.info("admin tables: adding columns %s to %s", ", ".join(missing), table)
            try:
                self.sql(f"add {', '.join(missing)} to {table}",
                         f"ALTER TABLE {table} ADD COLUMNS ({', '.join(spec.column(n).ddl() for n in missing)})")
                return
            except AdminTableError:
                if attempt == CREATE_ATTEMPTS - 1:
                    raise
            time.sleep(0.5 * (attempt + 1))

    def check_columns(self, table: str, expected: list[str]) -> None:
        present = self.columns(table)
        missing = [name for name in expected if name not in present]
        if missing:
            raise AdminTableError(
                f"admin table {table}: missing columns {', '.join(missing)}; expected {', '.join(expected)}. "
                "It was created by something else or an older version: migrate it, or configure another admin table."
            )

    def create(self, what: str, statement: str) -> None:
        # Two services creating the same object at once: the loser sees "already exists", or — while the winner's
        # first commit is written but not yet in the catalog — a non-empty location. Wait a moment and try again.
        for attempt in range(CREATE_ATTEMPTS):
            try:
                self.sql(what, statement)
                return
            except AdminTableError as e:
                if not any(marker in str(e) for marker in _CREATE_RACES) or attempt == CREATE_ATTEMPTS - 1:
                    raise
            time.sleep(0.5 * (attempt + 1))
