"""Statistics, machine facts and the report: a table on stdout, ``bench/reports/<timestamp>.json``, ``latest.json``."""

from __future__ import annotations

import json
import math
import os
import platform
import subprocess
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from cbt.dev.spark import DELTA_PACKAGE

REPORTS = Path(__file__).resolve().parent / "reports"


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile (``pct`` in 0-100) of a non-empty sample."""
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return float(ordered[rank - 1])


def summary(values: Sequence[float]) -> dict[str, float | int]:
    """Count, mean, p50, p90, p99, min and max (milliseconds in, milliseconds out)."""
    if not values:
        return {"n": 0}
    return {"n": len(values), "mean": round(sum(values) / len(values), 1), "p50": percentile(values, 50),
            "p90": percentile(values, 90), "p99": percentile(values, 99), "min": min(values), "max": max(values)}


def machine() -> dict[str, Any]:
    load = os.getloadavg()
    return {
        "cores": os.cpu_count(), "load_average": [round(x, 2) for x in load], "platform": platform.platform(),
        "python": platform.python_version(), "git_commit": _git_commit(),
        "versions": {name: _version(name) for name in ("pyspark", "confluent-kafka", "faststream", "redis")},
        "delta": DELTA_PACKAGE,
    }


def load_average() -> float:
    return round(os.getloadavg()[0], 2)


def stamp() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")


def write(report: Mapping[str, Any], run_stamp: str, folder: Path = REPORTS) -> Path:
    """``<run_stamp>.json`` (rewritten as the run goes on) and ``latest.json``."""
    folder.mkdir(parents=True, exist_ok=True)
    text = json.dumps(report, indent=2, default=str) + "\n"
    path = folder / f"{run_stamp}.json"
    path.write_text(text)
    (folder / "latest.json").write_text(text)
    return path


def write_part(name: str, report: Mapping[str, Any], run_stamp: str, folder: Path = REPORTS) -> Path:
    """Bench ``name``'s part of ``report`` on its own, ``<folder>/<name>/<run_stamp>.json``, with the machine facts:
    the dated report per bench that the docs quote (``bench.docs``)."""
    path = folder / name / f"{run_stamp}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    part = {"bench": name, "run": run_stamp, "machine": report["machine"], "result": report[name]}
    path.write_text(json.dumps(part, indent=2, default=str) + "\n")
    return path


def table(rows: Sequence[tuple[str, str, str]]) -> str:
    """Three columns: what, measured, target or note."""
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = [" | ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


class Stopwatch:
    def __init__(self) -> None:
        self.started = time.monotonic()

    def seconds(self) -> float:
        return round(time.monotonic() - self.started, 1)


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=5,
                             cwd=REPORTS.parent, check=False)
    except OSError:
        return None
    return out.stdout.strip() or None
