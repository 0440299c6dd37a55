"""``cbt_incremental``: the completed intervals of incremental models, the authority of their coverage.

Appends are blind (they never conflict): the worker's group commit writes any number of models' rows in one Delta
commit. Coverage is read as merged half-open ranges of the rows' *live parts* (``cbt.scheduling.protocol.live_part``):
an invalidation hides exactly the ranges it names, from the rows written before it, the moment it is recorded.
``consolidate`` reads and rewrites one model's partition in one transaction, retried when a concurrent commit makes
Delta refuse it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable

from cbt.adapters.admin_tables import protocol_sql as q
from cbt.adapters.admin_tables.columns import Column, TableSpec, model_filter, timestamp
from cbt.adapters.admin_tables.session import (
    AdminSession,
    AdminTableError,
    TableName,
    is_conflict,
    qualified,
)
from cbt.models.spec import ModelId
from cbt.scheduling.coverage import EMPTY, Coverage, Range, merge
from cbt.scheduling.protocol import Piece
from cbt.state.admin_records import CompletedInterval, Consolidation, split_model_id

log = logging.getLogger("cbt.admin")

COMPLETIONS = TableSpec(
    columns=(
        Column("updated_date_time", "TIMESTAMP", "when the row was written", read_as="updated_ms"),
        Column("database", "STRING"),
        Column("table", "STRING"),
        Column("position", "BIGINT", "first covered position"),
        Column("interval", "BIGINT", "covers [position, position + interval)"),
        Column("task_id", "STRING"),
        Column("direction", "STRING", "forward | backfill | rerun | consolidated"),
        Column("invalidation_seq", "BIGINT", "model invalidation sequence read before the task ran"),
        Column("worker", "STRING"),
        Column("duration_ms", "BIGINT"),
        Column("task_interval", "BIGINT", "length of each task the row records: the row covers tasks "
                                          "[position + k * task_interval, ...); null: one task (or consolidated before "
                                          "it was kept)"),
        Column("model_version", "STRING", "the model's version that computed the rows (cbt.models.versions); null: "
                                          "recorded before versions were kept, or not known to the worker"),
    ),
    comment="cbt: completed intervals; live coverage excludes rows superseded by cbt_invalidations",
    # Partitioned by model so a rewrite of one model's rows conflicts only with appends to that same model.
    partitioned_by=("database", "table"),
)
"""``cbt_incremental``: one row per completed task, or per run of touching tasks once consolidated."""


class CompletionsTable:
    """The completed intervals; coverage is read against ``invalidations`` (the table of recorded invalidations)."""

    def __init__(self, session: AdminSession, name: TableName, invalidations: TableName) -> None:
        self._session = session
        self.database = name[0]
        self.name = qualified(name)
        self.name_parts = name
        self._inv = qualified(invalidations)

    def ensure(self) -> None:
        # (tables created before task boundaries were kept: old rows read as one task each, or unknown boundaries
        # for consolidated ones; before versions were kept: old rows have no version)
        self._session.ensure(self.name, COMPLETIONS, lambda: self._session.add_columns(
            self.name, COMPLETIONS, ["task_interval", "model_version"]))

    def record_completed(self, rows: Iterable[CompletedInterval]) -> None:
        """Append completed intervals, any number of models, in one Delta commit (the worker's group commit)."""
        values = [COMPLETIONS.row(completion_row(r)) for r in rows]
        if values:
            self._session.append("record completed intervals", self.name, COMPLETIONS.schema(), values)

    def coverage(self, model_ids: Collection[ModelId] | None = None) -> dict[ModelId, Coverage]:
        """Live coverage per model (every requested model, empty when it has none; all models when ``None``)."""
        if model_ids is not None and not model_ids:
            return {}
        where, params = model_filter(model_ids)
        rows = self._session.sql("read coverage", q.coverage_query(self.name, self._inv, where), params)
        ranges: dict[ModelId, list[Range]] = {m: [] for m in model_ids or ()}
        for row in rows:
            ranges.setdefault(f"{row['database']}.{row['table']}", []).append((row["range_start"], row["range_end"]))
        return {model: merge(rs) if rs else EMPTY for model, rs in ranges.items()}

    def version_coverage(self, model_ids: Collection[ModelId]) -> dict[ModelId, dict[str | None, Coverage]]:
        """What each version of each model computed that is still live (models without rows: empty)."""
        if not model_ids:
            return {}
        where, params = model_filter(model_ids)
        rows = self._session.sql("read version coverage", q.version_runs_query(self.name, self._inv, where), params)
        ranges: dict[ModelId, dict[str | None, list[Range]]] = {m: {} for m in model_ids}
        for row in rows:
            by_version = ranges.setdefault(f"{row['database']}.{row['table']}", {})
            by_version.setdefault(row["model_version"], []).append((row["range_start"], row["range_end"]))
        return {m: {v: merge(rs) for v, rs in versions.items()} for m, versions in ranges.items()}

    def live_pieces(self, model_ids: Collection[ModelId], window: Range) -> dict[ModelId, list[Piece]]:
        """The live pieces of each model's rows that overlap ``window``: the tasks that ran there."""
        if not model_ids:
            return {}
        where, params = model_filter(model_ids)
        rows = self._session.sql("read live tasks", q.live_pieces_query(self.name, self._inv, where),
                                 {**params, "lo": window[0], "hi": window[1]})
        out: dict[ModelId, list[Piece]] = {m: [] for m in model_ids}
        for row in rows:
            start = int(row["position"])
            piece = Piece((start, start + int(row["interval"])), int(row["step"]))
            out.setdefault(f"{row['database']}.{row['table']}", []).append(piece)
        return {m: sorted(pieces) for m, pieces in out.items()}

    def consolidate(self, model_id: ModelId | None = None,
                    still_allowed: Callable[[], bool] = lambda: True) -> list[Consolidation]:
        """Rewrite each model's rows as runs of its live tasks, one commit per model that has anything to merge.

        Coverage is unchanged; stale rows are dropped (they cover nothing); models already minimal are not touched.
        A model whose appends keep winning over the rewrite is left as it is (``is_deferred``) for the next run.
        ``still_allowed`` is asked before each rewrite (the leader's fencing check): once it says no, nothing more
        is written.
        """
        where, params = model_filter(None if model_id is None else [model_id])
        counts = self._session.sql("count rows to consolidate", q.row_counts_query(self.name, self._inv, where),
                                   params)
        done: list[Consolidation] = []
        for row in sorted(counts, key=lambda r: (r["database"], r["table"])):
            model = f"{row['database']}.{row['table']}"
            before, after = int(row["row_count"]), int(row["run_count"])
            if after >= before:
                done.append(Consolidation(model, before, before))
                continue
            if not still_allowed():
                log.warning("admin tables: consolidation stopped before %s: no longer allowed to write", model)
                break
            try:
                self._consolidate_one(model, row["database"], row["table"])
            except AdminTableError as e:
                if not is_conflict(e):
                    raise
                log.warning("admin tables: consolidation of %s deferred: concurrent appends kept winning", model)
                done.append(Consolidation(model, before, before, is_deferred=True))
                continue
            done.append(Consolidation(model, before, after))
        return done

    def adopt(self, model_id: ModelId, source_id: ModelId, keep: Range | None = None) -> None:
        """Replace the model's rows with the runs of ``source_id``'s live rows, in one commit: a build switched to —
        the table now holds what the build's tasks computed, in their version, and an invalidation re-runs the
        build's tasks. The rows carry the model's highest epoch; the model's own rows overlapping ``keep`` stay."""
        (database, table), (src_db, src_tbl) = split_model_id(model_id), split_model_id(source_id)
        params = {"db": database, "tbl": table, "model": model_id, "src_db": src_db, "src_tbl": src_tbl,
                  "keep_start": keep[0] if keep else 0, "keep_end": keep[1] if keep else 0}
        statement = q.adopt_statement(self.name, self._inv, COMPLETIONS.names)
        self._session.rewrite(f"adopt {source_id} as {model_id}", statement, params)

    def _consolidate_one(self, model: ModelId, database: str, table: str) -> None:
        params = {"db": database, "tbl": table, "model": model}
        statement = q.consolidate_statement(self.name, self._inv, COMPLETIONS.names)
        self._session.rewrite(f"consolidate {model}", statement, params)


def completion_row(r: CompletedInterval) -> dict[str, object]:
    database, table = split_model_id(r.model)
    return {
        "updated_date_time": timestamp(r.completed_at_ms), "database": database, "table": table, "position": r.position,
        "interval": r.interval, "task_id": r.task_id, "direction": r.direction, "invalidation_seq": r.invalidation_seq,
        "worker": r.worker, "duration_ms": r.duration_ms,
        "task_interval": r.interval if r.task_interval is None else r.task_interval, "model_version": r.version,
    }  # fmt: skip
