"""``GET /models/{id}/rendered`` never shows a secret: not in the exec environment (by name or by value), not where a
template put it into the SQL, not Spark's settings."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import replace
from typing import Any

import pytest

from cbt.api.routes.rendering import rendered
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


def test_rendering_runs_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """A template's work (bounded, but seconds on a big one) must not hold every other request: while one rendering
    is held, a health check is answered."""
    from cbt.api.context import ApiContext
    from cbt.api.events import EventHub
    from cbt.api.offline import Offline
    from cbt.api.routes import models as routes_models
    from cbt.api.web import create_app
    from cbt.models.dag import ModelSet
    from tests.unit.api.asgi import request

    held, release = threading.Event(), threading.Event()

    def slow_rendered(*args: Any) -> Any:
        held.set()
        release.wait(5)  # (on the event loop, this held every request for 5 s)
        return rendered(*args)

    monkeypatch.setattr(routes_models, "rendered", slow_rendered)
    minute = model(sql="SELECT {{ bounds.start }} AS s")
    app = create_app(ApiContext(config=CONFIG, models=ModelSet({minute.id: minute}), hot=Offline(),
                                refresh=Offline(), admin=Offline(), commands=Offline(), events=EventHub()))

    async def scenario() -> tuple[int, bool, int]:
        rendering = asyncio.create_task(request(app, "GET", f"/api/v1/models/{minute.id}/rendered?start=0&end=60"))
        while not held.is_set():
            await asyncio.sleep(0.01)
        health = await asyncio.wait_for(request(app, "GET", "/api/v1/openapi.json"), timeout=5)
        answered_while_rendering = not rendering.done()
        release.set()
        return health.status, answered_while_rendering, (await rendering).status

    assert asyncio.run(scenario()) == (200, True, 200)
