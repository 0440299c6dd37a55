"""Creates the example pipeline's tables: the DDL files under ``models/ddl`` in name order.

The files name databases with the same placeholders as model dependencies, ``{{external}}`` and
``{{transformation}}``, replaced by the configured default databases — so tests can run the example in
databases of their own.
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession

from cbt.models.sqlsplit import split_sql


def ddl_statements(ddl_dir: Path, external_db: str, transformation_db: str) -> list[str]:
    statements: list[str] = []
    for path in sorted(ddl_dir.glob("*.sql")):
        text = path.read_text().replace("{{external}}", external_db).replace("{{transformation}}", transformation_db)
        statements.extend(split_sql(text))
    return statements


def apply_ddl(spark: SparkSession, ddl_dir: Path, external_db: str, transformation_db: str) -> int:
    """Run every DDL statement; returns how many ran. Idempotent (``IF NOT EXISTS``)."""
    statements = ddl_statements(ddl_dir, external_db, transformation_db)
    for statement in statements:
        spark.sql(statement)
    return len(statements)
