"""The OpenTelemetry SDK for one service process: metrics for Prometheus (and OTLP), traces to the configured exporter.

- Metrics: a Prometheus endpoint at ``metrics_addr`` (``/metrics``; port offset per service, like the health
  address), and, when ``telemetry.otlp_endpoint`` is set, an OTLP/HTTP push every ``metrics_interval``.
- Traces: ``telemetry.traces``: ``none`` (the default: spans are not recorded), ``console`` (one JSON span per line
  on stderr, or appended to ``telemetry.traces_file``) or ``otlp`` (OTLP/HTTP to ``telemetry.otlp_endpoint``).
- The resource names the service (``service.name`` = ``cbt-<service>``) and the process (``service.instance.id``).
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass
from typing import IO, Any

from opentelemetry import metrics, trace
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
from prometheus_client import start_http_server

from cbt.config.addresses import bind_address
from cbt.config.settings import Config

log = logging.getLogger("cbt.telemetry")


@dataclass
class Telemetry:
    """What ``start`` set up; ``shutdown`` flushes the exporters and stops the metrics endpoint."""

    meters: MeterProvider
    tracers: TracerProvider | None
    metrics_port: int | None
    _server: Any = None
    _traces_file: IO[str] | None = None

    def shutdown(self) -> None:
        if self.tracers is not None:
            self.tracers.shutdown()
        self.meters.shutdown()
        if self._server is not None:
            self._server.shutdown()
        if self._traces_file is not None:
            self._traces_file.close()


def start(config: Config, service: str, instance: str, metrics_addr: str | None) -> Telemetry:
    """Install the SDK's providers globally (the instruments of ``cbt.observability.metrics`` start recording) and
    serve ``/metrics`` on ``metrics_addr`` (none when empty; port 0 picks one, see ``Telemetry.metrics_port``)."""
    settings = config.telemetry
    resource = Resource.create({"service.name": f"cbt-{service}", "service.instance.id": instance,
                                "service.namespace": "cbt"})
    readers: list[MetricReader] = [PrometheusMetricReader(scope_info_enabled=False)]
    if settings.otlp_endpoint:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

        readers.append(PeriodicExportingMetricReader(
            OTLPMetricExporter(endpoint=f"{settings.otlp_endpoint.rstrip('/')}/v1/metrics"),
            export_interval_millis=int(settings.metrics_interval_s * 1000)))
    meters = MeterProvider(metric_readers=readers, resource=resource)
    metrics.set_meter_provider(meters)
    telemetry = Telemetry(meters, None, None)
    if metrics_addr:
        host, port = bind_address(metrics_addr)
        server, _thread = start_http_server(port, addr=host)
        telemetry._server = server
        telemetry.metrics_port = server.server_port
        log.info("metrics for Prometheus", extra={"url": f"http://{host}:{server.server_port}/metrics"})
    if settings.traces != "none":
        exporter = _span_exporter(config, telemetry, service, instance)
        tracers = TracerProvider(resource=resource)
        tracers.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=500))
        trace.set_tracer_provider(tracers)
        telemetry.tracers = tracers
    return telemetry


def _span_exporter(config: Config, telemetry: Telemetry, service: str, instance: str) -> SpanExporter:
    settings = config.telemetry
    if settings.traces == "otlp":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter(endpoint=f"{(settings.otlp_endpoint or '').rstrip('/')}/v1/traces")
    out: IO[str] = sys.stderr
    if settings.traces_file:
        path = config.base_dir / settings.traces_file.format(service=service, instance=instance)
        path.parent.mkdir(parents=True, exist_ok=True)
        telemetry._traces_file = out = open(path, "a", encoding="utf-8")  # noqa: SIM115
    return ConsoleSpanExporter(out=out, formatter=_one_line)


def _one_line(span: ReadableSpan) -> str:
    return str(span.to_json(indent=None)) + "\n"
