"""Pure values (explain trees, invalidation records, failures) as response bodies."""

from __future__ import annotations

from cbt.api.explain import DependencyExplanation, Explanation
from cbt.api.schemas import DependencyNode, ExplainBody, FailureItem, InvalidationItem
from cbt.contract.messages import TaskFailed
from cbt.scheduling.task_runs import all_tasks
from cbt.state.admin_records import InvalidationRecord


def dependency_node(dep: DependencyExplanation) -> DependencyNode:
    return DependencyNode(id=dep.id, type=dep.type, kind=dep.kind, group=dep.group, range=dep.range,
                          covers=dep.covers, holes=list(dep.holes), reason=dep.reason,
                          dependencies=[dependency_node(d) for d in dep.dependencies])


def explanation_body(found: Explanation) -> ExplainBody:
    return ExplainBody(model=found.model, position=found.position, interval=found.interval, valid_range=found.valid,
                       ready=found.ready, covered=found.covered, in_flight=found.in_flight, reason=found.reason,
                       dependencies=[dependency_node(d) for d in found.dependencies])


def failure_item(failed: TaskFailed) -> FailureItem:
    span = None if failed.position is None or failed.interval is None else (
        failed.position, failed.position + failed.interval)
    return FailureItem(model=failed.model, task_id=failed.task_id, range=span, scheduled_unix=failed.scheduled_unix,
                       attempts=failed.attempts, error=failed.error, failed_at_ms=failed.failed_at_ms,
                       worker=failed.worker)


def invalidation_item(record: InvalidationRecord) -> InvalidationItem:
    return InvalidationItem(id=record.id, model=record.model, start=record.start, end=record.end,
                            reason=record.reason, source=record.source, cascade=record.cascade,
                            created_at_ms=record.received_at_ms,
                            affected={m: list(all_tasks(runs)) for m, runs in record.affected.items()})
