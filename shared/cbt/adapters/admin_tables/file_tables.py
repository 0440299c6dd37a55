"""The admin tables over their Delta files (``admin_tables.files``): the same methods as the Spark-backed tables,
the coverage protocol's rules applied in Python (``cbt.scheduling.protocol``) where those use SQL.

Rows are read whole (one partition of ``cbt_incremental`` when a model is named) and judged here: the record holds
merged runs after consolidation, so a model's rows stay few, and a rebuild of a million rows reads them in seconds.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from deltalake import DeltaTable

from cbt.adapters.admin_tables.check_results import check_from, check_row
from cbt.adapters.admin_tables.columns import timestamp
from cbt.adapters.admin_tables.completions import completion_row
from cbt.adapters.admin_tables.failures import failure_from, failure_row
from cbt.adapters.admin_tables.files import FileTable, literal, quoted
from cbt.adapters.admin_tables.invalidations import invalidation_from, invalidation_row
from cbt.adapters.admin_tables.overrides import override_row
from cbt.adapters.admin_tables.retries import retried_from, retry_row
from cbt.adapters.admin_tables.scheduled import scheduled_row, scheduled_run_from
from cbt.adapters.admin_tables.session import AdminTableError, is_conflict
from cbt.adapters.admin_tables.versions import latest, version_from, version_row
from cbt.contract.messages import TaskFailed
from cbt.models.deployment import DeployedVersion, current_states
from cbt.models.spec import ModelId
from cbt.scheduling import protocol
from cbt.scheduling.coverage import EMPTY, Coverage, Range
from cbt.scheduling.protocol import UNKNOWN_STEP, CompletedRange, Mark, Piece
from cbt.scheduling.task_runs import TaskRun
from cbt.state.admin_records import (
    CONSOLIDATED,
    CheckedInterval,
    CompletedInterval,
    Consolidation,
    InvalidationRecord,
    RetriedAttempt,
    ScheduledRun,
    now_ms,
    split_model_id,
)
from cbt.state.ports import ALL_RESULTS, CheckFilter

PRUNE_BATCH = 500
Row = dict[str, Any]


def _model(row: Mapping[str, Any]) -> ModelId:
    return f"{row['database']}.{row['table']}"


def _partition(model: ModelId) -> dict[str, str]:
    database, table = split_model_id(model)
    return {"database": database, "table": table}


def _wanted(model_ids: Collection[ModelId] | None) -> Callable[[ModelId], bool]:
    if model_ids is None:
        return lambda _: True
    chosen = set(model_ids)
    return chosen.__contains__


class _OnFiles:
    """An admin table over its files: ``files``, and what every table offers (``ensure``, its name)."""

    def __init__(self, table: FileTable) -> None:
        self.files = table
        self.database = table.database
        self.name_parts = table.name

    def ensure(self) -> None:
        self.files.ensure()


class InvalidationsFiles(_OnFiles):
    """``cbt_invalidations`` over its files (``InvalidationsTable``'s methods)."""

    def records(self, table: DeltaTable | None = None) -> list[InvalidationRecord]:
        return [invalidation_from(row) for row in self.files.read(table)]

    def marks(self, records: Iterable[InvalidationRecord] | None = None) -> dict[ModelId, list[Mark]]:
        """Every model's invalidated runs under their epochs (the live-part rule reads only a run's ends)."""
        out: dict[ModelId, list[Mark]] = {}
        for record in self.records() if records is None else records:
            for model, seq in record.seqs.items():
                out.setdefault(model, []).extend(Mark(seq, run.span) for run in record.affected.get(model, ()))
        return out

    def record_invalidation(self, record: InvalidationRecord) -> InvalidationRecord:
        """Recorded under one more than every epoch recorded, in a commit that lands only right after the version
        read (concurrent recorders get distinct epochs); an id already recorded comes back as first recorded."""

        def attempt(table: DeltaTable) -> InvalidationRecord:
            recorded = self.records(table)
            for known in recorded:
                if known.id == record.id:
                    return known
            epoch = protocol.next_epoch(seq for r in recorded for seq in r.seqs.values())
            row = invalidation_row(record, epoch)
            self.files.append([row], based_on=table)
            return invalidation_from({**row, "received_ms": record.received_at_ms})

        return self.files.rewrite(f"record invalidation {record.id}", attempt)

    def invalidations(self, limit: int = 100) -> list[InvalidationRecord]:
        """Recorded invalidations, newest first."""
        return sorted(self.records(), key=lambda r: (-r.received_at_ms, r.id))[:limit]

    def invalidated_ranges(self, model_ids: Collection[ModelId]) -> dict[ModelId, tuple[TaskRun, ...]]:
        out: dict[ModelId, set[TaskRun]] = {}
        for record in self.records():
            for model in record.seqs:
                if model in model_ids:
                    out.setdefault(model, set()).update(record.affected.get(model, ()))
        return {m: tuple(sorted(rs)) for m, rs in out.items()}

    def invalidation_seqs(self, model_ids: Collection[ModelId] | None = None) -> dict[ModelId, int]:
        wanted = _wanted(model_ids)
        out: dict[ModelId, int] = {}
        for record in self.records():
            for model, seq in record.seqs.items():
                if wanted(model):
                    out[model] = max(out.get(model, 0), seq)
        return out

    def prune_invalidations(self, completions: CompletionsFiles, received_before_ms: int) -> list[InvalidationRecord]:
        """Delete the records received before ``received_before_ms`` that change nothing once gone
        (``cbt.scheduling.protocol.is_prunable`` for every model they name) and return them."""

        def attempt(table: DeltaTable) -> list[InvalidationRecord]:
            records = self.records(table)
            marks = self.marks(records)
            top = {m: max(mark.epoch for mark in ms) for m, ms in marks.items() if ms}
            rows = completions.rows_by_model(None)
            gone = [r for r in records if r.received_at_ms < received_before_ms
                    and all(_is_prunable(r, m, top, rows.get(m, []), marks.get(m, [])) for m in r.seqs)]
            for first in range(0, len(gone), PRUNE_BATCH):
                ids = ", ".join(literal(r.id) for r in gone[first:first + PRUNE_BATCH])
                self.files.delete(f"{quoted('id')} IN ({ids})", table)
                table = self.files.table()  # (each batch is one commit; a later one conflicts only with others)
            return gone

        return self.files.rewrite("prune invalidations", attempt)


def _is_prunable(record: InvalidationRecord, model: ModelId, top: Mapping[ModelId, int],
                 rows: list[CompletedRange], marks: list[Mark]) -> bool:
    spans = [run.span for run in record.affected.get(model, ())]
    return protocol.is_prunable(record.seqs[model], top.get(model, 0), spans, rows,
                                protocol.live_coverage(rows, marks))


class CompletionsFiles(_OnFiles):
    """``cbt_incremental`` over its files (``CompletionsTable``'s methods); coverage is read against
    ``invalidations``."""

    def __init__(self, table: FileTable, invalidations: InvalidationsFiles) -> None:
        super().__init__(table)
        self._invalidations = invalidations

    def record_completed(self, rows: Iterable[CompletedInterval]) -> None:
        """Append completed intervals, any number of models, in one blind Delta commit (the worker's group
        commit): no Spark statement, no admission permit."""
        self.files.append([completion_row(r) for r in rows])

    def rows_by_model(self, model_ids: Collection[ModelId] | None,
                      table: DeltaTable | None = None) -> dict[ModelId, list[CompletedRange]]:
        """Each model's rows as the protocol reads them (its step: ``task_interval``, else the whole row, or unknown
        for a row consolidated before task boundaries were kept)."""
        partition = _partition(next(iter(model_ids))) if model_ids is not None and len(model_ids) == 1 else None
        wanted = _wanted(model_ids)
        out: dict[ModelId, list[CompletedRange]] = {m: [] for m in model_ids or ()}
        for row in self.files.read(table, partition):
            model = _model(row)
            if wanted(model) and row["position"] is not None and (row["interval"] or 0) > 0:
                out.setdefault(model, []).append(_completed(row))
        return out

    def recent_runs(self, model_ids: Collection[ModelId], keep: int) -> dict[ModelId, list[tuple[int, int]]]:
        """Each model's newest ``keep`` runs as tasks recorded them (not consolidated rows): the positions a task
        covered and its duration in ms, oldest first."""
        wanted = _wanted(model_ids)
        found: dict[ModelId, list[tuple[int, int, int]]] = {m: [] for m in model_ids}
        for row in self.files.read():
            model = _model(row)
            if (wanted(model) and row["direction"] != "consolidated" and (row["interval"] or 0) > 0
                    and row["duration_ms"] is not None):
                found[model].append((row["updated_ms"] or 0, int(row["interval"]), int(row["duration_ms"])))
        return {m: [(length, ms) for _, length, ms in sorted(runs)[-keep:]] for m, runs in found.items()}

    def coverage(self, model_ids: Collection[ModelId] | None = None) -> dict[ModelId, Coverage]:
        if model_ids is not None and not model_ids:
            return {}
        rows = self.rows_by_model(model_ids)
        marks = self._invalidations.marks()
        return {m: protocol.live_coverage(rs, marks.get(m, [])) if rs else EMPTY for m, rs in rows.items()}

    def version_coverage(self, model_ids: Collection[ModelId]) -> dict[ModelId, dict[str | None, Coverage]]:
        if not model_ids:
            return {}
        rows = self.rows_by_model(model_ids)
        marks = self._invalidations.marks()
        return {m: protocol.version_coverage(rs, marks.get(m, [])) for m, rs in rows.items()}

    def live_pieces(self, model_ids: Collection[ModelId], window: Range) -> dict[ModelId, list[Piece]]:
        if not model_ids:
            return {}
        rows = self.rows_by_model(model_ids)
        marks = self._invalidations.marks()
        return {m: sorted({p for r in rs if r.range[0] < window[1] and r.range[1] > window[0]
                           for p in protocol.live_pieces(r, marks.get(m, []))
                           if p.range[0] < window[1] and p.range[1] > window[0]}) for m, rs in rows.items()}

    def consolidate(self, model_id: ModelId | None = None,
                    still_allowed: Callable[[], bool] = lambda: True) -> list[Consolidation]:
        """Rewrite each model's rows as runs of its live tasks, one commit per model that has anything to merge
        (``CompletionsTable.consolidate``): the commit lands only right after the version read, so a row appended
        meanwhile is never dropped — the rewrite is read and planned again."""
        found = self.rows_by_model(None if model_id is None else [model_id])
        models = sorted(m for m, rows in found.items() if rows)  # (a model without rows has nothing to consolidate)
        done: list[Consolidation] = []
        for model in models:
            if not still_allowed():
                break
            try:
                done.append(self.files.rewrite(f"consolidate {model}", functools.partial(self._consolidate_one, model)))
            except AdminTableError as e:
                if not is_conflict(e):
                    raise
                rows = len(self.rows_by_model([model]).get(model, []))
                done.append(Consolidation(model, rows, rows, is_deferred=True))
        return done

    def adopt(self, model_id: ModelId, source_id: ModelId, keep: Range | None = None) -> None:
        """``CompletionsTable.adopt``: the commit lands only right after the version read."""
        self.files.rewrite(f"adopt {source_id} as {model_id}",
                           functools.partial(self._adopt, model_id, source_id, keep))

    def _adopt(self, model_id: ModelId, source_id: ModelId, keep: Range | None, table: DeltaTable) -> None:
        rows = self.rows_by_model([source_id], table).get(source_id, [])
        marks = self._invalidations.marks()
        top = max((m.epoch for m in marks.get(model_id, [])), default=0)
        written = [completion_row(_consolidated(model_id, run, top, version))
                   for version, run in protocol.version_runs(rows, marks.get(source_id, []))]
        kept = [] if keep is None else [_head_part(row, keep) for row in self.files.read(table, _partition(model_id))
                                        if row["position"] < keep[1] and row["position"] + row["interval"] > keep[0]]
        self.files.replace(_partition(model_id), [*written, *kept], based_on=table)

    def _consolidate_one(self, model: ModelId, table: DeltaTable) -> Consolidation:
        rows = self.rows_by_model([model], table).get(model, [])
        marks = self._invalidations.marks().get(model, [])
        merged = protocol.version_runs(rows, marks)
        if len(merged) >= len(rows):
            return Consolidation(model, len(rows), len(rows))
        top = max((m.epoch for m in marks), default=0)
        written = [completion_row(_consolidated(model, run, top, version)) for version, run in merged]
        self.files.replace(_partition(model), written, based_on=table)
        return Consolidation(model, len(rows), len(written))


def _head_part(row: Mapping[str, Any], keep: Range) -> dict[str, Any]:
    """A row as read, cut to its tasks over ``keep``, to write again (``files.read`` renamed the timestamp)."""
    completed = _completed(row)
    kept = protocol.tasks_over(completed.range, completed.task_step, keep) or completed.range
    out = {**row, "position": kept[0], "interval": kept[1] - kept[0]}
    out["updated_date_time"] = timestamp(out.pop("updated_ms"))
    return out


def _completed(row: Mapping[str, Any]) -> CompletedRange:
    position, interval = int(row["position"]), int(row["interval"])
    step = row["task_interval"]
    if step is None:
        step = UNKNOWN_STEP if row["direction"] == CONSOLIDATED else interval
    return CompletedRange((position, position + interval), int(row["invalidation_seq"] or 0), int(step),
                          row["model_version"])


def _consolidated(model: ModelId, run: Piece, seq: int, version: str | None) -> CompletedInterval:
    (start, end), step = run.range, run.step
    return CompletedInterval(model, start, end - start, f"{model}:{start}:{end - start}", CONSOLIDATED, seq,
                             CONSOLIDATED, completed_at_ms=now_ms(), task_interval=None if step == UNKNOWN_STEP
                             else step, version=version)


class ScheduledFiles(_OnFiles):
    """``cbt_scheduled`` over its files."""

    def record_scheduled_run(self, run: ScheduledRun) -> None:
        self.files.append([scheduled_row(run)])

    def _runs(self, model_ids: Collection[ModelId] | None, successful_only: bool) -> dict[ModelId, list[ScheduledRun]]:
        """Each model's runs, newest first (by scheduled time, then write time)."""
        wanted = _wanted(model_ids)
        out: dict[ModelId, list[ScheduledRun]] = {}
        for run in (scheduled_run_from(row) for row in self.files.read()):
            if wanted(run.model) and (run.status == "success" or not successful_only):
                out.setdefault(run.model, []).append(run)
        return {m: sorted(rs, key=lambda r: (-r.scheduled_unix, -r.updated_at_ms)) for m, rs in out.items()}

    def last_scheduled_runs(self, model_ids: Collection[ModelId] | None = None,
                            successful_only: bool = False) -> dict[ModelId, ScheduledRun]:
        return {m: rs[0] for m, rs in self._runs(model_ids, successful_only).items()}

    def scheduled_runs(self, model_ids: Collection[ModelId] | None, limit: int) -> list[ScheduledRun]:
        return [r for _, rs in sorted(self._runs(model_ids, False).items()) for r in rs[:limit]]


class FailuresFiles(_OnFiles):
    """``cbt_failures`` over its files."""

    def record_failure(self, failed: TaskFailed) -> None:
        self.files.append([failure_row(failed)])

    def failures(self, model_ids: Collection[ModelId] | None = None, limit: int = 100) -> list[TaskFailed]:
        wanted = _wanted(model_ids)
        found = [failure_from(row) for row in self.files.read() if wanted(_model(row))]
        return sorted(found, key=lambda f: (-f.failed_at_ms, f.task_id))[:limit]


class RetriesFiles(_OnFiles):
    """``cbt_retries`` over its files."""

    def record_retry(self, retried: RetriedAttempt) -> None:
        self.files.append([retry_row(retried)])

    def retries(self, model_ids: Collection[ModelId] | None = None, limit: int = 100) -> list[RetriedAttempt]:
        wanted = _wanted(model_ids)
        found = [retried_from(row) for row in self.files.read() if wanted(_model(row))]
        return sorted(found, key=lambda r: (-r.failed_at_ms, r.task_id, -r.attempt))[:limit]


class OverridesFiles(_OnFiles):
    """``cbt_config_overrides`` over its files (implements ``cbt.state.override_ports.OverrideRecord``)."""

    def record_override(self, model_id: ModelId, fields: Mapping[str, Any] | None, who: str, at_ms: int) -> None:
        self.files.append([override_row(model_id, fields, who, at_ms)])

    def current_overrides(self) -> dict[ModelId, dict[str, Any]]:
        """Each model's override in force: its latest row, unless that row cleared it."""
        latest: dict[ModelId, Row] = {}
        for row in self.files.read():
            model = _model(row)
            if model not in latest or row["updated_ms"] >= latest[model]["updated_ms"]:
                latest[model] = row
        out: dict[ModelId, dict[str, Any]] = {}
        for model, row in latest.items():
            fields = None if row["override"] is None else json.loads(row["override"])
            if isinstance(fields, dict):
                out[model] = fields
        return out



class VersionsFiles(_OnFiles):
    """``cbt_model_versions`` over its files (implements ``cbt.models.deployment.VersionRecord``)."""

    def record_versions(self, versions: list[DeployedVersion]) -> None:
        self.files.append([version_row(v) for v in versions])

    def deployed_versions(self) -> dict[ModelId, DeployedVersion]:
        return latest(self.files.read())

    def all_versions(self) -> list[DeployedVersion]:
        return current_states(map(version_from, self.files.read()))


class CheckResultsFiles(_OnFiles):
    """``cbt_check_results`` over its files."""

    def record_check_results(self, results: Collection[CheckedInterval]) -> None:
        if results:
            self.files.append([check_row(r) for r in results])

    def check_results(self, model_ids: Collection[ModelId] | None = None, limit: int = 100,
                      where: CheckFilter = ALL_RESULTS) -> list[CheckedInterval]:
        wanted = _wanted(model_ids)
        found = [r for r in (check_from(row) for row in self.files.read() if wanted(_model(row))) if where.selects(r)]
        return sorted(found, key=lambda r: (-r.checked_at_ms, -r.position, r.check))[:limit]
