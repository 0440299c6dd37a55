"""Bounds from the Delta log (cbt.adapters.delta_log_bounds) equal what the bounds query computes, and refuse when the
log cannot prove them: on tables written by delta-rs here, and — on the stack — by Spark, against Spark's own answer."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa  # type: ignore[import-untyped]
import pytest
from deltalake import write_deltalake
from pyspark.sql import SparkSession

from cbt.adapters.delta_log_bounds import DeltaLogBounds, NotExact
from cbt.models.log_bounds import Bound, LogBoundsPlan, log_bounds_plan
from cbt.models.spec import ExternalModel, SourceRef
from cbt.scheduling.scanning import ScanResult
from tests.integration.test_delta_admin import warehouse_of

SECONDS = LogBoundsPlan("t", Bound("min", "unix_seconds", 0), Bound("max", "unix_seconds", 1))
NUMBERS = LogBoundsPlan("n", Bound("min", "none", 0), Bound("max", "none", 1))


def external(database: str, table: str) -> ExternalModel:
    return ExternalModel(database, table, "timestamp", SourceRef("x.sql", 1, 1))


def ts(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


def write(folder: Path, rows: list[dict[str, object]]) -> None:
    schema = pa.schema([("t", pa.timestamp("us", tz="UTC")), ("n", pa.int64()), ("s", pa.string())])
    write_deltalake(str(folder / "src.db" / "blocks"), pa.Table.from_pylist(rows, schema=schema), mode="append")


def test_min_and_max_over_every_commit_with_conversion_and_offset(tmp_path: Path) -> None:
    write(tmp_path, [{"t": ts(1_700_000_012.5), "n": 7, "s": "a"}, {"t": ts(1_700_000_100), "n": 3, "s": "b"}])
    reader = DeltaLogBounds(str(tmp_path), {})
    model = external("src", "blocks")
    assert reader.bounds(model, SECONDS) == ScanResult(1_700_000_012, 1_700_000_101)
    assert reader.bounds(model, NUMBERS) == ScanResult(3, 8)

    write(tmp_path, [{"t": ts(1_699_999_000), "n": None, "s": None}, {"t": ts(1_700_000_500.25), "n": 40, "s": "c"}])

    assert reader.bounds(model, SECONDS) == ScanResult(1_699_999_000, 1_700_000_501), "only the new commit read"
    assert reader.bounds(model, NUMBERS) == ScanResult(3, 41)


def test_files_of_nulls_only_are_skipped_and_an_empty_table_has_no_bounds(tmp_path: Path) -> None:
    write(tmp_path, [{"t": None, "n": None, "s": None}])
    assert DeltaLogBounds(str(tmp_path), {}).bounds(external("src", "blocks"), NUMBERS) == ScanResult(None, None)


def test_what_the_log_cannot_prove_is_refused(tmp_path: Path) -> None:
    write(tmp_path, [{"t": ts(1_700_000_000), "n": 1, "s": "a"}])
    reader = DeltaLogBounds(str(tmp_path), {})
    with pytest.raises(NotExact, match="no Delta table"):
        reader.bounds(external("src", "missing"), NUMBERS)
    with pytest.raises(NotExact, match="no statistics on nope"):
        reader.bounds(external("src", "blocks"), LogBoundsPlan("nope", NUMBERS.low, NUMBERS.high))
    with pytest.raises(NotExact, match="not a position"):
        reader.bounds(external("src", "blocks"), LogBoundsPlan("t", NUMBERS.low, NUMBERS.high))


@pytest.mark.integration
def test_the_log_gives_what_spark_computes_on_a_table_spark_wrote(spark: SparkSession, spark_database: str) -> None:
    table = f"{spark_database}.blocks"
    spark.sql(f"CREATE TABLE {table} (slot BIGINT, slot_start_date_time TIMESTAMP) USING DELTA")
    spark.sql(f"INSERT INTO {table} SELECT id, timestamp_seconds(1700000000 + id * 12) FROM range(0, 500)")
    spark.sql(f"INSERT INTO {table} SELECT id, timestamp_seconds(1600000000 + id) FROM range(1000, 1010)")
    spark.sql(f"DELETE FROM {table} WHERE slot = 499")  # (rewrites the file, or marks it: either way exact or refused)
    query = (f"SELECT unix_seconds(min(slot_start_date_time)) AS min, unix_seconds(max(slot_start_date_time)) + 1 "
             f"AS max FROM {table}")
    plan = log_bounds_plan([query], spark_database, "blocks")
    assert isinstance(plan, LogBoundsPlan)
    expected = spark.sql(query).collect()[0]

    try:
        found = DeltaLogBounds(warehouse_of(spark, spark_database), {}).bounds(external(spark_database, "blocks"), plan)
    except NotExact as e:
        assert "deletion vectors" in str(e)
        return
    assert found == ScanResult(expected["min"], expected["max"])
