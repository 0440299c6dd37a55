"""The admin tables read and written as Delta files with delta-rs: no Spark statement, no admission permit.

The same Delta tables at the same locations as the Spark session writes them (``<warehouse>/<database>.db/<table>``,
where the Spark catalog keeps managed tables), so Spark SQL reads them as before. A table that does not exist yet is
created here, as files, and registered in the catalog afterwards, off the caller's path (``Catalog.register``: an
external table at that location), so a fresh installation starts without waiting for Spark. The catalog is asked
first whether the table exists elsewhere (a database with a location of its own, a server whose warehouse is not
``spark.warehouse``): then its files are read and written there.

Commits keep the guarantees of ``admin_tables.session`` through the Delta log's optimistic concurrency:

- an append is blind: it never conflicts, and delta-rs commits it on top of whatever was committed meanwhile;
- a read-then-write (an invalidation's epoch, a consolidation's rewrite, pruning) commits only at the version right
  after the one it read (``max_commit_retries=0``): if anything else committed in between, the commit fails, and it
  is done again from a fresh read (``rewrite``). On a local file system the log's put-if-absent is a rename; on an
  object store delta-rs needs its locking or conditional-put configuration (``storage_options``).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Literal, Protocol, TypeVar

import pyarrow as pa  # type: ignore[import-untyped]  # (no stubs)
from deltalake import CommitProperties, DeltaTable, write_deltalake
from deltalake.exceptions import CommitFailedError, DeltaError, TableNotFoundError

from cbt.adapters.admin_tables.columns import TableSpec
from cbt.adapters.admin_tables.session import AdminTableError, AdminTableMissing, TableName

log = logging.getLogger("cbt.admin")
T = TypeVar("T")

_ARROW: dict[str, pa.DataType] = {"TIMESTAMP": pa.timestamp("us", tz="UTC"), "STRING": pa.string(),
                                  "BIGINT": pa.int64(), "BOOLEAN": pa.bool_()}
EXACT = CommitProperties(max_commit_retries=0)
"""A commit that must land right after the version it read, or fail."""
REWRITE_ATTEMPTS = 8

class Catalog(Protocol):
    """Where the table is registered (Spark's catalog): it says where an existing table's files are, registers files
    created here, and adds a column an older table lacks."""

    def location(self) -> str | None:
        """Where the table's files are, or None when the catalog has no such table."""
        ...

    def register(self, uri: str) -> None:
        """Record that the table's files are at ``uri`` unless the catalog has the table already (may return before
        it is done)."""
        ...

    def create(self) -> None:
        """Create the table, or add the columns it lacks."""
        ...


class Changed(Exception):
    """Another commit landed between a read and the write based on it: read again."""


def location(warehouse: str, name: TableName) -> str:
    """Where the Spark catalog keeps the managed table ``name``: ``<warehouse>/<database>.db/<table>``."""
    return f"{warehouse.rstrip('/')}/{name[0]}.db/{name[1]}"


def quoted(column: str) -> str:
    return '"' + column.replace('"', '""') + '"'


def literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def equals(values: Mapping[str, str]) -> str:
    """A delta-rs predicate: each column equal to its value."""
    return " AND ".join(f"{quoted(k)} = {literal(v)}" for k, v in values.items())


class FileTable:
    """One admin table's Delta files: ``read`` gives rows as mappings (timestamps as unix milliseconds under the
    column's ``read_as`` name, as the Spark reads give them)."""

    def __init__(self, warehouse: str, name: TableName, spec: TableSpec, storage_options: Mapping[str, str],
                 catalog: Catalog | None, *, attempts: int = REWRITE_ATTEMPTS) -> None:
        self.name, self.spec = name, spec
        self.database = name[0]
        self.uri = location(warehouse, name)
        self._options = dict(storage_options) or None
        self._catalog = catalog
        self._is_located = catalog is None
        self._attempts = attempts
        self._schema = pa.schema([pa.field(c.name, _ARROW[c.type], metadata={"comment": c.comment} if c.comment
                                           else None) for c in spec.columns])

    def ensure(self) -> None:
        """Find the table's files (asking the catalog when they are not at ``uri``), or create them and have the
        catalog register them; migrate an older table through the catalog; then check it has every column."""
        missing = self._missing()
        elsewhere = missing is None and self._locate()  # registered, with its files somewhere else
        if elsewhere:
            missing = self._missing()
        if missing is None:
            self._create_files()
            missing = self._missing()
        elif missing and self._catalog is not None:  # created by an older version: the catalog adds the columns
            self._catalog.create()
            missing = self._missing()
        if self._catalog is not None and not elsewhere:  # (files found here may be a process's that stopped
            self._catalog.register(self.uri)  # before registering them)
        if missing is None:
            raise AdminTableError(f"admin table {self.label}: no Delta table at {self.uri} after creating it")
        if missing:
            raise AdminTableError(f"admin table {self.label}: missing columns {', '.join(missing)}; expected "
                                  f"{', '.join(self.spec.names)}. It was created by something else or an older "
                                  "version: migrate it, or configure another admin table.")

    def _create_files(self) -> None:
        """The table's first commit; when another process commits it first, theirs is the table."""
        try:
            DeltaTable.create(self.uri, self._schema, partition_by=list(self.spec.partitioned_by) or None,
                              mode="ignore", description=self.spec.comment, storage_options=self._options)
        except (DeltaError, OSError) as e:
            if not DeltaTable.is_deltatable(self.uri, storage_options=self._options):
                raise AdminTableError(f"admin table {self.label}: cannot create it at {self.uri}: {e}") from e

    def _missing(self) -> list[str] | None:
        """The columns this code uses that the table lacks; None when there is no table."""
        if not DeltaTable.is_deltatable(self.uri, storage_options=self._options):
            return None
        present = {field.name for field in self.table().schema().fields}
        return [name for name in self.spec.names if name not in present]

    @property
    def label(self) -> str:
        return ".".join(self.name)

    def _locate(self) -> bool:
        """Ask the catalog once where the files are (a database with a location of its own, a server whose
        warehouse is not ``spark.warehouse``); True when that moved ``uri``."""
        if self._is_located or self._catalog is None:
            return False
        self._is_located = True
        found = self._catalog.location()
        if found is None or found == self.uri:
            return False
        log.info("admin tables: %s's files are at %s, not under spark.warehouse", self.label, found)
        self.uri = found
        return True

    def table(self) -> DeltaTable:
        try:
            return DeltaTable(self.uri, storage_options=self._options)
        except TableNotFoundError as e:
            if self._locate():
                return self.table()
            raise AdminTableMissing(f"admin table {self.label}: no Delta table at {self.uri}") from e
        except (DeltaError, OSError) as e:
            raise AdminTableError(f"admin table {self.label}: cannot be read: {e}") from e

    def read(self, table: DeltaTable | None = None, partition: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
        """Every row (of one partition when ``partition`` names its values), as the Spark reads name them."""
        table = table or self.table()
        filters = [(k, "=", v) for k, v in (partition or {}).items()] or None
        try:
            rows: list[dict[str, Any]] = table.to_pyarrow_table(columns=self.spec.names, filters=filters).to_pylist()
        except (DeltaError, OSError) as e:
            raise AdminTableError(f"admin table {self.label}: read failed: {e}") from e
        renamed = [(c.name, c.read_as) for c in self.spec.columns if c.read_as]
        for row in rows:
            for name, read_as in renamed:
                row[read_as] = _ms(row.pop(name))
        return rows

    def append(self, rows: Sequence[Mapping[str, object]], based_on: DeltaTable | None = None) -> None:
        """Append ``rows`` (each names every column) in one Delta commit: blind, or — ``based_on`` the version they
        were derived from — only if nothing else committed since (else ``Changed``)."""
        if rows:
            self._write(rows, "append", based_on=based_on)

    def replace(self, partition: Mapping[str, str], rows: Sequence[Mapping[str, object]], based_on: DeltaTable) -> None:
        """Replace the rows of one partition with ``rows`` in one commit, only if nothing committed since
        ``based_on`` (else ``Changed``)."""
        self._write(rows, "overwrite", based_on=based_on, predicate=equals(partition))

    def delete(self, predicate: str, based_on: DeltaTable) -> None:
        try:
            based_on.delete(predicate, commit_properties=EXACT)
        except CommitFailedError as e:
            raise Changed(str(e)) from e
        except (DeltaError, OSError) as e:
            raise AdminTableError(f"admin table {self.label}: delete failed: {e}") from e

    def _write(self, rows: Sequence[Mapping[str, object]], mode: Literal["append", "overwrite"], *,
               based_on: DeltaTable | None, predicate: str | None = None) -> None:
        data = pa.Table.from_pylist([dict(zip(self.spec.names, self.spec.row(row), strict=True)) for row in rows],
                                    schema=self._schema)
        try:
            commit = EXACT if based_on is not None else None
            if mode == "append":
                write_deltalake(based_on or self.table(), data, mode="append", storage_options=self._options,
                                commit_properties=commit)
            else:
                write_deltalake(based_on or self.table(), data, mode="overwrite", predicate=predicate,
                                storage_options=self._options, commit_properties=commit)
        except CommitFailedError as e:
            if based_on is None:
                raise AdminTableError(f"admin table {self.label}: commit failed: {e}") from e
            raise Changed(str(e)) from e
        except (DeltaError, OSError) as e:
            raise AdminTableError(f"admin table {self.label}: write failed: {e}") from e

    def rewrite(self, what: str, attempt: Callable[[DeltaTable], T]) -> T:
        """``attempt(the table as read now)``, again from a fresh read while another commit keeps landing between
        its read and its write (``Changed``); after the table's ``attempts``, the conflict is raised
        (``is_conflict``)."""
        for n in range(1, self._attempts + 1):
            try:
                return attempt(self.table())
            except Changed:
                log.info("admin tables: %s conflicted with a concurrent commit, retry %d", what, n)
                time.sleep(random.uniform(0.0, min(0.05 * 2**n, 1.0)))
        raise AdminTableError(f"admin tables: {what} failed: DELTA_CONCURRENT commits kept landing first")


def _ms(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return int(value.timestamp() * 1000)
    raise AdminTableError(f"admin tables: expected a timestamp, read {value!r}")
