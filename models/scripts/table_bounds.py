"""Bounds command for an external model: prints {"min": ..., "max": ...} in unix seconds (max exclusive).

cbt sets SELF_DATABASE/SELF_TABLE, SPARK_REMOTE and, for an incremental scan, CACHE_IS_INCREMENTAL_SCAN=true with
CACHE_PREVIOUS_MIN/CACHE_PREVIOUS_MAX; TIME_COLUMN (model env) names the timestamp column. An empty table prints
nulls, which cbt reads as "no data".
"""

from __future__ import annotations

import json
import os

from pyspark.sql import SparkSession
from pyspark.sql import functions as F


def main() -> None:
    table = f"`{os.environ['SELF_DATABASE']}`.`{os.environ['SELF_TABLE']}`"
    spark = SparkSession.builder.remote(os.environ["SPARK_REMOTE"]).getOrCreate()
    column = F.col(os.environ.get("TIME_COLUMN", "block_timestamp"))  # after the session: Connect mode
    try:
        frame = spark.table(table)
        if os.environ.get("CACHE_IS_INCREMENTAL_SCAN") == "true":
            previous_min = F.timestamp_seconds(F.lit(int(os.environ["CACHE_PREVIOUS_MIN"])))
            previous_max = F.timestamp_seconds(F.lit(int(os.environ["CACHE_PREVIOUS_MAX"])))
            frame = frame.where((column < previous_min) | (column >= previous_max))
        row = frame.agg(
            F.unix_seconds(F.min(column)).alias("min"),
            (F.unix_seconds(F.max(column)) + F.lit(1)).alias("max"),
        ).first()
    finally:
        spark.stop()
    print(json.dumps({"min": row["min"] if row else None, "max": row["max"] if row else None}))


if __name__ == "__main__":
    main()
