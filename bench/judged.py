"""What each bench promises (docs/design/index.md#performance-targets) and how its report is read to judge it.

``verdicts(name, part)`` returns every target of bench ``name`` judged on its report ``part`` — a failed bench, or a
measurement it did not make, gives "not measured" — followed by its figures without a target. The per-model targets
of (g) and (h) are declared for every model the pipeline has, so a model that never ran is "not measured", not
absent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from bench.verdicts import Measured, Target, judge

Part = Mapping[str, Any]
Figures = dict[str, tuple[str, Measured, str]]

CATCHUP_TABLES = ("block_propagation_minute", "block_propagation_two_minute", "block_propagation_five_minute",
                  "transactions", "block_gas")
"""The example pipeline's incremental models (bench (g))."""
LIVE_BOUNDS_S = {"block_propagation_minute": 130, "block_propagation_two_minute": 250,
                 "block_propagation_five_minute": 610, "transactions": 130, "block_gas": 250}
"""(j): how far behind now each example model may fall while keeping up, two intervals + 10 s (``2 * interval.max +
10``; ``tests/unit/test_bench_verdicts.py`` checks them against the model files)."""
MIXED_INCREMENTALS = ("slot_minute", "slot_five_minute", "slot_fifteen_minute", "tx_dedup", "block_stats",
                      "block_gas", "head_partial", "tail_fill")
MIXED_TABLES = (*MIXED_INCREMENTALS, "entities_now")
"""bench/mixed_pipeline's transformations (bench (h))."""


def _summary(part: Part, key: str, stat: str = "p50") -> Measured:
    s = part.get(key) or {}
    return Measured(s.get(stat), s.get("n", 0))


def _value(part: Part | None, *path: str) -> Any:
    node: Any = part
    for key in path:
        if not isinstance(node, Mapping):
            return None
        node = node.get(key)
    return node


def _overhead(part: Part) -> tuple[dict[str, Measured], Figures]:
    n = part.get("intervals")
    measured = {"ratio_concurrency_1": Measured(_value(part, "sequential", "ratio"), n)}
    figures: Figures = {
        "direct_per_interval_ms": ("(a) direct statements, per interval",
                                   Measured(part.get("direct_per_interval_ms"), _value(part, "direct_ms", "n")), " ms"),
        "per_interval_concurrency_1_ms": ("(a) pipeline per interval, worker concurrency 1",
                                          Measured(_value(part, "sequential", "per_interval_ms"), n), " ms"),
        "ratio_default_concurrency": ("(a) pipeline vs direct, default worker concurrency (throughput)",
                                      Measured(_value(part, "concurrent", "ratio"), n), "x"),
    }
    return measured, figures


def _profile(part: Part) -> tuple[dict[str, Measured], Figures]:
    return {}, {"per_task_ms": ("(a) worker time per task, in-process", Measured(part.get("per_task_ms"),
                                                                                part.get("tasks")), " ms")}


def _cascade(part: Part) -> tuple[dict[str, Measured], Figures]:
    return {"completion_to_started_p50_ms": _summary(part, "completion_to_started_ms")}, {
        "completion_to_enqueued_p50_ms": ("(b) completion to the dependent task enqueued, p50",
                                          _summary(part, "completion_to_enqueued_ms"), " ms"),
        "completion_to_started_p99_ms": ("(b) completion to the dependent task started, p99",
                                         _summary(part, "completion_to_started_ms", "p99"), " ms"),
    }


def _backfill(part: Part) -> tuple[dict[str, Measured], Figures]:
    n = part.get("intervals")
    return {}, {
        "intervals_per_s_1": ("(c) backfill, one worker process",
                              Measured(_value(part, "workers_1", "intervals_per_s"), n), " intervals/s"),
        "intervals_per_s_2": ("(c) backfill, two worker processes",
                              Measured(_value(part, "workers_2", "intervals_per_s"), n), " intervals/s"),
        "speedup": ("(c) two worker processes vs one", Measured(part.get("speedup"), n), "x"),
    }


