"""(k) Deploy to switch: a breaking change to a model that already covers 300 hourly intervals of a GROUP BY (bench
(d)'s model and source) — ``sum(x)`` becomes ``round(sum(x), 2)``, as in the SQLMesh run the issue quotes — deployed
by restarting the coordinator and the worker with the edited file. Timed from the deployment (the versions record's
time for version 2 ``building``) to the switch (its time for version 2 ``live``: once the model's table holds the
new rows), and from the restart to the switch (the services' start included), against one direct Spark statement
computing the new definition over the same range (the fastest of ``STATEMENT_RUNS``). Afterwards the model's table
must equal that statement's rows, and the build table be gone.

The worker is named (``worker.instance_id``), as a rollout of named workers runs it. Run twice: at bench (d)'s
source (about 2,100 rows per hour, a statement of about a second, so the services' fixed costs — the restarted
worker's start, the build table's creation, the switch's catalog steps — weigh most), and at ``LARGER`` times the
rows per hour (the same 300 hours), where the work itself does.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from bench.backlog import (
    CLIENTS,
    COLUMNS,
    HOUR,
    MODEL,
    MODEL_FILE,
    PREDICATE,
    SELECT,
    START,
    differences,
    write_source,
)
from bench.report import load_average
from bench.stack import BenchDeployment, Endpoints, deploy
from cbt.adapters.admin_tables.versions import VERSIONS_TABLE
from cbt.adapters.delta_admin import admin_from_config
from cbt.dev.generator import SourceTables
from cbt.models.deployment import DeployedVersion

OLD, NEW = "sum(propagation_slot_start_diff)", "round(sum(propagation_slot_start_diff), 2)"
WORKER_NAME = "bench-worker"
"""The worker's ``worker.instance_id``, as a rollout of named workers (a StatefulSet, a compose service) gives it:
the restarted worker takes its partitions back as the same static group member, without a rebalance's wait."""
LARGER = 30
"""The second run's rows per hour, as a multiple of the first's (more clients seeing each block)."""


