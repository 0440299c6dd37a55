"""How fast the compose stack catches up the example backlog with 1, 2, 3… worker containers.

    .venv/bin/python -m tests.containers.throughput [--workers 1 2 3] [--backlog-s 900]

For each count, a fresh compose project: the infrastructure, the tables and ``--backlog-s`` seconds of source rows,
then the coordinator, bounds-cache and invalidator (which plan the backlog), then ``--scale worker=N``. Measured
from starting the workers until every model has covered the backlog (the e2e harness's quiet check), plus the
positions covered per second summed over the incremental models; the tables are checked against the independent
oracle (SQL written in the test, over the range the sources imply). Prints a table and writes
var/reports/compose-throughput.json. Needs the images (`make images`) and a Docker engine.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Sequence

from redis import Redis

from cbt.adapters.spark import connect
from cbt.config.settings import admin_database_overrides
from tests.containers.compose import INFRA, ROOT, ComposeStack
from tests.e2e.harness import T0, Deployment
from tests.e2e.oracle import IndependentOracle

PLANNERS = ("coordinator", "bounds-cache", "invalidator")


def run_once(workers: int, backlog_s: int) -> dict[str, float]:
    stack = ComposeStack(ROOT / "var" / "containers-logs")
    try:
        stack.up(*INFRA)
        stack.wait_healthy(INFRA)
        spark = connect(stack.spark_remote)
        overrides = {"CBT__KAFKA__BOOTSTRAP_SERVERS": stack.kafka_bootstrap, "CBT__REDIS__URL": stack.redis_url,
                     "CBT__KAFKA__CLIENT": json.dumps(stack.kafka_client), "CBT__SPARK__REMOTE": stack.spark_remote,
                     "CBT__SPARK__WAREHOUSE": "",  # (the host reads the record through Spark)
                     "CBT__MODELS__EXTERNAL__DEFAULT_DATABASE": "ethereum",
                     "CBT__MODELS__TRANSFORMATIONS__DEFAULT_DATABASE": "analytics", **admin_database_overrides("admin")}
        dep = Deployment(spark, Redis.from_url(stack.redis_url), overrides, stack.log_dir / stack.project)
        dep.create_tables()
        dep.write_entities()
        dep.write_sources(T0, T0 + backlog_s)
        stack.up(*PLANNERS)
        stack.wait_healthy(PLANNERS)
        started = time.monotonic()
        stack.up("worker", scale_workers=workers)
        while not dep.is_quiet(T0 + backlog_s - 11):
            assert not stack.exited(), f"containers exited: {stack.exited()}"
            assert time.monotonic() - started < 1800, "no catch-up within 30 minutes"
            time.sleep(0.5)
        seconds = time.monotonic() - started
        positions = sum(end - start for m in dep.healthy_incrementals() for start, end in dep.coverage(m.id))
        oracle = IndependentOracle(spark, dep.source_db, dep.output_db)
        verdict = oracle.verdict({m.table: dep.coverage(m.id) for m in dep.healthy_incrementals()})
        same = verdict["holds"]
        spark.stop()
        return {"workers": workers, "catch_up_s": round(seconds, 1), "positions_per_s": round(positions / seconds, 1),
                "equals_oracle": same, "load_average_1m": os.getloadavg()[0]}
    finally:
        stack.down()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.containers.throughput", description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--backlog-s", type=int, default=900, help="seconds of source rows (the demo's: 900)")
    args = parser.parse_args(argv)
    results = []
    for count in args.workers:
        results.append(run_once(count, args.backlog_s))
        print(json.dumps(results[-1]), flush=True)
    report = ROOT / "var" / "reports" / "compose-throughput.json"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(json.dumps({"cores": os.cpu_count(), "backlog_s": args.backlog_s, "runs": results}, indent=2))
    print(f"{'workers':>7} {'catch-up s':>10} {'positions/s':>11} {'oracle':>6} {'load':>5}")
    for r in results:
        print(f"{r['workers']:>7} {r['catch_up_s']:>10} {r['positions_per_s']:>11} {r['equals_oracle']!s:>6} "
              f"{r['load_average_1m']:>5.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
