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

from bench.report import Stopwatch, load_average, machine, stamp, table, write
from bench.stack import Endpoints

OVERHEAD_TARGET = 1.25
CASCADE_P50_TARGET_MS = 100.0


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
    every = ("overhead", "cascade", "backfill", "backlog", "head", "catchup", "mixed", "rebuild", "scale")
    chosen = [name for name in every if getattr(args, name)] or list(every)
    if chosen == ["scale"]:  # Redis alone: no Spark or Kafka is started for (f)
        return _scale_only(args)

    from bench import backfill, backlog, cascade, catchup, head, mixed, overhead, profile, rebuild, scale
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
            write(report, run_stamp)  # after each benchmark, so an interrupted run keeps what it measured
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
    return _finish(report, clock, run_stamp)


def _finish(report: dict[str, Any], clock: Stopwatch, run_stamp: str) -> int:
    report["load_average_at_end"] = load_average()
    report["elapsed_s"] = clock.seconds()
    path = write(report, run_stamp)
    print(table(rows(report)))
    print(f"\nload average {report['load_average_at_start']} at start, {report['load_average_at_end']} at end "
          f"({report['machine']['cores']} cores); {report['elapsed_s']} s; report: {path}")
    return 0


def rows(report: dict[str, Any]) -> list[tuple[str, str, str]]:
    out = [("measure", "value", "target / note")]
    out += [(f"{name}: failed", "-", str(part["error"])[:100]) for name, part in report.items()
            if isinstance(part, dict) and "error" in part]
    if "error" not in report.get("overhead", {"error": 1}):
        ov = report["overhead"]
        out.append(("(a) direct statements, per interval", f"{ov['direct_per_interval_ms']:.0f} ms",
                    f"{ov['intervals']} x {ov['interval_s']} s of {ov['model']}"))
        for name in ("sequential", "concurrent"):
            run = ov[name]
            mark = "ok" if run["ratio"] <= OVERHEAD_TARGET else "MISSED"
            out.append((f"(a) pipeline, worker concurrency {run['worker_concurrency']}",
                        f"{run['per_interval_ms']:.0f} ms = {run['ratio']:.2f}x",
                        f"<= {OVERHEAD_TARGET}x ({mark})" if name == "sequential" else "throughput"))
    if "error" not in report.get("worker_profile", {"error": 1}):
        prof = report["worker_profile"]
        top = [(k, v["ms_per_task"]) for k, v in prof["steps"].items() if k != "handle (total)"][:4]
        out.append(("(a) worker time per task (in-process)", f"{prof['per_task_ms']:.0f} ms",
                    ", ".join(f"{k} {ms:.0f}" for k, ms in top)))
    if "error" not in report.get("cascade", {"error": 1}):
        cas = report["cascade"]
        for key, label in (("completion_to_enqueued_ms", "enqueued"), ("completion_to_seen_by_bench_ms", "seen"),
                           ("completion_to_started_ms", "started")):
            s = cas[key]
            if not s.get("n"):
                continue
            note = f"p50 <= {CASCADE_P50_TARGET_MS:.0f} ms ({'ok' if s['p50'] <= CASCADE_P50_TARGET_MS else 'MISSED'})"
            out.append((f"(b) completion -> dependent {label}, p50 / p99",
                        f"{s['p50']:.0f} / {s['p99']:.0f} ms", f"n={s['n']}" + (f"; {note}" if label == "started"
                                                                                 else "")))
    if "error" not in report.get("backfill", {"error": 1}):
        bf = report["backfill"]
        for workers in (1, 2):
            run = bf[f"workers_{workers}"]
            out.append((f"(c) backfill, {workers} worker process(es)", f"{run['intervals_per_s']:.2f} intervals/s",
                        f"{run['intervals']} intervals in {run['wall_ms'] / 1000:.1f} s"))
        out.append(("(c) speed-up 2 vs 1 workers", f"{bf['speedup']:.2f}x",
                    f"model concurrency {bf['model_concurrency']}"))
    if "error" not in report.get("backlog", {"error": 1}):
        bl = report["backlog"]
        same = bl["differences_vs_one_statement"] == 0 and bl["per_interval_coverage"]
        out.append((f"(d) backlog of {bl['intervals']} h, direct loop / one statement",
                    f"{bl['loop_s']:.1f} s / {bl['one_statement_s']:.1f} s", f"{bl['rows_per_hour']} source rows/h"))
        for key, label in (("ratio_vs_loop", "loop"), ("ratio_vs_one_statement", "one statement")):
            target = bl["targets"][key]
            out.append((f"(d) pipeline (batch.mode bounds) vs {label}",
                        f"{bl['pipeline']['wall_ms'] / 1000:.1f} s = {bl[key]:.2f}x",
                        f"<= {target}x ({'ok' if bl[key] <= target else 'MISSED'})"))
        out.append(("(d) same rows, per-interval coverage", "yes" if same else "NO",
                    f"{bl['pipeline']['tasks']} tasks"))
        um = bl.get("union_mode")
        if um:
            same = um["differences_vs_one_statement"] == 0 and um["per_interval_coverage"]
            out.append(("(d) pipeline, batch.mode union, vs loop / one statement",
                        f"{um['pipeline']['wall_ms'] / 1000:.1f} s = {um['ratio_vs_loop']:.2f}x / "
                        f"{um['ratio_vs_one_statement']:.2f}x",
                        f"same rows, per-interval coverage: {'yes' if same else 'NO'}; "
                        f"{um['pipeline']['tasks']} tasks"))
    if "error" not in report.get("head", {"error": 1}):
        hd = report["head"]
        over, target = hd["overhead_ms"], hd["targets"]["overhead_p50_ms"]
        out.append(("(e) head: source minute -> third level covers it, p50 / p99",
                    f"{hd['latency_ms']['p50']:.0f} / {hd['latency_ms']['p99']:.0f} ms", hd["chain"]))
        out.append(("(e) head latency minus the three jobs, p50 / p99", f"{over['p50']:.0f} / {over['p99']:.0f} ms",
                    f"p50 <= {target:.0f} ms ({'ok' if over['p50'] <= target else 'MISSED'}); n={hd['samples']}"))
    if "error" not in report.get("scale", {"error": 1}):
        from bench import scale

        out += scale.rows(report["scale"])
    if "error" not in report.get("catchup", {"error": 1}):
        cu = report["catchup"]
        target, equal = cu["targets"]["start_to_caught_up_s"], all(d == [0, 0] or d == (0, 0)
                                                                   for d in cu["oracle_differences"].values())
        out.append((f"(g) demo backlog ({cu['backlog_s']} s, {cu['models']} models) caught up",
                    f"{cu['start_to_caught_up_s']:.0f} s", f"<= {target:.0f} s "
                    f"({'ok' if cu['start_to_caught_up_s'] <= target else 'MISSED'}); equals the oracle: "
                    f"{'yes' if equal else 'NO'}"))
        for table, work in cu["work_per_covered_position"].items():
            out.append((f"(g) work per covered position: {table}", f"{work['work_per_covered_position']}",
                        f"{work['tasks']} tasks, {work['covered_positions']} positions"))
    if "error" not in report.get("rebuild", {"error": 1}):
        for rows_, size in report["rebuild"]["sizes"].items():
            out.append((f"(i) first hot-index rebuild, {int(rows_):,} admin rows", f"{size['rebuild_s']} s",
                        f"+ {size['open_tables_s']} s opening the tables; <= 5 s when small"))
    if "error" not in report.get("mixed", {"error": 1}):
        from bench import mixed

        out += mixed.rows(report["mixed"])
    return out


if __name__ == "__main__":
    sys.exit(main())
