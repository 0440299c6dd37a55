"""Reading the spans the services wrote (``telemetry.traces: console`` to one file per process) back as trees."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class SpanRecord:
    name: str
    service: str
    trace_id: str
    span_id: str
    parent_id: str | None
    links: tuple[str, ...]
    attributes: dict[str, object]


def read_spans(folder: Path) -> list[SpanRecord]:
    spans = []
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            raw = json.loads(line)
            spans.append(SpanRecord(
                name=raw["name"], service=raw["resource"]["attributes"]["service.name"],
                trace_id=raw["context"]["trace_id"], span_id=raw["context"]["span_id"], parent_id=raw["parent_id"],
                links=tuple(link["context"]["span_id"] for link in raw["links"]), attributes=raw["attributes"]))
    return spans


def cascades(spans: list[SpanRecord], prefix: str) -> list[list[SpanRecord]]:
    """Every cascade: the coordinator publishes a task → a worker processes it (its Spark job and admin commit
    inside) and publishes the completion → the coordinator processes that, each hop a child of the one before (and
    each consumer span linked to its producer) → a ``plan`` linked to that processing publishes a dependent's
    task."""
    children: dict[str, list[SpanRecord]] = defaultdict(list)
    caused_by: dict[str, list[SpanRecord]] = defaultdict(list)
    """A ``plan`` (which starts a trace) by the span it links to: the completion's processing that caused it."""
    for span in spans:
        if span.parent_id:
            children[span.parent_id].append(span)
        if span.name == "plan":
            for linked in span.links:
                caused_by[linked].append(span)

    def consumed(send: SpanRecord, topic: str, service: str) -> list[SpanRecord]:
        """The ``process`` spans of the message ``send`` published: its direct children."""
        return [c for c in children[send.span_id] if c.name == f"process {topic}" and c.service == service]

    def within(process: SpanRecord, name: str) -> list[SpanRecord]:
        """The spans named ``name`` inside one message's handling (not inside later hops)."""
        found, stack = [], list(children[process.span_id])
        while stack:
            span = stack.pop()
            if span.name.startswith("process "):
                continue
            if span.name == name:
                found.append(span)
            stack.extend(children[span.span_id])
        return found

    tasks, completed = f"{prefix}task-requested.default", f"{prefix}interval-completed"
    chains = []
    for send in (s for s in spans if s.name == f"send {tasks}" and s.service == "cbt-coordinator"):
        for process in consumed(send, tasks, "cbt-worker"):
            jobs, commits = within(process, "spark job"), within(process, "admin commit")
            for done in within(process, f"send {completed}"):
                for seen in consumed(done, completed, "cbt-coordinator"):
                    for plan in caused_by[seen.span_id]:
                        for dependent in within(plan, f"send {tasks}"):
                            if jobs and commits and send.span_id in process.links and done.span_id in seen.links:
                                chains.append([send, process, jobs[0], commits[0], done, seen, plan, dependent])
    return chains
