"""The metric list in ``docs/metrics.md`` is what a service serves, and the Grafana dashboard and alert rules in
``docs/`` query only those metrics with PromQL that parses."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import promql_parser
import yaml

DOCS = Path(__file__).resolve().parents[2] / "docs"
SCRAPE = """
import sys, urllib.request
from opentelemetry.metrics import Counter, Histogram, UpDownCounter, _Gauge
from cbt.adapters import telemetry
from cbt.config.settings import Config
from cbt.observability import metrics

exported = telemetry.start(Config(), "test", "test-1", "127.0.0.1:0")
for instrument in vars(metrics).values():
    if isinstance(instrument, Counter | UpDownCounter):
        instrument.add(1, {"model": "an.m"})
    elif isinstance(instrument, Histogram):
        instrument.record(0.1, {"model": "an.m"})
    elif isinstance(instrument, _Gauge):
        instrument.set(1)
    elif isinstance(instrument, metrics.GaugeTable):
        instrument.replace({(("model", "an.m"),): 1})
with urllib.request.urlopen(f"http://127.0.0.1:{exported.metrics_port}/metrics", timeout=10) as response:
    sys.stdout.write(response.read().decode())
exported.shutdown()
"""
SERIES_SUFFIXES = ("_bucket", "_sum", "_count", "_created")
BUILTIN = {"up"}
"""Series Prometheus itself adds to every target."""


def served() -> set[str]:
    """Every ``cbt_`` series name a service serves, scraped from a real ``/metrics`` endpoint (the SDK's Prometheus
    exporter adds ``_total`` and units), once every instrument has recorded a value."""
    run = subprocess.run([sys.executable, "-c", SCRAPE], capture_output=True, text=True, timeout=60, check=True)
    return {histogram_base(line.split("{")[0].split(" ")[0]) for line in run.stdout.splitlines()
            if line.startswith("cbt_")}


def documented() -> set[str]:
    table = (DOCS / "metrics.md").read_text()
    return set(re.findall(r"^\| `(cbt_[a-z_]+)` \|", table, flags=re.MULTILINE))


def selectors(node: Any) -> set[str]:
    """Metric names an expression selects."""
    if node is None or isinstance(node, str | int | float | bool):
        return set()
    if isinstance(node, list | tuple):
        return set().union(*(selectors(child) for child in node))
    found = {node.name} if type(node).__name__ == "VectorSelector" and node.name else set()
    for attribute in ("lhs", "rhs", "expr", "param", "args", "vector_selector"):
        found |= selectors(getattr(node, attribute, None))
    return found


def histogram_base(name: str) -> str:
    """``cbt_task_duration_seconds_bucket`` → ``cbt_task_duration_seconds``."""
    return re.sub("|".join(f"{s}$" for s in SERIES_SUFFIXES), "", name)


def test_every_served_metric_is_documented_and_every_documented_one_is_served() -> None:
    assert served() == documented()


def dashboard_queries() -> list[str]:
    dashboard = json.loads((DOCS / "grafana" / "cbt-dashboard.json").read_text())
    return [target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", ())]


def alert_rules() -> list[dict[str, Any]]:
    return [rule for group in yaml.safe_load((DOCS / "alerts" / "cbt-rules.yaml").read_text())["groups"]
            for rule in group["rules"]]


def test_the_dashboard_and_the_alert_rules_query_only_served_metrics() -> None:
    queries = dashboard_queries() + [rule["expr"] for rule in alert_rules()]
    assert len(queries) >= 15
    names = documented() | BUILTIN
    for query in queries:
        used = {histogram_base(name) for name in selectors(promql_parser.parse(query))}
        assert used, f"selects no metric: {query}"
        assert used <= names, f"{query}: unknown {used - names}"


def test_every_alert_rule_says_how_long_what_how_bad_and_why() -> None:
    rules = alert_rules()
    assert {"CBTModelLagGrowing", "CBTModelTasksFailing", "CBTConsumerLagHigh", "CBTNoLeader"} <= {
        rule["alert"] for rule in rules}
    for rule in rules:
        assert re.fullmatch(r"\d+[smh]", rule["for"]), rule["alert"]
        assert rule["labels"]["severity"] in ("warning", "critical"), rule["alert"]
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], rule["alert"]
