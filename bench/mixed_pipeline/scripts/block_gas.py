"""Exec model ``block_gas`` of bench (h): per-block gas and value totals of ``tx_dedup`` for one task's range.

cbt runs it once per task with BOUNDS_START/BOUNDS_END (unix seconds, end exclusive), SELF_*, DEP_* and
SPARK_REMOTE. One ``REPLACE WHERE`` over exactly the range: a re-run leaves the table as one run would.
"""

from __future__ import annotations

import os

from pyspark.sql import SparkSession


def quoted(database: str, table: str) -> str:
    return f"`{database.replace('`', '``')}`.`{table.replace('`', '``')}`"


def dependency(table: str) -> str:
    suffix = f"_{table.upper()}_DATABASE"
    (key,) = [k for k in os.environ if k.startswith("DEP_") and k.endswith(suffix)]
    return quoted(os.environ[key], os.environ[key.removesuffix("_DATABASE") + "_TABLE"])


def main() -> None:
    start, end = int(os.environ["BOUNDS_START"]), int(os.environ["BOUNDS_END"])
    target = quoted(os.environ["SELF_DATABASE"], os.environ["SELF_TABLE"])
    in_range = f"block_timestamp >= timestamp_seconds({start}) AND block_timestamp < timestamp_seconds({end})"
    spark = SparkSession.builder.remote(os.environ["SPARK_REMOTE"]).getOrCreate()
    try:
        spark.sql(
            f"INSERT INTO {target} REPLACE WHERE {in_range} "
            f"SELECT block_number, block_timestamp, count(*) AS tx_count, sum(gas_used) AS total_gas_used, "
            f"CAST(sum(value_wei) AS DECIMAL(38, 0)) AS total_value_wei "
            f"FROM {dependency('tx_dedup')} WHERE {in_range} GROUP BY block_number, block_timestamp"
        ).collect()
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
