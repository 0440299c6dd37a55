"""The worker's shared session is warmed by a write into the admin database that leaves nothing behind."""

from __future__ import annotations

from pyspark.sql import SparkSession

from cbt.adapters.spark import SessionPool, delta_write_warm_up
from tests.conftest import Endpoints


def test_the_warm_up_writes_then_drops_its_table_and_the_session_is_used_after_it(
        endpoints: Endpoints, spark: SparkSession, spark_database: str) -> None:
    pool = SessionPool(endpoints.spark_remote)
    try:
        ran: list[SparkSession] = []

        def warm(session: SparkSession) -> None:
            delta_write_warm_up(spark_database)(session)  # raises if any of its statements fails
            ran.append(session)

        pool.warm("shared", warm).join(120)
        assert ran == [pool.session("shared")]
        assert pool.session("shared").sql("SELECT 41 + 1 AS n").collect()[0]["n"] == 42
        tables = [row["tableName"] for row in spark.sql(f"SHOW TABLES IN {spark_database}").collect()]
        assert not [name for name in tables if name.startswith("cbt_warm_up_")]
    finally:
        pool.close()
