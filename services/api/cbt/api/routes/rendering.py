"""``GET /models/{id}/rendered``: what ``cbt render`` prints and a worker runs, as JSON, with secrets as ``***``
(``cbt.models.render.redact_env``: by name and by value; pure)."""

from __future__ import annotations

from cbt.api.common import check_range
from cbt.api.problems import bad_request
from cbt.api.schemas import Rendered
from cbt.base.errors import CbtError
from cbt.config.settings import Config
from cbt.models.render import (
    command_argv,
    exec_environment,
    external_exec_environment,
    redact_env,
    redact_text,
    render_bounds_query,
    secret_values,
)
from cbt.models.spec import ExternalModel, IncrementalModel, Model
from cbt.models.templates import RenderSettings, ScanContext, TaskContext
from cbt.models.writes import task_statements


def rendered(config: Config, model: Model, start: int | None, end: int | None, now_unix: int) -> Rendered:
    """An incremental model's task over ``[start, end)``, a scheduled model's run now, or an external model's full
    bounds scan; a template that does not render is a 400 with the template's error."""
    settings = RenderSettings.from_config(config)
    try:
        if isinstance(model, ExternalModel):
            return _external(model, settings)
        if isinstance(model, IncrementalModel):
            if start is None or end is None:
                raise bad_request(f"start, end: both are required to render {model.id} (an incremental model)")
            check_range(start, end)
            task = TaskContext(model_id=model.id, task_start_unix=now_unix, start=start, end=end)
        else:
            task = TaskContext(model_id=model.id, task_start_unix=now_unix)
        if model.exec is not None:
            env = redact_env(exec_environment(model, task, settings))
            return Rendered(model=model.id, start=task.start, end=task.end, sql=None,
                            command=command_argv(model), env=env)
        sql = "\n\n".join(s + ";" for s in task_statements(model, task, settings))
        return Rendered(model=model.id, start=task.start, end=task.end, sql=redact_text(sql, _secrets(model, settings)),
                        command=None, env=None)
    except CbtError as e:
        raise bad_request(f"{model.id}: cannot render: {e}") from e


def _external(model: ExternalModel, settings: RenderSettings) -> Rendered:
    scan = ScanContext()
    if model.exec is not None:
        env = redact_env(external_exec_environment(model, scan, settings))
        return Rendered(model=model.id, start=None, end=None, sql=None, command=command_argv(model), env=env)
    sql = "\n\n".join(s + ";" for s in render_bounds_query(model, scan, settings))
    return Rendered(model=model.id, start=None, end=None, sql=redact_text(sql, _secrets(model, settings)),
                    command=None, env=None)


def _secrets(model: Model, settings: RenderSettings) -> set[str]:
    """What a template may have put into the SQL that must not be shown: secret variables' and Spark settings'
    values (``env.DB_PASSWORD``, ``spark.conf['…secret.key']``)."""
    return secret_values({**settings.env, **model.env, **settings.spark_conf})
