"""(i) The coordinator's first rebuild of the hot index from the admin tables: small, and at 1,000,000 rows.

What a start costs before anything is planned (Redis emptied, or a new Redis): open the admin tables, which exist
already (a restart; with ``spark.warehouse`` set, a look at their files, else ``CREATE TABLE IF NOT EXISTS`` through
Spark for each), and read each model's coverage, invalidation sequence, invalidated ranges and last scheduled run,
then write them to Redis. Reported per size: the seconds to open the tables and the
seconds ``hot_index.rebuild`` takes, with the ranges it wrote. The admin rows are written straight into the Delta
table (what a long-running pipeline leaves before consolidation), in models of ``rows / models`` tasks each with a
gap every ``GAP_EVERY`` tasks, so the merged coverage is not one range per model.
"""

from __future__ import annotations

import os
import time
import uuid
from typing import Any

from pyspark.sql import SparkSession
from redis import Redis

from bench.report import load_average
from bench.stack import Endpoints
from cbt.adapters.delta_admin import admin_from_config
from cbt.adapters.redis_state import RedisState
from cbt.config.settings import admin_database_overrides, load_config
from cbt.planning import hot_index
from tests.e2e.harness import CONFIG

MODELS = 100
STEP = 60
GAP_EVERY = 1000
"""Every this many tasks of a model, one is missing: coverage of ``rows / models / GAP_EVERY`` ranges per model."""
VERSION = "0123456789ab"
"""The model version every row says computed it (each completion carries one): the rebuild writes them too."""


SIZES = (0, 1_000, 1_000_000)


def benchmark(spark: SparkSession, endpoints: Endpoints, sizes: tuple[int, ...] = SIZES) -> dict[str, Any]:
    return {"load_average_at_start": load_average(),
            "sizes": {str(rows): _one(spark, endpoints, rows) for rows in sizes},
            "load_average_at_end": load_average()}


def _one(spark: SparkSession, endpoints: Endpoints, rows: int) -> dict[str, Any]:
    tag = f"bnrb{uuid.uuid4().hex[:6]}"
    config = load_config(CONFIG, environ={**os.environ, **admin_database_overrides(f"{tag}_admin"),
                                          "CBT__SPARK__REMOTE": endpoints.spark_remote})
    redis = Redis.from_url(endpoints.redis_url)
    state = RedisState(redis, f"{tag}:")
    try:
        installed = admin_from_config(spark, config)
        installed.ensure_tables()  # the installation: a restart finds the tables there
        installed.wait_registered()  # (created as files; the fill below writes through Spark SQL, by name)
        if rows:
            _fill(spark, f"`{tag}_admin`.`{config.admin.incremental.table}`", rows)
        began = time.monotonic()  # a coordinator starting: it opens the tables, then rebuilds the hot index
        admin = admin_from_config(spark, config)
        admin.ensure_tables()
        open_s = time.monotonic() - began
        model_ids = [f"bench.m{i}" for i in range(MODELS)]
        began = time.monotonic()
        counts = hot_index.rebuild(admin, state.coverage, model_ids, (), int(time.time()))
        rebuild_s = time.monotonic() - began
        return {"admin_rows": rows, "models": MODELS, "open_tables_s": round(open_s, 2),
                "rebuild_s": round(rebuild_s, 2), "ranges_written": sum(counts.values())}
    finally:
        keys = list(redis.scan_iter(match=f"{tag}:*"))
        if keys:
            redis.delete(*keys)
        spark.sql(f"DROP DATABASE IF EXISTS `{tag}_admin` CASCADE").collect()


def _fill(spark: SparkSession, table: str, rows: int) -> None:
    per_model = max(1, rows // MODELS)
    spark.sql(f"""INSERT INTO {table}
SELECT current_timestamp(), 'bench', concat('m', CAST(id % {MODELS} AS STRING)),
       (id DIV {MODELS}) * {STEP}, {STEP}, concat('bench.m', CAST(id % {MODELS} AS STRING), ':', CAST((id DIV {MODELS})
       * {STEP} AS STRING), ':{STEP}'), 'forward', 0, 'bench', 1, {STEP}, '{VERSION}'
FROM range(0, {per_model * MODELS}) WHERE (id DIV {MODELS}) % {GAP_EVERY} != {GAP_EVERY - 1}""").collect()