def _backlog(part: Part) -> tuple[dict[str, Measured], Figures]:
    n = part.get("intervals")
    union = part.get("union_mode") or {}
    same = (None if "differences_vs_one_statement" not in part
            else part["differences_vs_one_statement"] == 0 and bool(part.get("per_interval_coverage")))
    union_same = (None if "differences_vs_one_statement" not in union
                  else union["differences_vs_one_statement"] == 0 and bool(union.get("per_interval_coverage")))
    measured = {"ratio_vs_loop": Measured(part.get("ratio_vs_loop"), n),
                "ratio_vs_one_statement": Measured(part.get("ratio_vs_one_statement"), n),
                "same_rows_and_hourly_coverage": Measured(same),
                "union_same_rows_and_hourly_coverage": Measured(union_same)}
    figures: Figures = {
        "loop_s": ("(d) direct, one statement per interval in a loop", Measured(part.get("loop_s"), n), " s"),
        "one_statement_s": ("(d) direct, one statement over the whole range", Measured(part.get("one_statement_s")),
                            " s"),
        "pipeline_s": ("(d) pipeline, batch.mode bounds",
                       Measured(_seconds(_value(part, "pipeline", "wall_ms")), _value(part, "pipeline", "tasks"),
                                "tasks"), " s"),
        "union_ratio_vs_loop": ("(d) pipeline, batch.mode union, vs the loop", Measured(union.get("ratio_vs_loop"), n),
                                "x"),
    }
    return measured, figures


def _switched_as_one_statement(part: Part) -> bool | None:
    if "differences_vs_one_statement" not in part:
        return None
    return bool(part["differences_vs_one_statement"] == 0 and part.get("build_table_left") is False)


def _switch(part: Part) -> tuple[dict[str, Measured], Figures]:
    n = part.get("intervals")
    larger = part.get("larger") or {}
    return {"ratio_vs_one_statement": Measured(part.get("ratio_vs_one_statement"), n),
            "same_rows_build_dropped": Measured(_switched_as_one_statement(part)),
            "larger_ratio_vs_one_statement": Measured(larger.get("ratio_vs_one_statement"), n),
            "larger_same_rows_build_dropped": Measured(_switched_as_one_statement(larger))}, {
        "deploy_to_switch_s": ("(k) a breaking change: deployment recorded to switch recorded", Measured(
            part.get("deploy_to_switch_s"), n), " s"),
        "restart_to_switch_s": ("(k) a breaking change: services restarted to switch", Measured(
            part.get("restart_to_switch_s"), n), " s"),
        "restart_ratio_vs_one_statement": ("(k) restart to switch vs one statement", Measured(
            part.get("restart_ratio_vs_one_statement"), n), "x"),
        "one_statement_s": ("(k) the new definition over the range, one direct statement", Measured(
            part.get("one_statement_s")), " s"),
        "larger_deploy_to_switch_s": ("(k) at 30x the rows: deployment recorded to switch recorded", Measured(
            larger.get("deploy_to_switch_s"), n), " s"),
        "larger_one_statement_s": ("(k) at 30x the rows: the new definition over the range, one direct statement",
                                   Measured(larger.get("one_statement_s")), " s")}


def _checks(part: Part) -> tuple[dict[str, Measured], Figures]:
    n = part.get("intervals")
    holds = None if "same_rows" not in part else bool(part["same_rows"] and part.get("every_interval_passed"))
    return {"ratio_with_checks": Measured(part.get("ratio_with_checks"), n), "same_rows_all_passed": Measured(holds)}, {
        "median_wall_ms_without": ("(l) the backlog without checks, median of three runs",
                                   Measured(part.get("median_wall_ms_without"), n), " ms"),
        "median_wall_ms_with": ("(l) the backlog with two checks, median of three runs",
                                Measured(part.get("median_wall_ms_with"), n), " ms")}


