"""``make bench``: overhead, cascade latency, backfill throughput and a backlog on the real local stack.

    python -m bench.run                  # everything (a few minutes on 2 cores)
    python -m bench.run --cascade        # one or more of --overhead --cascade --backfill --backlog --head --catchup
    python -m bench.run --mixed          # (h) the mixed pipeline alone (4-20 minutes)
    python -m bench.run --rebuild        # (i) the coordinator's first hot-index rebuild, up to 1,000,000 admin rows
    python -m bench.run --scale          # (f) alone: it needs only Redis (cbt dev up)

Prints a table and writes ``bench/reports/<timestamp>.json`` and ``bench/reports/latest.json``. Numbers depend on
the machine and on what else runs on it (the load average is in the report): compare ratios within one run.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # ``python bench/run.py``: make ``bench`` and ``tests`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import judged
from bench.report import Stopwatch, load_average, machine, stamp, table, write, write_part
from bench.stack import Endpoints
from bench.verdicts import missed, show


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.split("\n")[0])
    parser.add_argument("--overhead", action="store_true", help="(a) per-interval overhead vs direct statements")
    parser.add_argument("--cascade", action="store_true", help="(b) completion to dependent task latency")
    parser.add_argument("--backfill", action="store_true", help="(c) backfill throughput, 1 vs 2 workers")
    parser.add_argument("--backlog", action="store_true",
                        help="(d) a 300-hour backlog through the pipeline vs a per-interval loop and one statement")
    parser.add_argument("--head", action="store_true",
                        help="(e) new source minute -> the third model of a chain covers it, minus the jobs")
    parser.add_argument("--catchup", action="store_true",
                        help="(g) the demo's 15-minute backlog: time to catch up, work per covered position")
    parser.add_argument("--mixed", action="store_true",
                        help="(h) a mixed pipeline of nine models catching up while data arrives: time to quiet, "
                             "work per covered position, jobs under load vs alone")
    parser.add_argument("--rebuild", action="store_true",
                        help="(i) the first hot-index rebuild from admin tables of 0, 1,000 and 1,000,000 rows")
    parser.add_argument("--live", action="store_true",
                        help="(j) make demo: catch up its backlog, then keep up with its live feed (--live-watch s)")
    parser.add_argument("--live-watch", type=float, default=600.0,
                        help="seconds (j) watches the models keep up after catching up (default 600)")
    parser.add_argument("--switch", action="store_true",
                        help="(k) a breaking change over 300 hourly intervals: deploy to switch vs one statement")
    parser.add_argument("--checks", action="store_true",
                        help="(l) the backlog of (d) with two interval checks vs without")
    parser.add_argument("--scale", action="store_true",
                        help="(f) planning 10,000 models over 1,000,000 completed intervals, against Redis alone")
    parser.add_argument("--intervals", type=int, default=12, help="intervals for (a) (default 12)")
    parser.add_argument("--samples", type=int, default=32, help="dependent tasks for (b) (default 32)")
    parser.add_argument("--backfill-intervals", type=int, default=24, help="intervals for (c) (default 24)")
    parser.add_argument("--backlog-intervals", type=int, default=300, help="hourly intervals for (d) (default 300)")
    parser.add_argument("--head-samples", type=int, default=20, help="released minutes for (e) (default 20)")
    parser.add_argument("--scale-models", type=int, default=10_000, help="models for (f) (default 10,000)")
    parser.add_argument("--scale-intervals", type=int, default=1_000_000,
                        help="completed intervals for (f) (default 1,000,000)")
    parser.add_argument("--mixed-timeout", type=float, default=1200.0,
                        help="seconds (h) waits for quiet before reporting 'not quiet' (default 1200)")
    args = parser.parse_args(argv)
    every = ("overhead", "cascade", "backfill", "backlog", "head", "catchup", "mixed", "rebuild", "scale", "live",
             "switch", "checks")
    chosen = [name for name in every if getattr(args, name)] or list(every)
    if chosen == ["scale"]:  # Redis alone: no Spark or Kafka is started for (f)
        return _scale_only(args)

    from bench import (
        backfill,
        backlog,
        cascade,
        catchup,
        checks,
        head,
        live,
        mixed,
        overhead,
        profile,
        rebuild,
        scale,
        switch,
    )
    from cbt.adapters.spark import connect
    from cbt.dev import stack

    stack.up()
    endpoints = Endpoints.local()
    spark = connect(endpoints.spark_remote)
    clock, run_stamp = Stopwatch(), stamp()
    report: dict[str, Any] = {"machine": machine(), "load_average_at_start": load_average()}
    runs: dict[str, Callable[[], dict[str, Any]]] = {
        "overhead": lambda: overhead.benchmark(spark, endpoints, args.intervals),
        "worker_profile": lambda: profile.benchmark(spark, endpoints, args.intervals),
        "cascade": lambda: cascade.benchmark(spark, endpoints, args.samples),
        "backfill": lambda: backfill.benchmark(spark, endpoints, args.backfill_intervals),
        "backlog": lambda: backlog.benchmark(spark, endpoints, args.backlog_intervals),
        "head": lambda: head.benchmark(spark, endpoints, args.head_samples),
        "catchup": lambda: catchup.benchmark(spark, endpoints),
        "mixed": lambda: mixed.benchmark(spark, endpoints, args.mixed_timeout),
        "rebuild": lambda: rebuild.benchmark(spark, endpoints),
        "scale": lambda: scale.benchmark(endpoints.redis_url, args.scale_models, args.scale_intervals),
        "live": lambda: live.benchmark(spark, endpoints, args.live_watch),
        "switch": lambda: switch.benchmark(spark, endpoints, args.backlog_intervals),
        "checks": lambda: checks.benchmark(spark, endpoints, args.backlog_intervals),
    }
    try:
        for name, benchmark in runs.items():
            if (name if name != "worker_profile" else "overhead") not in chosen:
                continue
            try:
                report[name] = benchmark()
            except Exception as e:  # one benchmark failing (e.g. a timeout on a busy machine) keeps the others
                report[name] = {"error": f"{type(e).__name__}: {e}"}
                print(f"{name} failed: {e}", file=sys.stderr)
            report[name]["finished_after_s"] = clock.seconds()
            report[name]["verdicts"] = judged.verdicts(name, report[name])
            write(report, run_stamp)
            write_part(name, report, run_stamp)  # after each benchmark, so an interrupted run keeps what it measured
    finally:
        spark.stop()
    return _finish(report, clock, run_stamp)


def _scale_only(args: argparse.Namespace) -> int:
    """(f) on its own: it needs Redis alone (``cbt dev up`` starts it), so the rest of the stack is left alone."""
    from bench import scale

    clock, run_stamp = Stopwatch(), stamp()
    report: dict[str, Any] = {"machine": machine(), "load_average_at_start": load_average()}
    report["scale"] = scale.benchmark(Endpoints.local().redis_url, args.scale_models, args.scale_intervals)
    report["scale"]["finished_after_s"] = clock.seconds()
    report["scale"]["verdicts"] = judged.verdicts("scale", report["scale"])
    write_part("scale", report, run_stamp)
    return _finish(report, clock, run_stamp)


def _finish(report: dict[str, Any], clock: Stopwatch, run_stamp: str) -> int:
    report["load_average_at_end"] = load_average()
    report["elapsed_s"] = clock.seconds()
    misses = [f"{name}.{key}" for name, part in report.items() if isinstance(part, dict)
              for key in missed(part.get("verdicts", []))]
    report["missed_or_not_measured"] = misses
    path = write(report, run_stamp)
    print(table(rows(report)))
    print(f"\n{len(misses)} target(s) missed or not measured" + (f": {', '.join(misses)}" if misses else ""))
    print(f"\nload average {report['load_average_at_start']} at start, {report['load_average_at_end']} at end "
          f"({report['machine']['cores']} cores); {report['elapsed_s']} s; report: {path}")
    return 0


def rows(report: dict[str, Any]) -> list[tuple[str, str, str]]:
    """Every bench's verdicts: what, the measured value, and the target with the verdict the code gave it."""
    out = [("measure", "value", "target: verdict")]
    for name, part in report.items():
        if not isinstance(part, dict) or "verdicts" not in part:
            continue
        if "error" in part:
            out.append((f"{name}: failed", "-", str(part["error"])[:100]))
        for v in part["verdicts"]:
            target = f"{v['target']}: {v['verdict'].upper() if v['verdict'] != 'met' else 'met'}" if v["target"] else ""
            out.append((v["what"], show(v), target))
    return out


if __name__ == "__main__":
    sys.exit(main())
