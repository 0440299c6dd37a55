"""Template variables (docs/design/models.md#templates), undefined variables as located errors, and what render/exec
produce."""

from __future__ import annotations

import pytest
from conftest import Project

from cbt.models.render import (
    NotRenderable,
    env_key,
    exec_argv,
    exec_environment,
    external_exec_environment,
    redact_env,
    redact_text,
    render_bounds_query,
    render_replace_where,
    render_statements,
    secret_values,
)
from cbt.models.spec import (
    ExternalModel,
    IncrementalModel,
    Interval,
    ScheduledModel,
    Schedules,
    SourceRef,
    Write,
)
from cbt.models.templates import RenderSettings, ScanContext, TaskContext, TemplateRenderError, quote_id

SETTINGS = RenderSettings(
    env={"NETWORK": "main", "SHARED": "global"},
    spark_remote="sc://spark:15002",
    spark_conf={"spark.sql.shuffle.partitions": "4"},
    external_database="ethereum",
    transformation_database="analytics",
)
TASK = TaskContext("analytics.hourly", task_start_unix=1_700_000_500, start=1000, end=1100, attempt=2)


def incremental(sql: str | None = "SELECT 1", **kwargs: object) -> IncrementalModel:
    fields: dict[str, object] = {
        "database": "analytics",
        "table": "hourly",
        "interval": Interval(100, 0, "slot"),
        "schedules": Schedules("@every 1m"),
        "source": SourceRef("m/hourly.sql", 3, 10),
        "dependencies": ("ethereum.blocks", ("ethereum.a-b", "analytics.other")),
        "tags": ("t1",),
        "env": {"SHARED": "model", "OWN": "x"},
        "sql": sql,
    }
    fields.update(kwargs)
    return IncrementalModel(**fields)  # type: ignore[arg-type]


VARIABLE_CASES = [
    pytest.param("{{ self.database }}.{{ self.table }} {{ self.id }}", "analytics.hourly analytics.hourly", id="self"),
    pytest.param(
        "{{ self.type }} {{ self.interval }} {{ self.tags | join(',') }} {{ self.from }}",
        "incremental 100 t1 `analytics`.`hourly`",
        id="self-more",
    ),
    pytest.param("{{ bounds.start }}-{{ bounds.end }}", "1000-1100", id="bounds"),
    pytest.param(
        "{{ task.id }} {{ task.start }} {{ task.direction }} {{ task.attempt }}",
        "analytics.hourly:1000:100 1700000500 forward 2",
        id="task",
    ),
    pytest.param("{{ dep['ethereum']['blocks'].from }}", "`ethereum`.`blocks`", id="dep-by-key"),
    pytest.param("{{ dep.ethereum.blocks.table }}", "blocks", id="dep-by-attribute"),
    pytest.param("{{ dep['{{external}}'].blocks.database }}", "ethereum", id="dep-external-placeholder"),
    pytest.param(
        "{{ dep['{{transformation}}'].other.helpers.from }}", "`analytics`.`other`", id="dep-transformation-placeholder"
    ),
    pytest.param("{{ dep.ethereum['a-b'].from }}", "`ethereum`.`a-b`", id="dep-or-group-member"),
    pytest.param(
        "{{ ref('ethereum.blocks') }} {{ ref('{{transformation}}.x') }}",
        "`ethereum`.`blocks` `analytics`.`x`",
        id="ref",
    ),
    pytest.param("{{ env.NETWORK }} {{ env.SHARED }} {{ env.OWN }}", "main model x", id="env-model-wins"),
    pytest.param(
        "{{ spark.remote }} {{ spark.conf['spark.sql.shuffle.partitions'] }}", "sc://spark:15002 4", id="spark"
    ),
]


@pytest.mark.parametrize(("template", "expected"), VARIABLE_CASES)
def test_variables(template: str, expected: str) -> None:
    assert render_statements(incremental(template), TASK, SETTINGS) == [expected]


