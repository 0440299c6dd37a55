"""Traces link a publish to its processing through Kafka headers; metrics carry bounded labels only."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from opentelemetry import metrics as metrics_api
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from cbt.adapters.kafka_bus import BrokerPublisher
from cbt.contract.messages import TaskRequested
from cbt.observability import metrics
from cbt.observability.tracing import new_trace, processing

SPANS = InMemorySpanExporter()


@pytest.fixture(scope="module", autouse=True)
def tracers() -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(SPANS))
    trace.set_tracer_provider(provider)  # once per process: the API refuses a second provider


class CapturingBroker:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    async def publish(self, body: bytes, topic: str, *, key: bytes, headers: dict[str, str]) -> None:
        self.sent.append({"topic": topic, "key": key, "headers": headers})


def test_the_process_span_continues_the_trace_of_the_publish_through_the_message_headers() -> None:
    SPANS.clear()
    broker = CapturingBroker()
    task = TaskRequested(task_id="an.m:0:60", model="an.m", position=0, interval=60)
    asyncio.run(BrokerPublisher(broker).publish("cbt.task-requested.default", task, key=task.task_id))  # type: ignore[arg-type]
    (sent,) = broker.sent
    assert sent["headers"]["content-type"] == "application/json" and "traceparent" in sent["headers"]
    received = {k: v.encode() for k, v in sent["headers"].items()}  # Kafka header values arrive as bytes
    with (processing(sent["topic"], received, task.task_id, **{"cbt.model": task.model}),
          trace.get_tracer("test").start_as_current_span("spark job")):
        pass
    send, process, job = sorted(SPANS.get_finished_spans(), key=lambda span: span.start_time or 0)
    assert (send.name, send.kind) == ("send cbt.task-requested.default", SpanKind.PRODUCER)
    assert (process.name, process.kind) == ("process cbt.task-requested.default", SpanKind.CONSUMER)
    assert process.context.trace_id == send.context.trace_id == job.context.trace_id
    assert process.parent is not None and process.parent.span_id == send.context.span_id
    assert [link.context.span_id for link in process.links] == [send.context.span_id]
    assert job.parent is not None and job.parent.span_id == process.context.span_id
    assert process.attributes is not None and process.attributes["cbt.model"] == "an.m"


def test_a_plan_starts_a_trace_of_its_own_linked_to_the_completion_that_caused_it() -> None:
    SPANS.clear()
    with processing("cbt.interval-completed", {}) as completion, new_trace("plan"):
        pass
    plan = next(span for span in SPANS.get_finished_spans() if span.name == "plan")
    assert plan.parent is None and plan.context.trace_id != completion.get_span_context().trace_id
    assert [link.context.span_id for link in plan.links] == [completion.get_span_context().span_id]


def test_a_message_without_trace_headers_starts_a_trace_of_its_own() -> None:
    SPANS.clear()
    with processing("cbt.invalidation", {"content-type": b"application/json"}):
        pass
    (span,) = SPANS.get_finished_spans()
    assert span.parent is None and not span.links


@pytest.mark.parametrize(("reason", "kind"), [
    ("task_id: Field required; model: Field required", "missing_field"),
    ("body: Invalid JSON: expected value at line 1 column 1", "invalid_json"),
    ("aaa_user_0: Extra inputs are not permitted", "unknown_field"),
    ("range [995, 2000006) spans 1999011 positions, more than invalidator.max_range (1000000)", "range_too_wide"),
    ("model: no model 'nope.x'", "unknown_model"),
    ("kind: expected 'task-requested' on a task topic, got 'interval-completed'", "wrong_kind"),
    ("position: Input should be a valid integer", "invalid_value"),
])
def test_a_rejection_reason_becomes_a_bounded_label(reason: str, kind: str) -> None:
    assert metrics.reason_kind(reason) == kind
    assert kind in {k for k, _ in metrics.REASON_KINDS} | {"invalid_value"}


def test_reasons_a_producer_controls_still_give_the_same_few_labels() -> None:
    """Unknown field names, values and JSON from a producer appear in the reason; the label set stays fixed."""
    from pydantic import ValidationError

    from cbt.contract.messages import decode, decode_invalidation, describe

    kinds = set()
    for i in range(200):
        for raw in (f'{{"kind": "task-requested", "user_field_{i}": 1}}', f'{{"id": "{i}", "extra_{i}": []}}',
                    f"not json {i}", f'{{"kind": "kind-{i}"}}'):
            for parse in (decode, decode_invalidation):
                try:
                    parse(raw)
                except ValidationError as e:
                    kinds.add(metrics.reason_kind(describe(e)))
    assert kinds <= {k for k, _ in metrics.REASON_KINDS} | {"invalid_value"} and len(kinds) >= 3, kinds


def test_the_runner_counts_tasks_by_model_and_status_in_one_series_each_whatever_the_positions() -> None:
    """The worker's task metrics, recorded by the real ``TaskRunner``: a success per covered interval, a retried
    attempt and a final failure, positions covered — and 40 tasks over different positions add no series."""
    from tests.unit.services.test_runner import MODEL, Executor, make_runner, ready_state, task

    reader = InMemoryMetricReader()
    metrics_api.set_meter_provider(MeterProvider(metric_readers=[reader]))  # once per process, like the tracer
    runner, _, _ = make_runner(Executor(), ready_state())
    for position in range(0, 600, 60):
        assert asyncio.run(runner.handle(task(position))) == "completed"
    failing, _, _ = make_runner(Executor(failures=3), ready_state())
    assert asyncio.run(failing.handle(task(0))) == "failed"
    for position in range(0, 600, 60):
        assert asyncio.run(runner.handle(task(position))) == "already-covered"
    points = {(m.name, tuple(sorted(dict(p.attributes or {}).items()))): p
              for m in _metrics(reader) for p in m.data.data_points}
    model = (("model", MODEL),)
    assert points[("cbt_tasks", (*model, ("status", "success")))].value == 10
    assert points[("cbt_tasks", (*model, ("status", "already-covered")))].value == 10
    assert points[("cbt_tasks", (*model, ("status", "retried")))].value == 2
    assert points[("cbt_tasks", (*model, ("status", "failed")))].value == 1
    assert points[("cbt_positions_completed", model)].value == 600
    assert points[("cbt_tasks_running", (*model, ("worker", "worker-1")))].value == 0
    assert points[("cbt_archived_tasks_deleted", (*model, ("queue", "default")))].value == 1
    assert points[("cbt_task_duration", (*model, ("status", "success")))].count == 10
    # (the registry is the process's: other tests' series are in it too, e.g. CBT's schedules by operation)
    assert {label for _, labels in points for label, _ in labels} <= {"model", "status", "result", "component",
                                                                      "error_type", "worker", "queue", "operation"}
    assert len([key for key in points if key[0] == "cbt_tasks"]) == 4


def _metrics(reader: InMemoryMetricReader) -> list[Any]:
    data = reader.get_metrics_data()
    assert data is not None
    return [m for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics]


def test_a_line_logged_while_a_task_is_handled_names_the_task_and_its_trace() -> None:
    import io
    import json
    import logging

    from cbt.adapters.runtime import JsonFormatter, LogContext
    from cbt.observability.tracing import logged_as

    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(LogContext())
    handler.setFormatter(JsonFormatter())
    log = logging.getLogger("test.task-lines")
    log.addHandler(handler)
    log.propagate = False
    try:
        with processing("cbt.task-requested.default", {}) as span, logged_as(model="an.m", task_id="an.m:0:60"):
            log.warning("task attempt failed", extra={"attempt": 1})
        log.warning("outside")
    finally:
        log.removeHandler(handler)
    inside, outside = (json.loads(line) for line in out.getvalue().splitlines())
    assert inside["model"] == "an.m" and inside["task_id"] == "an.m:0:60" and inside["attempt"] == 1
    assert inside["trace_id"] == f"{span.get_span_context().trace_id:032x}"
    assert "model" not in outside and "trace_id" not in outside
