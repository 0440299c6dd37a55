"""Spans of a task's journey, linked across processes by W3C trace context in Kafka headers.

Messaging semantic conventions: publishing is a PRODUCER span ``send <topic>`` whose context goes into the message's
headers (``traceparent``, ``tracestate``); consuming is a CONSUMER span ``process <topic>``, a child of that context
that also links to it. So a task's journey is one trace — the coordinator's ``plan`` and publish → the worker's
process, Spark job, admin commit and completion publish → the coordinator's process of the completion — and the
dependents' ``plan`` starts the next trace, linked to that process span (``new_trace``). With no SDK configured
(``telemetry.traces: none``) every span is the API's no-op and no header is added.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, Span, SpanKind

tracer = trace.get_tracer("cbt")
log_fields: ContextVar[tuple[tuple[str, str], ...]] = ContextVar("cbt_log_fields", default=())
"""Fields every log line inside a task's handling carries (``model``, ``task_id``): set by ``logged_as``."""


@contextmanager
def logged_as(**fields: str) -> Iterator[None]:
    """Lines logged inside (in this task and the asyncio tasks it starts) carry ``fields``."""
    token = log_fields.set((*log_fields.get(), *fields.items()))
    try:
        yield
    finally:
        log_fields.reset(token)


@contextmanager
def sending(topic: str, key: str) -> Iterator[dict[str, str]]:
    """A ``send <topic>`` span around a publish; yields the headers that carry its context."""
    with tracer.start_as_current_span(f"send {topic}", kind=SpanKind.PRODUCER,
                                      attributes=_attributes(topic, "send", key)):
        headers: dict[str, str] = {}
        propagate.inject(headers)
        yield headers


@contextmanager
def processing(topic: str, headers: Mapping[str, Any] | None, key: str | None = None,
               **attributes: str | int) -> Iterator[Span]:
    """A ``process <topic>`` span for one consumed message, child of (and linked to) the context in its
    ``headers``; ``attributes`` (model, task id) are added to it."""
    parent = propagate.extract(_text_headers(headers or {}))
    producer = trace.get_current_span(parent).get_span_context()
    with tracer.start_as_current_span(
            f"process {topic}", context=parent, kind=SpanKind.CONSUMER,
            links=[Link(producer)] if producer.is_valid else [],
            attributes={**_attributes(topic, "process", key), **attributes}) as span:
        yield span


@contextmanager
def new_trace(name: str, **attributes: str | int) -> Iterator[Span]:
    """A span that starts a trace of its own, linked to the span in progress (if any): each re-plan after a
    completion starts a new trace, so a pipeline that keeps cascading does not grow one endless trace; the link
    leads from the plan back to the completion that caused it."""
    cause = trace.get_current_span().get_span_context()
    with tracer.start_as_current_span(name, context=Context(), links=[Link(cause)] if cause.is_valid else [],
                                      attributes=attributes) as span:
        yield span


def current_ids() -> tuple[str, str] | None:
    """``(trace_id, span_id)`` in hex of the span in progress, for log lines; ``None`` outside a recorded span."""
    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return f"{context.trace_id:032x}", f"{context.span_id:016x}"


def _attributes(topic: str, operation: str, key: str | None) -> dict[str, str]:
    out = {"messaging.system": "kafka", "messaging.destination.name": topic, "messaging.operation.type": operation}
    if key:
        out["messaging.kafka.message.key"] = key
    return out


def _text_headers(headers: Mapping[str, Any]) -> dict[str, str]:
    """Kafka header values arrive as bytes."""
    return {k: v.decode("utf-8", errors="replace") if isinstance(v, bytes) else str(v) for k, v in headers.items()}