UNDEFINED_CASES = [
    pytest.param("SELECT {{ nope }}", "m/hourly.sql:10: sql: 'nope' is undefined", id="top-level"),
    pytest.param(
        "SELECT 1\nFROM x\nWHERE {{ bounds.strat }}",
        "m/hourly.sql:12: sql: 'bounds.strat' is undefined",
        id="attribute-with-line",
    ),
    pytest.param("{{ env.MISSING }}", "m/hourly.sql:10: sql: 'env.MISSING' is undefined", id="env"),
    pytest.param("{{ dep.ethereum.nope.from }}", "'dep[\"ethereum\"].nope' is undefined", id="dep-table"),
    pytest.param("{{ ref('justtable') }}", "ref() expects 'database.table', got 'justtable'", id="ref-bad"),
    pytest.param("{{ 1 / 0 }}", "m/hourly.sql:10: sql: ZeroDivisionError", id="python-error"),
    pytest.param("{% if %}", "m/hourly.sql:10: sql: template syntax error", id="syntax"),
    pytest.param("SELECT 'open", "m/hourly.sql:10: sql: rendered SQL: line 1: unterminated string", id="split"),
]


@pytest.mark.parametrize(("template", "expected"), UNDEFINED_CASES)
def test_render_errors_name_file_line_and_variable(template: str, expected: str) -> None:
    with pytest.raises(TemplateRenderError) as info:
        render_statements(incremental(template), TASK, SETTINGS)
    assert expected in str(info.value)


ESCAPES = [
    pytest.param("{{ ''.__class__.__mro__[1].__subclasses__() }}", id="object-subclasses"),
    pytest.param("{{ ref.__globals__['os'].getcwd() }}", id="function-globals"),
    pytest.param("{{ cycler.__init__.__globals__.os.environ }}", id="jinja-global-globals"),
    pytest.param("{{ self.__class__.__init__.__globals__ }}", id="variable-globals"),
    pytest.param("{% set f = ''.format %}{{ f.__self__.__class__.__base__ }}", id="bound-method-self"),
]


COSTLY = [
    pytest.param("{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}",
                 "range() calls produce more than 100,000 items", id="nested-range"),
    pytest.param("{{ 'x' * 999999999 }}", "'*' would build a value", id="string-repetition"),
    pytest.param("{% for i in [1] * 999999999 %}{% endfor %}", "'*' would build a value", id="list-repetition"),
    pytest.param("{{ 10 ** 999999999 }}", "'**' would build a number", id="power"),
    pytest.param("{% for i in range(99999) %}{{ 'SELECT 1 UNION ALL ' * 5 }}{% endfor %}SELECT 1",
                 "the rendered SQL passes 4,000,000 characters", id="huge-output"),
    pytest.param("{{ lipsum(99999) }}", "'lipsum' is undefined", id="lipsum"),
]


@pytest.mark.timeout(10)
@pytest.mark.parametrize(("template", "reason"), COSTLY)
def test_a_template_cannot_ask_for_unbounded_work(template: str, reason: str) -> None:
    """A template renders in the api's process too: nested loops, repetition and powers are bounded, so one model
    cannot freeze the process (before, nested range(99999) ran for hours)."""
    with pytest.raises(TemplateRenderError) as info:
        render_statements(incremental(template), TASK, SETTINGS)
    assert "m/hourly.sql:10: sql:" in str(info.value) and reason in str(info.value)


def test_loops_within_the_budget_render_and_each_rendering_has_its_own_budget() -> None:
    template = "SELECT {% for i in range(60000) %}{% endfor %}{{ range(3) | list | length }} AS n"
    for _ in range(3):
        assert render_statements(incremental(template), TASK, SETTINGS) == ["SELECT 3 AS n"]


@pytest.mark.parametrize("template", ESCAPES)
def test_a_template_cannot_reach_python_outside_its_variables(template: str) -> None:
    """A model's author writes SQL, not Python: templates render in Jinja's sandbox, so the api process that renders
    them (and holds the tokens) gives a template its documented variables only."""
    with pytest.raises(TemplateRenderError) as info:
        render_statements(incremental(template), TASK, SETTINGS)
    assert "m/hourly.sql:10: sql:" in str(info.value)


