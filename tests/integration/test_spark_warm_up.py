"""The worker's spare sessions are warmed by a write into the admin database that leaves nothing behind."""

from __future__ import annotations

import time

from pyspark.sql import SparkSession

from cbt.adapters.spark import SessionPool, delta_write_warm_up
from tests.conftest import Endpoints


def tables(spark: SparkSession, database: str) -> list[str]:
    return [row["tableName"] for row in spark.sql(f"SHOW TABLES IN {database}").collect()]


def test_a_warmed_spare_is_handed_to_the_first_model_and_its_scratch_table_is_dropped(
        endpoints: Endpoints, spark: SparkSession, spark_database: str) -> None:
    warmed: list[SparkSession] = []

    def warm(session: SparkSession) -> None:
        delta_write_warm_up(spark_database)(session)  # raises if any of its statements fails
        warmed.append(session)

    pool = SessionPool(endpoints.spark_remote, warm=warm, spares=1)
    try:
        pool.start_warming()
        deadline = time.monotonic() + 120
        while pool.spares_warming():
            assert time.monotonic() < deadline, "the spare session did not warm"
            time.sleep(0.1)
        session = pool.session("a.model")
        assert warmed and session is warmed[0]
        assert session.sql("SELECT 41 + 1 AS n").collect()[0]["n"] == 42
        assert not [name for name in tables(spark, spark_database) if name.startswith("cbt_warm_up_")]
    finally:
        pool.close()