def _head(part: Part) -> tuple[dict[str, Measured], Figures]:
    return {"overhead_p50_ms": _summary(part, "overhead_ms")}, {
        "latency_p50_ms": ("(e) source minute released to the third level covering it, p50",
                           _summary(part, "latency_ms"), " ms"),
        "overhead_p99_ms": ("(e) the same minus the three jobs' own time, p99", _summary(part, "overhead_ms", "p99"),
                            " ms"),
    }


def _scale(part: Part) -> tuple[dict[str, Measured], Figures]:
    models = _value(part, "dag", "models")
    measured = {
        "steady_tick_p50_ms": _summary(part, "steady_tick_ms"),
        "cascade_p50_ms": _summary(part, "cascade_ms"),
        "invalidation_p50_ms": Measured(_value(part, "invalidation", "widest", "ms", "p50"),
                                        _value(part, "invalidation", "widest", "ms", "n")),
        "interval_ratio": Measured(part.get("interval_ratio"), models),
        "peak_rss_mb": Measured(part.get("peak_rss_mb")),
    }
    figures: Figures = {
        "models": ("(f) synthetic models", Measured(models), ""),
        "completed_intervals": ("(f) completed intervals in the hot index",
                                Measured(_value(part, "coverage", "completed_intervals")), ""),
        "first_tick_p50_ms": ("(f) first tick after taking leadership, p50", _summary(part, "first_tick_ms"), " ms"),
    }
    return measured, figures


def _catchup(part: Part) -> tuple[dict[str, Measured], Figures]:
    work = part.get("work_per_covered_position") or {}
    oracle = part.get("oracle") or {}
    measured = {"start_to_caught_up_s": Measured(part.get("start_to_caught_up_s")),
                "equals_oracle_and_covers_the_data": Measured(oracle.get("holds"), note=oracle.get("problems", "")),
                "launch_to_first_task_s": Measured(_value(part, "start_timeline", "worker", "first task started"),
                                                   note="the worker's process start to its first task started")}
    for table in CATCHUP_TABLES:
        entry = work.get(table) or {}
        measured[f"work_per_covered_position.{table}"] = Measured(entry.get("work_per_covered_position"),
                                                                  entry.get("tasks"))
    figures: Figures = {"first_task_to_last_completion_s": (
        "(g) first task enqueued to last completion", Measured(part.get("first_task_to_last_completion_s")), " s")}
    return measured, figures


def _mixed(part: Part) -> tuple[dict[str, Measured], Figures]:
    models = part.get("models") or {}
    oracle = part.get("oracle") or {}
    measured = {"start_to_quiet_s": Measured(part.get("start_to_quiet_s")),
                "equals_oracle_and_covers_the_data": Measured(oracle.get("holds"), note=oracle.get("problems", ""))}
    for table in MIXED_INCREMENTALS:
        entry = models.get(table) or {}
        measured[f"work_per_covered_position.{table}"] = Measured(entry.get("work_per_covered_position"),
                                                                  entry.get("tasks"))
    for table in MIXED_TABLES:
        entry = models.get(table) or {}
        measured[f"under_load_vs_alone.{table}"] = Measured(
            entry.get("under_load_vs_alone"), _value(entry, "under_load", "n"),
            f"tasks of {_value(entry, 'under_load', 'interval')} positions" if entry.get("kind") == "incremental"
            else "")
    spans = _value(part, "admin_commit", "spans") or {}
    measured["admin_commit_p50_ms"] = Measured(spans.get("p50"), spans.get("n"))
    measured["admin_commit_p99_ms"] = Measured(spans.get("p99"), spans.get("n"))
    scans = [s for s in (part.get("bounds_scan_by_model") or {}).values() if s.get("count")]
    measured["bounds_scan_mean_ms"] = Measured(
        round(max(s["mean_s"] for s in scans) * 1000, 1) if scans else None,
        int(min(s["count"] for s in scans)) if scans else 0, "the slowest external's mean")
    beyond = _value(part, "chain_freshness", "last_level_beyond_jobs_s") or {}
    measured["chain_last_level_beyond_jobs_s"] = Measured(beyond.get("p50"), beyond.get("n", 0))
    cli = _value(part, "cli", "wall_ms") or {}
    figures: Figures = {
        **{f"cli_{name}_p50_ms": (f"(h) cbt {name} --json wall time while the pipeline runs, p50",
                                  Measured(s.get("p50"), s.get("n")), " ms") for name, s in cli.items()},
    }
    return measured, figures