def test_scheduled_models_have_no_bounds() -> None:
    model = ScheduledModel("ref", "rates", "@hourly", SourceRef("r.sql", 2, 5), sql="{{ bounds.start }}")
    with pytest.raises(TemplateRenderError, match="'bounds' is undefined"):
        render_statements(model, TaskContext("ref.rates", 3600), SETTINGS)
    model = ScheduledModel("ref", "rates", "@hourly", SourceRef("r.sql", 2, 5), sql="SELECT {{ task.id }}")
    assert render_statements(model, TaskContext("ref.rates", 3600), SETTINGS) == ["SELECT ref.rates:@3600"]


@pytest.mark.parametrize(
    ("scan", "expected"),
    [
        pytest.param(ScanContext(), "full None None", id="full-scan"),
        pytest.param(ScanContext(True, 10, 20), "incremental 10 20", id="incremental-scan"),
    ],
)
def test_external_cache_variables(scan: ScanContext, expected: str) -> None:
    sql = (
        "{% if cache.is_incremental_scan %}incremental{% elif cache.is_full_scan %}full{% endif %} "
        "{{ cache.previous_min }} {{ cache.previous_max }}"
    )
    model = ExternalModel("ethereum", "blocks", "slot", SourceRef("b.sql", 2, 6), sql=sql)
    assert render_bounds_query(model, scan, SETTINGS) == [expected]


def test_multi_statement_body_is_split() -> None:
    sql = "DELETE FROM t WHERE s = ';';\n-- done; really\nINSERT INTO t SELECT {{ bounds.start }};\n"
    assert render_statements(incremental(sql), TASK, SETTINGS) == [
        "DELETE FROM t WHERE s = ';'",
        "-- done; really\nINSERT INTO t SELECT 1000",
    ]


def test_replace_where_is_rendered() -> None:
    model = incremental(write=Write("replace", replace_where="p >= {{ bounds.start }} AND p < {{ bounds.end }}"))
    assert render_replace_where(model, TASK, SETTINGS) == "p >= 1000 AND p < 1100"


def test_exec_environment_follows_spec_order() -> None:
    env = exec_environment(incremental(None, exec="python x.py"), TASK, SETTINGS)
    assert env == {
        "SPARK_REMOTE": "sc://spark:15002",
        "SPARK_CONF_JSON": '{"spark.sql.shuffle.partitions": "4"}',
        "BOUNDS_START": "1000",
        "BOUNDS_END": "1100",
        "TASK_ID": "analytics.hourly:1000:100",
        "TASK_START": "1700000500",
        "TASK_MODEL": "analytics.hourly",
        "TASK_INTERVAL": "100",
        "TASK_DIRECTION": "forward",
        "TASK_ATTEMPT": "2",
        "SELF_DATABASE": "analytics",
        "SELF_TABLE": "hourly",
        "DEP_ETHEREUM_BLOCKS_DATABASE": "ethereum",
        "DEP_ETHEREUM_BLOCKS_TABLE": "blocks",
        "DEP_ETHEREUM_A_B_DATABASE": "ethereum",
        "DEP_ETHEREUM_A_B_TABLE": "a-b",
        "DEP_ANALYTICS_OTHER_DATABASE": "analytics",
        "DEP_ANALYTICS_OTHER_TABLE": "other",
        "NETWORK": "main",
        "SHARED": "model",
        "OWN": "x",
    }


def test_scheduled_exec_environment_has_no_bounds() -> None:
    model = ScheduledModel("ref", "rates", "@hourly", SourceRef("r.yml"), exec="run")
    env = exec_environment(model, TaskContext("ref.rates", 3600), SETTINGS)
    assert "BOUNDS_START" not in env and "TASK_INTERVAL" not in env and env["TASK_ID"] == "ref.rates:@3600"


def test_external_exec_environment() -> None:
    model = ExternalModel("ethereum", "blocks", "slot", SourceRef("b.yml"), exec="bounds")
    env = external_exec_environment(model, ScanContext(True, 5, 9), SETTINGS)
    assert env["CACHE_IS_INCREMENTAL_SCAN"] == "true" and env["CACHE_PREVIOUS_MAX"] == "9"
    assert env["SELF_TABLE"] == "blocks"


