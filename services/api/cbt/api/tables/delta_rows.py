"""The exposed tables read straight from their Delta files with delta-rs and its DataFusion engine, in the api
process: a read never waits behind the workers' statements on Spark, and costs the cluster nothing.

A table is found where the Spark catalog keeps managed tables: ``<api.tables.warehouse>/<database>.db/<table>``;
once a switch moved a model's name to its build's files (``cbt.adapters.switch``), in the folder the versions record
says its live version's files are (read again every ``FOLDERS_TTL_S``). A read pins a Delta version (a snapshot:
later commits do not change it), runs one statement and stops at ``query_timeout_s`` between record batches.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import logging
import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]  # (no stubs; only record_batch and to_pylist are used)
from deltalake import DeltaTable, QueryBuilder
from deltalake.exceptions import DeltaError, TableNotFoundError

from cbt.api.tables.row_query import Column
from cbt.config.settings import TablesApiConfig, warehouse_location
from cbt.models.spec import ModelId

log = logging.getLogger("cbt.api.tables")


class TableUnreadable(Exception):
    """The table is not there (not created yet: 404), or its version is gone (vacuumed: 410): the reason in words."""

    def __init__(self, detail: str, status: int = 404) -> None:
        super().__init__(detail)
        self.status = status


class ReadTimedOut(Exception):
    """The read ran past its time limit."""


FOLDERS_TTL_S = 2.0
"""How long the live versions' folders are used before the versions record is read again: for that long after a
switch, reads may still get the old version (never a mix of the two)."""

Folders = Callable[[], Mapping[ModelId, str]]
"""Each switched model's live folder in its database's folder (``live_folders``)."""


@dataclass(frozen=True)
class Snapshot:
    """One version of a table: what a page is read from."""

    model_id: ModelId
    version: int
    columns: tuple[Column, ...]
    table: DeltaTable
    folder: str
    """The table's folder in its database's: later pages read the same table, even after a switch."""


class DeltaRows:
    """Reads of the exposed tables' rows, each from a pinned snapshot."""

    def __init__(self, settings: TablesApiConfig, base_dir: Path, folders: Folders | None = None,
                 folders_ttl_s: float = FOLDERS_TTL_S) -> None:
        self._settings = settings
        self._folders_ttl_s = folders_ttl_s
        self._root = warehouse_location(settings.warehouse, base_dir) if settings.warehouse else None
        self._folders = folders
        self._known: tuple[float, Mapping[ModelId, str]] = (-math.inf, {})
        self._lock = threading.Lock()

    @property
    def is_enabled(self) -> bool:
        return self._root is not None

    def folder(self, model_id: ModelId) -> str:
        """The folder of the model's live table in its database's folder."""
        if self._folders is None:
            return model_id.partition(".")[2]
        with self._lock:
            read_at, known = self._known
            if time.monotonic() - read_at >= self._folders_ttl_s:
                try:
                    known = self._folders()
                except Exception:  # the record unreadable for a moment: the folders known stay, read again soon
                    log.warning("reading the live versions' folders failed; using those known", exc_info=True)
                self._known = (time.monotonic(), known)
        return known.get(model_id, model_id.partition(".")[2])

    def location(self, model_id: ModelId, folder: str | None = None) -> str:
        database = model_id.partition(".")[0]
        if self._root is None:
            raise TableUnreadable("the read API is off: set api.tables.warehouse to the Spark warehouse")
        return f"{self._root}/{database}.db/{folder or self.folder(model_id)}"

    def snapshot(self, model_id: ModelId, version: int | None = None, folder: str | None = None) -> Snapshot:
        """The table at ``version`` (the latest when ``None``), in ``folder`` (the live one when ``None``)."""
        options = dict(self._settings.storage_options) or None
        folder = folder or self.folder(model_id)
        try:
            table = DeltaTable(self.location(model_id, folder), version=version, storage_options=options)
        except TableNotFoundError as e:
            raise TableUnreadable(f"{model_id} has no Delta table yet (its first run creates it)") from e
        except (DeltaError, OSError) as e:
            if version is not None:
                raise TableUnreadable(f"{model_id}: version {version} of the table can no longer be read "
                                      "(vacuumed or compacted); start again without page_token", 410) from e
            raise TableUnreadable(f"{model_id}: the table cannot be read ({type(e).__name__})", 503) from e
        columns = tuple(Column(f.name, str(getattr(f.type, "type", "other")), bool(f.nullable))
                        for f in table.schema().fields)
        return Snapshot(model_id, table.version(), columns, table, folder)

    def rows(self, snapshot: Snapshot, sql: str, table_name: str,
             abandoned: threading.Event | None = None) -> list[dict[str, Any]]:
        """The rows ``sql`` selects from the snapshot (registered as ``table_name``), as read (``json_row`` makes
        them JSON); in a memory pool of ``read_memory_mb``; stops at ``query_timeout_s`` or once ``abandoned`` is
        set, between record batches."""
        deadline = time.monotonic() + self._settings.query_timeout_s
        out: list[dict[str, Any]] = []
        try:
            builder = QueryBuilder().register(table_name, snapshot.table)
            builder.execute(f"SET datafusion.runtime.memory_limit = '{self._settings.read_memory_mb}M'").read_all()
            reader = builder.execute(sql)
            for batch in reader:
                _check_going_on(deadline, abandoned, self._settings.query_timeout_s)
                out.extend(pa.record_batch(batch).to_pylist())
        except DeltaError as e:  # a value the column's type cannot hold, found by DataFusion as it plans or casts
            raise TableUnreadable(f"{snapshot.model_id}: the query cannot run on this table: {e}", 400) from e
        except Exception as e:  # DataFusion's own errors reach Python as bare exceptions
            if "Resources exhausted" not in str(e):
                raise
            raise TableUnreadable(f"{snapshot.model_id}: the read needs more memory than api.tables.read_memory_mb "
                                  f"({self._settings.read_memory_mb} MB): narrow the filters or the page", 503) from e
        _check_going_on(deadline, abandoned, self._settings.query_timeout_s)
        return out


def _check_going_on(deadline: float, abandoned: threading.Event | None, timeout_s: int) -> None:
    if time.monotonic() > deadline or (abandoned is not None and abandoned.is_set()):
        raise ReadTimedOut(f"the read took longer than api.tables.query_timeout_s ({timeout_s} s)")


def json_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A row as read, as JSON values."""
    return {k: json_value(v) for k, v in row.items()}


def json_value(value: Any) -> Any:
    """A column value as JSON: times in ISO 8601, decimals as text (exact), bytes in base64, NaN as null."""
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, Mapping):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_value(v) for v in value]
    return value
