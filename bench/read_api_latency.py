"""Read API latency: p50/p99 of one filtered page of a derived Delta table (docs/read-api.md), read as the api reads
it (delta-rs and DataFusion in-process, ``cbt.api.tables.routes.read_page``), never through Spark.

Under load: start this in one shell and, once it prints "sampling", the mixed pipeline (bench (h)) in another::

    .venv/bin/python -m bench.read_api_latency --duration-s 240
    .venv/bin/python -m bench.run --mixed

Without ``--table`` it writes its own table through Spark Connect first (``--rows`` rows of the shape of
``analytics.block_propagation_minute``, in ``--commits`` commits, like a model's intervals) into a database of its own,
dropped at the end; ``--table db.table`` reads an existing table instead (``--warehouse`` then says where the Spark
warehouse is, default the local stack's ``var/spark/warehouse``). Each sample is one page of ``--page-size`` rows
filtered on two columns and ordered by a third; reported: samples, p50, p99 and max in milliseconds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path

from cbt.api.tables.delta_rows import DeltaRows
from cbt.api.tables.routes import read_page
from cbt.api.tables.row_query import TokenSigner
from cbt.config.settings import TablesApiConfig
from cbt.dev.layout import Layout
from cbt.models.spec import Expose

ROOT = Path(__file__).resolve().parents[1]
SIGNER = TokenSigner(b"bench" * 8, 3600)


def make_table(rows: int, commits: int) -> tuple[str, str]:
    """A table of ``rows`` rows in ``commits`` appends; returns its id and the warehouse it is in."""
    from cbt.adapters.spark import connect

    spark = connect(Layout.from_env().spark_remote)
    database = f"bench_read_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE DATABASE {database}")
    table = f"{database}.blocks"
    spark.sql(f"CREATE TABLE {table} (slot BIGINT, slot_start_date_time TIMESTAMP, block_root STRING, "
              "proposer_index BIGINT, client_count BIGINT, avg_propagation_ms DOUBLE) USING DELTA")
    step = max(1, rows // commits)
    for start in range(0, rows, step):
        spark.sql(f"INSERT INTO {table} SELECT id, timestamp_seconds(1700000000 + id * 12), "
                  "concat('0x', sha2(cast(id AS STRING), 256)), id % 5000, id % 30, (id % 997) * 1.5 "
                  f"FROM range({start}, {min(rows, start + step)})").collect()
    location = spark.sql(f"DESCRIBE DETAIL {table}").collect()[0]["location"]
    return table, str(Path(location.removeprefix("file:")).parents[1])


def drop(table: str) -> None:
    from cbt.adapters.spark import connect

    connect(Layout.from_env().spark_remote).sql(f"DROP DATABASE IF EXISTS {table.split('.')[0]} CASCADE")


def sample(delta: DeltaRows, table: str, page_size: int, rows: int, n: int) -> float:
    """Milliseconds for one page: slot in a moving window, a root prefix, newest first."""
    low = (n * 7919) % max(1, rows - 10_000)
    params = [("slot_gte", str(low)), ("slot_lt", str(low + 10_000)), ("block_root_starts_with", "0x"),
              ("order_by", "slot desc"), ("page_size", str(page_size))]
    started = time.perf_counter()
    page = read_page(delta, SIGNER, table, Expose(("slot",), None), params, page_size, None, None)
    elapsed_ms = (time.perf_counter() - started) * 1000
    assert page["rows"], f"an empty page: {params}"
    return elapsed_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", help="an existing table (db.table); default: write one")
    parser.add_argument("--warehouse", default=str(ROOT / "var" / "spark" / "warehouse"))
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--commits", type=int, default=40)
    parser.add_argument("--page-size", type=int, default=100)
    parser.add_argument("--samples", type=int, default=200, help="at least this many pages")
    parser.add_argument("--duration-s", type=float, default=0, help="and keep sampling this long (under load)")
    args = parser.parse_args()
    table, warehouse = (args.table, args.warehouse) if args.table else make_table(args.rows, args.commits)
    try:
        delta = DeltaRows(TablesApiConfig(warehouse=warehouse, query_timeout_s=60), ROOT)
        times: list[float] = []
        print(f"sampling {table} (at least {args.samples} pages, {args.duration_s:.0f} s)", file=sys.stderr, flush=True)
        until = time.monotonic() + args.duration_s
        while len(times) < args.samples or time.monotonic() < until:
            times.append(sample(delta, table, args.page_size, args.rows, len(times)))
        times.sort()
        p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
        print(f"read API page ({table}, {args.page_size} rows, filtered): samples {len(times)}, "
              f"p50 {statistics.median(times):.1f} ms, p99 {p99:.1f} ms, max {times[-1]:.1f} ms")
    finally:
        if not args.table:
            drop(table)


if __name__ == "__main__":
    main()
