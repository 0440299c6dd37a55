"""An in-process durable record (``cbt.state.ports.DurableRecord``), for tests only: the Delta admin tables' twin.

It follows ``cbt.scheduling.protocol`` with plain Python where the Delta adapter (``cbt.adapters.delta_admin``) uses
SQL; the protocol tests run against both.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Collection, Iterable

from cbt.models.deployment import DeployedVersion, current_states
from cbt.models.spec import ModelId
from cbt.scheduling import coverage as cov
from cbt.scheduling import protocol
from cbt.scheduling.coverage import Coverage, Range
from cbt.scheduling.protocol import UNKNOWN_STEP, CompletedRange, Mark, Piece
from cbt.scheduling.task_runs import TaskRun
from cbt.state.admin_records import (
    CONSOLIDATED,
    CheckedInterval,
    CompletedInterval,
    Consolidation,
    InvalidationRecord,
    ScheduledRun,
)
from cbt.state.ports import ALL_RESULTS, CheckFilter


class MemoryRecord:
    def __init__(self) -> None:
        self.rows: list[CompletedInterval] = []
        self.invalidations: dict[str, InvalidationRecord] = {}
        self.runs: list[ScheduledRun] = []
        self._lock = threading.Lock()

    def record_completed(self, rows: Iterable[CompletedInterval]) -> None:
        with self._lock:
            self.rows.extend(rows)

    def coverage(self, model_ids: Collection[ModelId] | None = None) -> dict[ModelId, Coverage]:
        with self._lock:
            wanted = model_ids if model_ids is not None else {r.model for r in self.rows}
            return {m: self._live(m) for m in wanted}

    def live_pieces(self, model_ids: Collection[ModelId], window: Range) -> dict[ModelId, list[Piece]]:
        with self._lock:
            return {m: sorted({p for p in self._pieces(m) if p.range[0] < window[1] and p.range[1] > window[0]})
                    for m in model_ids}

    def version_coverage(self, model_ids: Collection[ModelId]) -> dict[ModelId, dict[str | None, Coverage]]:
        with self._lock:
            return {m: protocol.version_coverage(self._rows(m), self._marks(m)) for m in model_ids}

    def adopt(self, model_id: ModelId, source_id: ModelId, keep: Range | None = None) -> None:
        with self._lock:
            top = max((m.epoch for m in self._marks(model_id)), default=0)
            adopted = [_consolidated(model_id, run, top, version)
                       for version, run in protocol.version_runs(self._rows(source_id), self._marks(source_id))]
            kept = [_head_part(r, keep) for r in self.rows if r.model == model_id and keep is not None
                    and r.range[0] < keep[1] and r.range[1] > keep[0]]
            self.rows = [r for r in self.rows if r.model != model_id] + adopted + kept

    def invalidated_ranges(self, model_ids: Collection[ModelId]) -> dict[ModelId, tuple[TaskRun, ...]]:
        with self._lock:
            out: dict[ModelId, set[TaskRun]] = {}
            for record in self.invalidations.values():
                for model, ranges in record.affected.items():
                    if model in model_ids and model in record.seqs:
                        out.setdefault(model, set()).update(ranges)
            return {m: tuple(sorted(rs)) for m, rs in out.items()}

    def invalidation_seqs(self, model_ids: Collection[ModelId] | None = None) -> dict[ModelId, int]:
        with self._lock:
            out: dict[ModelId, int] = {}
            for record in self.invalidations.values():
                for model, seq in record.seqs.items():
                    if model_ids is None or model in model_ids:
                        out[model] = max(out.get(model, 0), seq)
            return out

    def prune_invalidations(self, received_before_ms: int) -> list[InvalidationRecord]:
        with self._lock:
            gone = [r for r in self.invalidations.values()
                    if r.received_at_ms < received_before_ms and all(self._is_prunable(r, m) for m in r.seqs)]
            for r in gone:
                del self.invalidations[r.id]
            return gone

    def _is_prunable(self, record: InvalidationRecord, model: ModelId) -> bool:
        top = max(r.seqs.get(model, 0) for r in self.invalidations.values())
        rows = [CompletedRange(r.range, r.invalidation_seq, _step(r)) for r in self.rows if r.model == model]
        spans = [run.span for run in record.affected.get(model, ())]
        return protocol.is_prunable(record.seqs[model], top, spans, rows, self._live(model))

    def record_invalidation(self, record: InvalidationRecord) -> InvalidationRecord:
        with self._lock:
            if record.id not in self.invalidations:
                epoch = protocol.next_epoch(s for r in self.invalidations.values() for s in r.seqs.values())
                self.invalidations[record.id] = dataclasses.replace(
                    record, seqs={m: epoch for m in record.affected})
            return self.invalidations[record.id]

    def consolidate(self, model_id: ModelId | None = None,
                    still_allowed: Callable[[], bool] = lambda: True) -> list[Consolidation]:
        with self._lock:
            models = sorted({r.model for r in self.rows if model_id is None or r.model == model_id})
            done = []
            for model in models:
                if not still_allowed():
                    break
                before = [r for r in self.rows if r.model == model]
                top = max((m.epoch for m in self._marks(model)), default=0)
                after = [_consolidated(model, run, top, version)
                         for version, run in protocol.version_runs(self._rows(model), self._marks(model))]
                if len(after) < len(before):
                    self.rows = [r for r in self.rows if r.model != model] + after
                    done.append(Consolidation(model, len(before), len(after)))
                else:
                    done.append(Consolidation(model, len(before), len(before)))
            return done

    def record_scheduled_run(self, run: ScheduledRun) -> None:
        with self._lock:
            self.runs.append(run)

    def last_scheduled_runs(self, model_ids: Collection[ModelId] | None = None,
                            successful_only: bool = False) -> dict[ModelId, ScheduledRun]:
        with self._lock:
            out: dict[ModelId, ScheduledRun] = {}
            for run in self.runs:
                if (model_ids is None or run.model in model_ids) and (run.status == "success" or not successful_only):
                    kept = out.get(run.model)
                    if kept is None or run.scheduled_unix >= kept.scheduled_unix:
                        out[run.model] = run
            return out

    def _marks(self, model: ModelId) -> list[Mark]:
        return [Mark(r.seqs[model], run.span) for r in self.invalidations.values() if model in r.seqs
                for run in r.affected.get(model, ())]

    def _rows(self, model: ModelId) -> list[CompletedRange]:
        return [CompletedRange(r.range, r.invalidation_seq, _step(r), r.version) for r in self.rows if r.model == model]

    def _pieces(self, model: ModelId) -> list[Piece]:
        marks = self._marks(model)
        return [piece for r in self._rows(model) for piece in protocol.live_pieces(r, marks)]

    def _live(self, model: ModelId) -> Coverage:
        return cov.merge(p.range for p in self._pieces(model))


def _consolidated(model: ModelId, run: Piece, seq: int, version: str | None) -> CompletedInterval:
    (start, end), step = run.range, run.step
    return CompletedInterval(model, start, end - start, f"{model}:{start}:{end - start}", CONSOLIDATED, seq,
                             CONSOLIDATED, task_interval=None if step == UNKNOWN_STEP else step, version=version)


def _head_part(row: CompletedInterval, keep: Range) -> CompletedInterval:
    step = _step(row)
    kept = protocol.tasks_over(row.range, row.interval if step is None else step, keep) or row.range
    return dataclasses.replace(row, position=kept[0], interval=kept[1] - kept[0])


def _step(row: CompletedInterval) -> int | None:
    """The row's task length as the Delta adapter reads it: unknown for a consolidated row without one."""
    if row.task_interval is None and row.direction == CONSOLIDATED:
        return UNKNOWN_STEP
    return row.task_interval


