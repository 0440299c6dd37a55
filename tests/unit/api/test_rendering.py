"""``GET /models/{id}/rendered`` never shows a secret: not in the exec environment (by name or by value), not where a
template put it into the SQL, not Spark's settings."""

from __future__ import annotations

from dataclasses import replace

from cbt.api.rendering import rendered
from cbt.config.settings import Config
from cbt.models.spec import IncrementalModel
from tests.unit.scheduling.factories import inc

CONFIG = Config.model_validate({
    "models": {"env": {"DB_PASSWORD": "hunter2-long", "NETWORK": "mainnet"}},
    "spark": {"conf": {"spark.hadoop.fs.s3a.secret.key": "s3-secret-value", "spark.sql.shuffle.partitions": "4"}},
})


def model(**changes: object) -> IncrementalModel:
    return replace(inc("an.minute", imax=60), **changes)  # type: ignore[arg-type]


def test_a_secret_a_template_put_into_the_sql_is_shown_as_stars() -> None:
    sql = "SELECT '{{ env.DB_PASSWORD }}' AS p, '{{ env.NETWORK }}' AS n, '{{ env.S3 }}' AS k"
    shown = rendered(CONFIG, model(sql=sql, env={"S3": "s3-secret-value"}), 0, 60, 1_700_000_000)
    assert shown.sql is not None and "SELECT '***' AS p, 'mainnet' AS n, '***' AS k" in shown.sql
    assert "hunter2" not in shown.sql and "s3-secret" not in shown.sql


def test_an_exec_models_environment_hides_secrets_by_name_and_by_value_and_spark_settings() -> None:
    shown = rendered(CONFIG, model(sql=None, exec="python3 x.py", env={"DSN": "pg://app:hunter2-long@db/x"}), 0, 60,
                     1_700_000_000)
    assert shown.env is not None
    assert (shown.env["DB_PASSWORD"], shown.env["DSN"], shown.env["SPARK_CONF_JSON"]) == (
        "***", "pg://app:***@db/x", "***")
    assert shown.env["NETWORK"] == "mainnet"
