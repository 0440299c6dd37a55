"""(l) What interval checks cost: bench (d)'s backlog — 300 hourly intervals of a GROUP BY, in batch mode ``bounds``
— caught up by the pipeline with the model as it is and with two checks added (``not_null`` on its grouping
columns, and an ``expression`` every row satisfies), after one untimed run that warms the stack and gives the
reference rows, then three times each, alternately (in alternating order, so drift cancels). The checks' cost is the
ratio of the median wall times (first task enqueued to last completion); the tables must hold the same rows, and
every interval must have passed both checks.
"""

from __future__ import annotations

import statistics
from typing import Any

from pyspark.sql import SparkSession

from bench.backlog import COLUMNS, HOUR, MODEL, MODEL_FILE, START, differences, pipeline, write_source
from bench.stack import Endpoints, deploy
from cbt.adapters.delta_admin import admin_from_config
from cbt.dev.generator import SourceTables

CHECKS = """checks:
  - not_null: [hour, bucket]
  - expression: n > 0 AND total >= 0
    name: counted
---"""
ROUNDS = 3


def with_checks(model_file: str) -> str:
    """The model file with ``CHECKS`` at the end of its frontmatter."""
    head, separator, body = model_file.partition("\n---\n")
    assert separator, "the bench's model file has no frontmatter end"
    return f"{head}\n{CHECKS}\n{body}"


def run_once(spark: SparkSession, endpoints: Endpoints, end: int, checked: bool, intervals: int,
             keep: str | None) -> tuple[dict[str, Any], str]:
    model_file = MODEL_FILE.replace("{mode}", "bounds")
    tag = "ck" if checked else "nc"
    bd = deploy(spark, endpoints, tag, [], model_files={f"{MODEL}.sql": with_checks(model_file) if checked
                                                        else model_file})
    try:
        write_source(spark, SourceTables(bd.dep.source_db), START, end)
        spark.sql(f"CREATE TABLE {bd.model_id(MODEL)} ({COLUMNS}) USING DELTA")
        ours = pipeline(bd, end, timeout_s=300.0 + 10.0 * intervals)
        copy = f"default.bench_checks_{tag}"
        spark.sql(f"CREATE OR REPLACE TABLE {copy} USING DELTA AS SELECT * FROM {bd.model_id(MODEL)}")
        if checked:
            results = admin_from_config(bd.dep.spark, bd.dep.config).check_results_record().check_results(
                [bd.model_id(MODEL)], limit=10 * intervals)
            ours["verdicts"] = {"passed": sum(r.status == "passed" for r in results), "other": sum(
                r.status != "passed" for r in results)}
        if keep is not None:
            ours["differences"] = differences(spark, copy, keep)
        return ours, copy
    finally:
        bd.teardown()


def benchmark(spark: SparkSession, endpoints: Endpoints, intervals: int) -> dict[str, Any]:
    end = START + intervals * HOUR
    runs: dict[bool, list[dict[str, Any]]] = {False: [], True: []}
    warm_up, first = run_once(spark, endpoints, end, False, intervals, None)  # the reference rows; not timed
    for round_number in range(ROUNDS):
        for checked in (False, True) if round_number % 2 == 0 else (True, False):  # alternating: drift cancels
            ours, _ = run_once(spark, endpoints, end, checked, intervals, first)
            runs[checked].append(ours)
    without = statistics.median(r["wall_ms"] for r in runs[False])
    checked_ms = statistics.median(r["wall_ms"] for r in runs[True])
    return {"intervals": intervals, "rounds": ROUNDS, "warm_up_wall_ms": warm_up["wall_ms"],
            "without_checks": runs[False], "with_checks": runs[True],
            "median_wall_ms_without": without, "median_wall_ms_with": checked_ms,
            "ratio_with_checks": round(checked_ms / without, 3),
            "same_rows": all(r.get("differences", 0) == 0 for rs in runs.values() for r in rs),
            "every_interval_passed": all(r["verdicts"] == {"passed": 2 * intervals, "other": 0}
                                         for r in runs[True])}