def _live(part: Part) -> tuple[dict[str, Measured], Figures]:
    models = part.get("models") or {}
    measured = {"caught_up_s": Measured(part.get("caught_up_s"))}
    for table in LIVE_BOUNDS_S:
        entry = models.get(table) or {}
        measured[f"max_behind_s.{table}"] = Measured(entry.get("max_behind_s"), entry.get("samples"))
    figures: Figures = {"launch_to_first_task_s": (
        "(j) the worker's process start to its first task started",
        Measured(_value(part, "start_timeline", "worker", "first task started")), " s")}
    return measured, figures


def _rebuild(part: Part) -> tuple[dict[str, Measured], Figures]:
    sizes = part.get("sizes") or {}
    measured = {"empty_open_and_rebuild_s": Measured(_open_and_rebuild(sizes.get("0"))),
                "million_open_and_rebuild_s": Measured(_open_and_rebuild(sizes.get("1000000")))}
    figures: Figures = {f"open_and_rebuild_s.{rows}": (f"(i) open the admin tables and rebuild, {int(rows):,} rows",
                                                       Measured(_open_and_rebuild(size)), " s")
                        for rows, size in sizes.items() if rows not in ("0", "1000000")}
    return measured, figures


def _open_and_rebuild(size: Part | None) -> float | None:
    if not size:
        return None
    return round(float(size["open_tables_s"]) + float(size["rebuild_s"]), 2)


def _seconds(ms: float | None) -> float | None:
    return None if ms is None else round(ms / 1000, 2)