class MemoryVersions:
    """``cbt.models.deployment.VersionRecord`` in memory: every version appended, the latest per model deployed."""

    def __init__(self) -> None:
        self.rows: list[DeployedVersion] = []

    def record_versions(self, versions: list[DeployedVersion]) -> None:
        self.rows.extend(versions)

    def all_versions(self) -> list[DeployedVersion]:
        return current_states(self.rows)

    def deployed_versions(self) -> dict[ModelId, DeployedVersion]:
        out: dict[ModelId, DeployedVersion] = {}
        for version in self.rows:
            seen = out.get(version.model)
            if seen is None or (version.deployed_ms, version.version) >= (seen.deployed_ms, seen.version):
                out[version.model] = version
        return out


class MemoryCheckResults:
    """``cbt.state.ports.CheckResultsRecord`` in memory."""

    def __init__(self) -> None:
        self.rows: list[CheckedInterval] = []

    def record_check_results(self, results: Collection[CheckedInterval]) -> None:
        self.rows.extend(results)

    def check_results(self, model_ids: Collection[ModelId] | None = None, limit: int = 100,
                      where: CheckFilter = ALL_RESULTS) -> list[CheckedInterval]:
        found = [r for r in self.rows if (model_ids is None or r.model in model_ids) and where.selects(r)]
        return sorted(found, key=lambda r: (-r.checked_at_ms, -r.position, r.check))[:limit]
