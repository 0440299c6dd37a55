"""Traces link a publish to its processing through Kafka headers; metrics carry bounded labels only."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
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
from cbt.observability.tracing import processing

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


def test_a_message_without_trace_headers_starts_a_trace_of_its_own() -> None:
    SPANS.clear()
    with processing("cbt.invalidation", {"content-type": b"application/json"}):
        pass
    (span,) = SPANS.get_finished_spans()
    assert span.parent is None and not span.links


@pytest.mark.parametrize(("reason", "kind"), [
    ("task_id: Field required; model: Field required", "task_id"),
    ("body: Invalid JSON: expected value at line 1 column 1", "body"),
    ("range [995, 2000006) spans 1999011 positions, more than invalidator.max_range", "range"),
    ("model: no model 'nope.x'", "model"),
    ("{\"weird\": 1}", "other"),
])
def test_a_rejection_reason_becomes_a_bounded_label(reason: str, kind: str) -> None:
    assert metrics.reason_kind(reason) == kind


def test_task_metrics_have_one_series_per_model_and_status_whatever_the_positions() -> None:
    """Cardinality: a thousand tasks over different positions and task ids add no series."""
    reader = InMemoryMetricReader()
    meter = MeterProvider(metric_readers=[reader]).get_meter("cbt")
    counter = meter.create_counter("cbt_tasks")
    for position in range(1000):
        task = TaskRequested(task_id=f"an.m:{position}:60", model="an.m", position=position, interval=60)
        counter.add(1, {"model": task.model, "status": "success" if position % 3 else "failed"})
    data = reader.get_metrics_data()
    assert data is not None
    (points,) = [m.data.data_points for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics]
    assert sorted(dict(p.attributes or {})["status"] for p in points) == ["failed", "success"]


def test_a_line_logged_while_a_task_is_handled_names_the_task_and_its_trace() -> None:
    import io
    import json
    import logging

    from cbt.adapters.runtime import JsonFormatter, TraceIds
    from cbt.observability.tracing import logged_as

    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(TraceIds())
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
