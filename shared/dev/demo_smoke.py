"""A smoke pipeline on the local stack: a source and a derived Delta table, processed interval by interval.

It shows the parts the product is built on working together: a Spark Connect client session, Delta tables in
the shared catalog, and an idempotent per-interval write (``INSERT INTO … REPLACE WHERE``) that can be re-run.
"""

from __future__ import annotations

import sys
import time

from cbt.adapters.spark import connect
from cbt.dev import stack
from cbt.dev.layout import Layout

DATABASE = "cbt_demo_smoke"
INTERVAL_S = 60
START = 1_700_000_000


def main() -> int:
    for line in stack.up():
        print(line.line())
    spark = connect(Layout.from_env().spark_remote)
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {DATABASE}")
    spark.sql(f"CREATE TABLE IF NOT EXISTS {DATABASE}.blocks (slot_time BIGINT, txs BIGINT) USING DELTA")
    spark.sql(f"CREATE TABLE IF NOT EXISTS {DATABASE}.txs_per_minute "
              "(minute_start BIGINT, blocks BIGINT, txs BIGINT) USING DELTA")
    spark.sql(f"INSERT INTO {DATABASE}.blocks REPLACE WHERE slot_time >= {START} AND slot_time < {START + 300} "
              f"SELECT id AS slot_time, (id * 7) % 13 AS txs FROM range({START}, {START + 300}, 12)")
    for position in range(START, START + 3 * INTERVAL_S, INTERVAL_S):
        t0 = time.monotonic()
        for _ in range(2):  # the second run of the same interval must change nothing
            spark.sql(
                f"INSERT INTO {DATABASE}.txs_per_minute "
                f"REPLACE WHERE minute_start >= {position} AND minute_start < {position + INTERVAL_S} "
                f"SELECT {position} AS minute_start, count(*) AS blocks, sum(txs) AS txs FROM {DATABASE}.blocks "
                f"WHERE slot_time >= {position} AND slot_time < {position + INTERVAL_S}"
            )
        print(f"interval [{position}, {position + INTERVAL_S}) written twice in {time.monotonic() - t0:.2f}s")
    print(f"\n{DATABASE}.txs_per_minute (Delta, via Spark Connect):")
    spark.sql(f"SELECT * FROM {DATABASE}.txs_per_minute ORDER BY minute_start").show()
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