TARGETS: dict[str, tuple[Target, ...]] = {
    "overhead": (Target("ratio_concurrency_1", "(a) pipeline per interval vs the same statements run directly, "
                                               "worker concurrency 1", 1.25, "x", min_n=6),),
    "worker_profile": (),
    "cascade": (Target("completion_to_started_p50_ms", "(b) completion to the dependent task started (the "
                                                       "worker's report), p50", 100.0, " ms", min_n=10),),
    "backfill": (),
    "backlog": (Target("ratio_vs_loop", "(d) backlog through the pipeline vs a per-interval loop", 0.15, "x"),
                Target("ratio_vs_one_statement", "(d) backlog through the pipeline vs one statement", 1.5, "x"),
                Target("same_rows_and_hourly_coverage", "(d) batch.mode bounds: the rows of one statement, "
                                                        "coverage per hour", comparison="holds"),
                Target("union_same_rows_and_hourly_coverage", "(d) batch.mode union: the rows of one statement, "
                                                              "coverage per hour", comparison="holds")),
    "head": (Target("overhead_p50_ms", "(e) head latency minus the three jobs' own time, p50", 1000.0, " ms",
                    min_n=10),),
    "scale": (Target("steady_tick_p50_ms", "(f) steady tick over every model, p50", 1000.0, " ms", "<"),
              Target("cascade_p50_ms", "(f) cascade re-plan, p50", 10.0, " ms", "<"),
              Target("invalidation_p50_ms", "(f) invalidation's descendant mapping (widest external), p50", 50.0,
                     " ms", "<"),
              Target("interval_ratio", "(f) steady tick over every interval vs over a tenth of them", 1.25, "x"),
              Target("peak_rss_mb", "(f) coordinator peak RSS", 2048.0, " MB", "<")),
    "catchup": (Target("start_to_caught_up_s", "(g) the demo's backlog: the feed's start to caught up", 60.0, " s"),
                Target("equals_oracle_and_covers_the_data", "(g) every table equals the independent oracle and "
                                                            "covers the range its sources imply", comparison="holds"),
                *(Target(f"work_per_covered_position.{t}", f"(g) work per covered position: {t}", 1.0, "")
                  for t in CATCHUP_TABLES),
                Target("launch_to_first_task_s", "(g) launching the services to the worker's first task started", 10.0,
                       " s")),
    "mixed": (Target("start_to_quiet_s", "(h) mixed pipeline: services' start to quiet", 240.0, " s"),
              Target("equals_oracle_and_covers_the_data", "(h) every table equals the independent oracle and covers "
                                                          "the range its sources imply", comparison="holds"),
              *(Target(f"work_per_covered_position.{t}", f"(h) work per covered position: {t}", 1.1, "")
                for t in MIXED_INCREMENTALS),
              *(Target(f"under_load_vs_alone.{t}", f"(h) median job under load vs the same task alone: {t}", 3.0,
                       "x", min_n=3) for t in MIXED_TABLES),
              Target("admin_commit_p50_ms", "(h) admin commit (the workers' spans), p50", 100.0, " ms", min_n=10),
              Target("admin_commit_p99_ms", "(h) admin commit (the workers' spans), p99", 500.0, " ms", min_n=10),
              Target("bounds_scan_mean_ms", "(h) bounds scan, mean of the slowest external", 200.0, " ms",
                     min_n=5),
              Target("chain_last_level_beyond_jobs_s", "(h) source rows to the chain's last level beyond the three "
                                                       "jobs' own time, p50", 5.0, " s")),
    "live": (Target("caught_up_s", "(j) make demo: its backlog caught up after", 120.0, " s"),
             *(Target(f"max_behind_s.{t}", f"(j) then, watching the live feed: {t} at most behind now", float(b),
                      " s", min_n=10) for t, b in LIVE_BOUNDS_S.items())),
    "switch": (Target("ratio_vs_one_statement", "(k) breaking change over 300 hourly intervals: deployment to switch "
                                                "vs one statement", 1.5, "x"),
               Target("same_rows_build_dropped", "(k) after the switch: the rows of one statement, the build dropped",
                      comparison="holds"),
               Target("larger_ratio_vs_one_statement", "(k) the same at 30x the rows per hour (63,000): deployment to "
                                                       "switch vs one statement", 1.5, "x"),
               Target("larger_same_rows_build_dropped", "(k) at 30x the rows: the rows of one statement, the build "
                                                        "dropped", comparison="holds")),
    "checks": (Target("ratio_with_checks", "(l) 300 hourly intervals with two checks vs without, first task to last "
                                           "completion", 1.2, "x"),
               Target("same_rows_all_passed", "(l) the same rows, and every interval passed both checks",
                      comparison="holds")),
    "rebuild": (Target("empty_open_and_rebuild_s", "(i) open the admin tables and rebuild an empty record", 1.0,
                       " s"),
                Target("million_open_and_rebuild_s", "(i) open the admin tables and rebuild 1,000,000 rows", 30.0,
                       " s")),
}

READERS: dict[str, Callable[[Part], tuple[dict[str, Measured], Figures]]] = {
    "overhead": _overhead, "worker_profile": _profile, "cascade": _cascade, "backfill": _backfill,
    "backlog": _backlog, "head": _head, "scale": _scale, "catchup": _catchup, "mixed": _mixed, "rebuild": _rebuild,
    "live": _live, "switch": _switch, "checks": _checks,
}


def verdicts(name: str, part: Part) -> list[dict[str, Any]]:
    """Bench ``name``'s targets judged on ``part`` (everything "not measured" when it failed), then its figures."""
    measured, figures = ({}, {}) if "error" in part else READERS[name](part)
    return judge(TARGETS[name], measured, figures)
