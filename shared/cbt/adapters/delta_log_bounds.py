"""External models' bounds from the Delta log's file statistics (delta-rs): no Spark statement, no admission permit.

For a model whose bounds query ``cbt.models.log_bounds`` recognises, the bounds are the minimum and maximum of the
column over the files of the table's current version — what the query computes — as long as the log can prove it:
every file carries the column's statistics (or holds only nulls there), the table has no deletion vectors (a file's
statistics would still count deleted rows), and the column is an integer or a timestamp. Otherwise ``NotExact`` says
why and the caller scans with Spark. The table is kept open between scans and brought up to date with only the
commits since the last one (``update_incremental``).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

import pyarrow as pa  # type: ignore[import-untyped]  # (no stubs)
from deltalake import DeltaTable
from deltalake.exceptions import DeltaError, TableNotFoundError

from cbt.adapters.admin_tables.files import location
from cbt.base.errors import CbtError
from cbt.models.log_bounds import Bound, LogBoundsPlan
from cbt.models.spec import ExternalModel, ModelId
from cbt.scheduling.scanning import ScanResult

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class NotExact(CbtError):
    """The Delta log cannot give this table's bounds exactly (the reason is the message): scan with Spark."""


class DeltaLogBounds:
    """Bounds from the Delta log of tables under ``warehouse`` (``<warehouse>/<database>.db/<table>``)."""

    def __init__(self, warehouse: str, storage_options: Mapping[str, str]) -> None:
        self._warehouse = warehouse
        self._options = dict(storage_options) or None
        self._tables: dict[ModelId, DeltaTable] = {}
        self._lock = threading.Lock()

    def bounds(self, model: ExternalModel, plan: LogBoundsPlan) -> ScanResult:
        table = self._current(model)
        features = table.protocol().reader_features or []
        if "deletionVectors" in features:
            raise NotExact(f"{model.id} may have deletion vectors: the files' statistics count deleted rows")
        files = pa.table(table.get_add_actions(flatten=True))
        columns = {f"min.{plan.column}", f"max.{plan.column}", f"null_count.{plan.column}", "num_records"}
        if not columns <= set(files.column_names):
            raise NotExact(f"{model.id}: the Delta log has no statistics on {plan.column}")
        lows, highs = [], []
        for row in files.select(sorted(columns)).to_pylist():
            rows, nulls = row["num_records"], row[f"null_count.{plan.column}"]
            if rows is not None and nulls is not None and nulls >= rows:
                continue  # only nulls there: min and max skip it
            low, high = row[f"min.{plan.column}"], row[f"max.{plan.column}"]
            if rows is None or low is None or high is None:
                raise NotExact(f"{model.id}: a file has no statistics on {plan.column}")
            lows.append(low)
            highs.append(high)
        if not lows:
            return ScanResult(None, None)
        return ScanResult(_value(plan.low, lows, highs, model), _value(plan.high, lows, highs, model))

    def _current(self, model: ExternalModel) -> DeltaTable:
        """The model's table at its latest version (opened once, then only new commits are read)."""
        with self._lock:
            table = self._tables.get(model.id)
        try:
            if table is None:
                table = DeltaTable(location(self._warehouse, (model.database, model.table)),
                                   storage_options=self._options)
            else:
                table.update_incremental()
        except TableNotFoundError as e:
            raise NotExact(f"{model.id}: no Delta table at {location(self._warehouse, (model.database, model.table))}"
                           ) from e
        except (DeltaError, OSError) as e:
            raise NotExact(f"{model.id}: the Delta log cannot be read ({type(e).__name__}: {str(e)[:200]})") from e
        with self._lock:
            self._tables[model.id] = table
        return table


def _value(bound: Bound, lows: list[object], highs: list[object], model: ExternalModel) -> int:
    """``bound`` over the files: the least of their minima or the greatest of their maxima, converted and shifted."""
    picked = min(lows) if bound.function == "min" else max(highs)  # type: ignore[type-var]
    return _position(picked, bound, model) + bound.offset


def _position(value: object, bound: Bound, model: ExternalModel) -> int:
    if isinstance(value, datetime):
        since = (value if value.tzinfo else value.replace(tzinfo=UTC)) - _EPOCH
        if bound.convert == "unix_seconds":
            return since // timedelta(seconds=1)
        if bound.convert == "unix_millis":
            return since // timedelta(milliseconds=1)
        raise NotExact(f"{model.id}: the bound is a timestamp, not a position (convert it with unix_seconds)")
    if isinstance(value, int) and not isinstance(value, bool) and bound.convert == "none":
        return value
    raise NotExact(f"{model.id}: the Delta log's statistics cannot give {bound.convert}({type(value).__name__})")
