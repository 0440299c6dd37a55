"""CBT's way of running commands, expressible per model (docs/design/models.md#exec-models): ``exec.shell`` runs the
command through ``sh -c``, ``exec.inherit_env`` passes the service's environment; the short form keeps the safer
defaults. And ``fill.allow_gap_skipping`` defaults to CBT's value."""

from __future__ import annotations

import pytest

from cbt.models.render import NotRenderable, command_argv
from cbt.models.spec import ExecOptions, IncrementalModel, ScheduledModel
from tests.unit.models.conftest import Project, make_incremental


def _only(project: Project, model_id: str) -> IncrementalModel | ScheduledModel:
    model = project.load().models[model_id]
    assert isinstance(model, IncrementalModel | ScheduledModel)
    return model


def test_the_short_form_runs_without_a_shell_and_without_the_services_environment(project_with_blocks: Project) -> None:
    project_with_blocks.file(
        "models/transformations/job.yml",
        "type: scheduled\ntable: job\nschedule: '@hourly'\nexec: python3 job.py --flag 'a b'\n",
    )
    model = _only(project_with_blocks, "analytics.job")
    assert model.exec_options == ExecOptions(shell=False, inherit_env=False)
    assert command_argv(model) == ["python3", "job.py", "--flag", "a b"]


def test_the_long_form_runs_through_sh_and_passes_the_environment(project_with_blocks: Project) -> None:
    project_with_blocks.file(
        "models/transformations/job.yml",
        """\
        type: scheduled
        table: job
        schedule: '@hourly'
        exec:
          command: python3 job.py | tee out.log && echo "$TASK_ID"
          shell: true
          inherit_env: true
        """,
    )
    model = _only(project_with_blocks, "analytics.job")
    assert model.exec == 'python3 job.py | tee out.log && echo "$TASK_ID"'
    assert model.exec_options == ExecOptions(shell=True, inherit_env=True)
    assert command_argv(model) == ["sh", "-c", 'python3 job.py | tee out.log && echo "$TASK_ID"']


@pytest.mark.parametrize(
    ("exec_text", "expected"),
    [
        pytest.param("{command: x, shel: true}", "exec.shel: unknown field", id="unknown-key"),
        pytest.param("{shell: true}", "exec.command: required field is missing", id="no-command"),
        pytest.param("{command: x, shell: 'yes'}", "exec.shell: expected a valid boolean", id="not-a-boolean"),
        pytest.param("{command: '  '}", "exec.command: must not be empty", id="empty-command"),
    ],
)
def test_a_bad_long_form_is_reported_at_its_key(project_with_blocks: Project, exec_text: str, expected: str) -> None:
    project_with_blocks.file(
        "models/transformations/job.yml", f"type: scheduled\ntable: job\nschedule: '@hourly'\nexec: {exec_text}\n"
    )
    problems = project_with_blocks.problems()
    assert any(expected in p and p.startswith("models/transformations/job.yml:4:") for p in problems), problems


def test_a_sql_model_has_no_command(project_with_blocks: Project) -> None:
    project_with_blocks.incremental()
    with pytest.raises(NotRenderable, match="is a SQL model"):
        command_argv(_only(project_with_blocks, "analytics.hourly"))


def test_gap_skipping_is_on_unless_turned_off_as_in_cbt(project_with_blocks: Project) -> None:
    project_with_blocks.incremental("skips")
    project_with_blocks.sql_model(
        "models/transformations/waits.sql", make_incremental("waits", fill={"allow_gap_skipping": False})
    )
    skips, waits = _only(project_with_blocks, "analytics.skips"), _only(project_with_blocks, "analytics.waits")
    assert isinstance(skips, IncrementalModel) and isinstance(waits, IncrementalModel)
    assert skips.fill.allow_gap_skipping is True
    assert waits.fill.allow_gap_skipping is False


def test_inherit_env_may_list_the_names_a_command_needs(project_with_blocks: Project) -> None:
    project_with_blocks.file(
        "models/transformations/job.yml",
        """\
        type: scheduled
        table: job
        schedule: '@hourly'
        exec:
          command: python3 job.py
          inherit_env: [CBT_WAREHOUSE_TOKEN, AWS_PROFILE]
        """,
    )
    model = _only(project_with_blocks, "analytics.job")
    assert model.exec_options == ExecOptions(shell=False, inherit_env=("CBT_WAREHOUSE_TOKEN", "AWS_PROFILE"))