@pytest.mark.parametrize(
    ("task", "message"),
    [
        pytest.param(TaskContext("analytics.hourly", 1), "needs start and end", id="no-bounds"),
        pytest.param(TaskContext("analytics.hourly", 1, 10, 10), "is empty", id="empty-interval"),
    ],
)
def test_task_must_fit_model(task: TaskContext, message: str) -> None:
    with pytest.raises(NotRenderable, match=message):
        render_statements(incremental(), task, SETTINGS)


def test_helpers() -> None:
    assert env_key("eth-main.beacon.blocks") == "ETH_MAIN_BEACON_BLOCKS"
    assert quote_id("a.b`c") == "`a`.`b``c`"
    assert exec_argv("python 'my script.py' --x 1") == ["python", "my script.py", "--x", "1"]
    assert redact_env({"API_KEY": "s", "DB_PASSWORD": "p", "NETWORK": "n"}) == {
        "API_KEY": "***",
        "DB_PASSWORD": "***",
        "NETWORK": "n",
    }


def test_secrets_are_redacted_by_value_too_and_spark_settings_always() -> None:
    """A secret's value is hidden wherever it appears — in another variable, in a URL's password, in rendered SQL —
    and the Spark settings (credentials of object stores) and a Spark Connect token never show."""
    env = {"DB_PASSWORD": "hunter2-long", "DSN": "postgres://app:hunter2-long@db/x", "CACHE": "redis://u:pw@r:6379",
           "SPARK_CONF_JSON": '{"spark.hadoop.fs.s3a.access.key": "AKIA"}', "NETWORK": "mainnet",
           "SPARK_REMOTE": "sc://spark:15002/;token=abc123;user_id=cbt"}
    assert redact_env(env) == {
        "DB_PASSWORD": "***", "DSN": "postgres://app:***@db/x", "CACHE": "redis://u:***@r:6379",
        "SPARK_CONF_JSON": "***", "NETWORK": "mainnet", "SPARK_REMOTE": "sc://spark:15002/;token=***;user_id=cbt",
    }
    assert redact_text("SELECT 'hunter2-long', 'mainnet'", secret_values(env)) == "SELECT '***', 'mainnet'"


@pytest.mark.parametrize("remote", [
    pytest.param("sc://spark:15002/;authorization=Bearer%20abc123;user_id=cbt", id="url-encoded"),
    pytest.param("sc://spark:15002/;Authorization=bearer abc123;user_id=cbt", id="plain-space"),
])
def test_a_spark_connect_bearer_header_is_redacted(remote: str) -> None:
    """The compose and Kubernetes services present Spark Connect's token as a header parameter (no TLS)."""
    shown = redact_env({"SPARK_REMOTE": remote})["SPARK_REMOTE"]
    assert "abc123" not in shown and shown.endswith("***;user_id=cbt")


def test_validate_trial_renders_every_template(project_with_blocks: Project) -> None:
    project_with_blocks.incremental(body="SELECT {{ bounds.strat }}\n")
    project_with_blocks.incremental("w", write={"strategy": "replace", "replace_where": "{{ nope }}"})
    project_with_blocks.external("e", body="SELECT {{ cache.prev }}\n")
    problems = project_with_blocks.problems()
    assert len(problems) == 3, problems
    assert "models/external/e.sql:6: sql: 'cache.prev' is undefined" in problems
    assert any(
        p.startswith("models/transformations/hourly.sql:") and "'bounds.strat' is undefined" in p for p in problems
    )
    assert "models/transformations/w.sql:15: write.replace_where: 'nope' is undefined" in problems


def test_env_from_config_is_available_to_templates(project_with_blocks: Project) -> None:
    project_with_blocks.config_text(
        "models:\n  external: {default_database: ethereum}\n  transformations: {default_database: analytics}\n"
        "  env: {REGION: eu}\n"
    )
    project_with_blocks.incremental(body="SELECT '{{ env.REGION }}'\n")
    assert project_with_blocks.problems() == []