def covered(bd: BenchDeployment, end: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while bd.dep.coverage(bd.model_id(MODEL)) != ((START, end),):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{MODEL}: covers {bd.dep.coverage(bd.model_id(MODEL))} after {timeout_s:.0f}s")
        time.sleep(0.2)


def versions(bd: BenchDeployment) -> list[DeployedVersion]:
    return [v for v in admin_from_config(bd.dep.spark, bd.dep.config).versions_record().all_versions()
            if v.model == bd.model_id(MODEL)]


def live_version(bd: BenchDeployment) -> int | None:
    return max((v.version for v in versions(bd) if v.state == "live"), default=None)


def recorded_times_ms(bd: BenchDeployment) -> tuple[int | None, int | None]:
    """When the versions record says version 2 began ``building`` and became ``live`` (the record's own times)."""
    table = f"{bd.dep.config.admin.incremental.database}.{VERSIONS_TABLE}"
    rows = bd.dep.spark.sql(f"""SELECT state, unix_millis(deployed_date_time) AS at_ms FROM {table}
        WHERE `table` = '{MODEL}' AND version = 2""").collect()
    building = [r["at_ms"] for r in rows if r["state"] == "building"]
    live = [r["at_ms"] for r in rows if r["state"] == "live"]
    return (min(building) if building else None), (max(live) if live else None)


def build_phases(bd: BenchDeployment) -> dict[str, float | None]:
    """Where the time to the switch went, from the records: deployment to the build's completion recorded (the
    worker's start, the table's creation, the job), the build's jobs themselves, and from the build's completion
    to the switch recorded (noticing it, replacing the table, recording)."""
    admin = bd.dep.config.admin
    versions_table = f"{admin.incremental.database}.{VERSIONS_TABLE}"
    completions = f"{admin.incremental.database}.{admin.incremental.table}"
    marks = bd.dep.spark.sql(f"""SELECT
        (SELECT min(unix_millis(deployed_date_time)) FROM {versions_table}
          WHERE `table` = '{MODEL}' AND version = 2 AND state = 'building') AS building_ms,
        (SELECT max(unix_millis(deployed_date_time)) FROM {versions_table}
          WHERE `table` = '{MODEL}' AND version = 2 AND state = 'live') AS live_ms,
        (SELECT max(unix_millis(updated_date_time)) FROM {completions}
          WHERE task_id LIKE '%__cbt_v2:%') AS built_ms,
        (SELECT sum(duration_ms) FROM {completions} WHERE task_id LIKE '%__cbt_v2:%') AS jobs_ms,
        (SELECT count(DISTINCT task_id) FROM {completions} WHERE task_id LIKE '%__cbt_v2:%') AS tasks""").first()
    if marks is None or None in (marks["building_ms"], marks["live_ms"], marks["built_ms"]):
        return {"deploy_to_built_s": None, "build_jobs_s": None, "build_tasks": None, "built_to_switch_s": None}
    return {"deploy_to_built_s": round((marks["built_ms"] - marks["building_ms"]) / 1000, 2),
            "build_jobs_s": None if marks["jobs_ms"] is None else round(marks["jobs_ms"] / 1000, 2),
            "build_tasks": marks["tasks"],
            "built_to_switch_s": round((marks["live_ms"] - marks["built_ms"]) / 1000, 2)}


STATEMENT_RUNS = 3
"""The direct statement runs this many times, each into a new table, and the fastest is the baseline: one run of it
varied from 5.9 s to 10.6 s at 30x the rows on this machine, and the ratio must not be flattered by a slow one."""


def one_statement(spark: SparkSession, bd: BenchDeployment, end: int) -> list[float]:
    """Seconds for the new definition over the whole range, directly, into a table of its own (``once_new``, the
    first run's), ``STATEMENT_RUNS`` times."""
    source = SourceTables(bd.dep.source_db).table("beacon_blocks")
    select = SELECT.replace(OLD, NEW).format(source=source, start=START, end=end)
    took = []
    for run in range(STATEMENT_RUNS):
        target = f"{bd.dep.output_db}.once_new" + (f"_{run}" if run else "")
        spark.sql(f"CREATE TABLE {target} ({COLUMNS}) USING DELTA")
        began = time.perf_counter()
        spark.sql(f"INSERT INTO {target} REPLACE WHERE {PREDICATE.format(start=START, end=end)}\n{select}").collect()
        took.append(time.perf_counter() - began)
    return took


def benchmark(spark: SparkSession, endpoints: Endpoints, intervals: int) -> dict[str, Any]:
    first = one_change(spark, endpoints, intervals, CLIENTS, "sw")
    return {**first, "larger": one_change(spark, endpoints, intervals, CLIENTS * LARGER, "swl")}


def one_change(spark: SparkSession, endpoints: Endpoints, intervals: int, clients: int, tag: str) -> dict[str, Any]:
    end = START + intervals * HOUR
    bd = deploy(spark, endpoints, tag, [], model_files={f"{MODEL}.sql": MODEL_FILE.replace("{mode}", "bounds")},
                extra={"CBT__WORKER__INSTANCE_ID": WORKER_NAME})
    try:
        source_rows = write_source(spark, SourceTables(bd.dep.source_db), START, end, clients)
        bd.dep.start("coordinator", "worker")
        bd.wait_ready(1)
        bd.release_bounds(START, end)
        covered(bd, end, 300.0 + 10.0 * intervals)
        bd.dep.stop()
        statements_s = one_statement(spark, bd, end)
        once_s = min(statements_s)

        model_file = Path(str(bd.dep.overrides["CBT__MODELS__TRANSFORMATIONS__PATHS"]).strip("[]")) / f"{MODEL}.sql"
        text = model_file.read_text()
        assert OLD in text, "the model's SELECT changed: update the bench's edit"
        model_file.write_text(text.replace(OLD, NEW))
        load = load_average()
        restarted_ms = time.time() * 1000
        bd.dep.start("coordinator", "worker")
        deadline = time.monotonic() + 300.0 + 10.0 * intervals
        while live_version(bd) != 2:  # (once a second: the bench's own reads must not slow the build it times)
            if time.monotonic() > deadline:
                raise RuntimeError(f"{MODEL}: no switch to version 2 after {300.0 + 10.0 * intervals:.0f}s")
            time.sleep(1.0)
        building_ms, live_ms = recorded_times_ms(bd)
        switch_s = None if live_ms is None else (live_ms - restarted_ms) / 1000
        deployed_s = None if building_ms is None or live_ms is None else round((live_ms - building_ms) / 1000, 2)
        table = bd.model_id(MODEL)
        return {"intervals": intervals, "source_rows": source_rows, "load_at_start": load,
                "worker_instance_id": WORKER_NAME,
                "restart_to_switch_s": None if switch_s is None else round(switch_s, 2),
                "deploy_to_switch_s": deployed_s, "one_statement_s": round(once_s, 2),
                "one_statement_runs_s": [round(t, 2) for t in statements_s],
                "ratio_vs_one_statement": None if deployed_s is None else round(deployed_s / once_s, 2),
                "restart_ratio_vs_one_statement": None if switch_s is None else round(switch_s / once_s, 2),
                "phases": build_phases(bd),
                "differences_vs_one_statement": differences(spark, table, f"{bd.dep.output_db}.once_new"),
                "build_table_left": spark.catalog.tableExists(f"{table}__cbt_v2")}
    finally:
        bd.teardown()
