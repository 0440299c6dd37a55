"""Exec model analytics.block_gas: per-block gas and value totals for one task's range, over Spark Connect.

cbt runs this once per task with the interval in BOUNDS_START/BOUNDS_END (unix seconds, end exclusive) and the
Spark Connect URL in SPARK_REMOTE. The write replaces exactly the interval's rows in one Delta commit, so a re-run
of the same interval leaves the table as one run would.
"""

from __future__ import annotations

import os

from pyspark.sql import SparkSession
from pyspark.sql import functions as F


def quoted(database: str, table: str) -> str:
    return f"`{database.replace('`', '``')}`.`{table.replace('`', '``')}`"


def dependency(table: str) -> str:
    """The dependency named ``table``, whatever database it resolved to (DEP_<DB>_<TABLE>_DATABASE/_TABLE)."""
    suffix = f"_{table.upper()}_DATABASE"
    (key,) = [k for k in os.environ if k.startswith("DEP_") and k.endswith(suffix)]
    return quoted(os.environ[key], os.environ[key.removesuffix("_DATABASE") + "_TABLE"])


def main() -> None:
    start = int(os.environ["BOUNDS_START"])
    end = int(os.environ["BOUNDS_END"])
    source = dependency("transactions")
    target = quoted(os.environ["SELF_DATABASE"], os.environ["SELF_TABLE"])
    spark = SparkSession.builder.remote(os.environ["SPARK_REMOTE"]).getOrCreate()
    try:
        in_interval = (F.col("block_timestamp") >= F.timestamp_seconds(F.lit(start))) & (
            F.col("block_timestamp") < F.timestamp_seconds(F.lit(end))
        )
        per_block = (
            spark.table(source)
            .where(in_interval)
            .groupBy("block_number", "block_timestamp")
            .agg(
                F.count(F.lit(1)).alias("tx_count"),
                F.sum("gas_used").alias("total_gas_used"),
                F.sum("value_wei").cast("decimal(38,0)").alias("total_value_wei"),
            )
        )
        view = f"{os.environ.get('TEMP_VIEW_PREFIX', 'block_gas')}_{start}_{end}"
        per_block.createOrReplaceTempView(view)
        spark.sql(
            f"INSERT INTO {target} "
            f"REPLACE WHERE block_timestamp >= timestamp_seconds({start}) "
            f"AND block_timestamp < timestamp_seconds({end}) "
            f"SELECT block_number, block_timestamp, tx_count, total_gas_used, total_value_wei FROM {view}"
        )
        spark.catalog.dropTempView(view)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
