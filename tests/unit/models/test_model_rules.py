"""One named case per field rule (docs/design/models.md#field-rules): each broken file yields exactly one precise
problem."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import DROP, Project

from cbt.models.batch_choice import batch_mode
from cbt.models.spec import Batch, IncrementalModel

INCREMENTAL_CASES = [
    pytest.param({"type": DROP}, "type: required field is missing", id="type-missing"),
    pytest.param({"type": "hourly"}, "type: expected incremental or scheduled, got 'hourly'", id="type-unknown"),
    pytest.param({"table": DROP}, "table: required field is missing", id="table-missing"),
    pytest.param({"table": 123}, "table: expected a valid string, got 123", id="table-not-string"),
    pytest.param({"table": "a.b"}, "table: expected a name", id="table-with-dot"),
    pytest.param({"database": "has space"}, "database: expected a name", id="database-bad-name"),
    pytest.param({"intervl": 3}, "intervl: unknown field (did you mean 'interval'?)", id="unknown-field"),
    pytest.param({"interval": {"maxx": 1}}, "interval.maxx: unknown field (did you mean 'max'?)", id="unknown-nested"),
    pytest.param({"interval": DROP}, "interval: required field is missing", id="interval-missing"),
    pytest.param({"interval": {"max": 0}}, "interval.max: expected greater than 0, got 0", id="interval-max-zero"),
    pytest.param({"interval": {"max": -5}}, "interval.max: expected greater than 0", id="interval-max-negative"),
    pytest.param({"interval": {"max": "1h"}}, "interval.max: expected a valid integer", id="interval-max-string"),
    pytest.param({"interval": {"max": True}}, "interval.max: expected a valid integer", id="interval-max-bool"),
    pytest.param({"interval": {"max": 1.5}}, "interval.max: expected a valid integer", id="interval-max-float"),
    pytest.param({"interval": {"min": -1}}, "interval.min: expected greater than or equal to 0", id="interval-min-neg"),
    pytest.param(
        {"interval": {"min": 7200}},
        "interval.min: interval.min (7200) must be <= interval.max (3600)",
        id="interval-min-above-max",
    ),
    pytest.param({"interval": {"type": DROP}}, "interval.type: required field is missing", id="interval-type-missing"),
    pytest.param({"interval": {"type": ""}}, "interval.type: must not be empty", id="interval-type-empty"),
    pytest.param({"schedules": DROP}, "schedules: required field is missing", id="schedules-missing"),
    pytest.param(
        {"schedules": {"forwardfill": "", "backfill": ""}},
        "schedules: at least one of forwardfill or backfill",
        id="schedules-both-disabled",
    ),
    pytest.param(
        {"schedules": {"forwardfill": "*/5 * * *"}},
        "schedules.forwardfill: cron expression '*/5 * * *' has 4 fields",
        id="cron-four-fields",
    ),
    pytest.param({"schedules": {"backfill": "61 * * * *"}}, "schedules.backfill: cron expression", id="cron-range"),
    pytest.param({"schedules": {"forwardfill": "0 0 30 2 *"}}, "schedules.forwardfill: cron expression '0 0 30 2 *' "
                 "never fires", id="cron-never-fires"),
    pytest.param(
        {"schedules": {"backfill": "@every 5"}}, "schedules.backfill: @every needs a unit", id="every-no-unit"
    ),
    pytest.param({"schedules": {"backfill": "@sometimes"}}, "schedules.backfill: unknown schedule", id="descriptor"),
    pytest.param({"schedules": {"backfill": 5}}, "schedules.backfill: expected a valid string", id="schedule-not-str"),
    pytest.param({"dependencies": DROP}, "dependencies: required field is missing", id="dependencies-missing"),
    pytest.param(
        {"dependencies": []}, "dependencies: an incremental model needs at least one", id="dependencies-empty"
    ),
    pytest.param({"dependencies": "ethereum.blocks"}, "dependencies: expected a valid list", id="dependencies-string"),
    pytest.param(
        {"dependencies": ["blocks"]}, "dependencies[0]: expected 'database.table'", id="dependency-bare-table"
    ),
    pytest.param({"dependencies": [5]}, "dependencies[0]: expected 'database.table'", id="dependency-not-string"),
    pytest.param({"dependencies": [[]]}, "dependencies[0]: an OR group needs at least one member", id="or-group-empty"),
    pytest.param(
        {"dependencies": [["ethereum.blocks", ["a.b"]]]},
        "dependencies[0][1]: expected 'database.table'",
        id="or-group-nested",
    ),
    pytest.param(
        {"dependencies": ["ethereum.blocks", ["ethereum.blocks"]]},
        "dependencies[1][0]: ethereum.blocks is listed more than once",
        id="dependency-twice",
    ),
    pytest.param(
        {"limits": {"min": 10, "max": 5}},
        "limits.min: limits.min (10) must be <= limits.max (5)",
        id="limits-order",
    ),
    pytest.param({"limits": {"min": -1}}, "limits.min: expected greater than or equal to 0", id="limits-negative"),
    pytest.param({"limits": {"start": 1}}, "limits.start: unknown field", id="limits-unknown"),
    pytest.param({"fill": {"direction": "middle"}}, "fill.direction: expected 'head' or 'tail'", id="fill-direction"),
    pytest.param({"fill": {"buffer": -1}}, "fill.buffer: expected greater than or equal to 0", id="fill-buffer"),
    pytest.param(
        {"fill": {"allow_gap_skipping": "yes"}},
        "fill.allow_gap_skipping: expected a valid boolean",
        id="fill-gap-skipping",
    ),
    pytest.param({"tags": "batch"}, "tags: expected a valid list", id="tags-not-list"),
    pytest.param({"tags": [""]}, "tags[0]: must not be empty", id="tag-empty"),
    pytest.param({"env": {"1X": "a"}}, "env: env name '1X' must match", id="env-bad-name"),
    pytest.param({"env": {"TASK_ID": "x"}}, "env.TASK_ID: TASK_ID is set by cbt", id="env-reserved"),
    pytest.param({"env": {"A": [1]}}, "env.A: expected a valid string", id="env-not-scalar"),
    pytest.param(
        {"write": {"strategy": "merge"}},
        "write.strategy: expected 'sql', 'replace' or 'append'",
        id="write-strategy-unknown",
    ),
    pytest.param(
        {"write": {"strategy": "append"}},
        "write.unique_key: write strategy append requires unique_key",
        id="append-needs-unique-key",
    ),
    pytest.param(
        {"write": {"strategy": "sql", "unique_key": ["id"]}},
        "write.unique_key: unique_key is only used by write strategy append",
        id="unique-key-without-append",
    ),
    pytest.param(
        {"write": {"strategy": "replace"}},
        "write.replace_where: write strategy replace requires",
        id="replace-needs-predicate",
    ),
    pytest.param(
        {"write": {"strategy": "append", "unique_key": "id", "replace_where": "x"}},
        "write.replace_where: replace_where is only used by write strategy replace",
        id="predicate-not-replace",
    ),
    pytest.param({"schedule": "@hourly"}, "schedule: unknown field (did you mean 'schedules'?)", id="schedule-on-inc"),
    pytest.param({"lag": 3}, "lag: unknown field", id="lag-on-incremental"),
    pytest.param({"timeout": 0}, "timeout: expected greater than 0, got 0", id="timeout-zero"),
    pytest.param({"timeout": "soon"}, "timeout:", id="timeout-not-a-duration"),
    pytest.param({"batch": {"mode": "merge"}}, "batch.mode: expected 'auto', 'union', 'bounds' or 'off'",
                 id="batch-mode-unknown"),
    pytest.param({"batch": {"max_intervals": 0}}, "batch.max_intervals: expected greater than 0", id="batch-cap-0"),
    pytest.param({"batch": {"mode": "union"}}, "batch.mode: batch mode union needs write strategy replace",
                 id="batch-union-not-replace"),
]


@pytest.mark.parametrize(("changes", "expected"), INCREMENTAL_CASES)
def test_incremental_rule(project_with_blocks: Project, changes: dict[str, Any], expected: str) -> None:
    project_with_blocks.incremental(**changes)
    problems = project_with_blocks.problems()
    assert len(problems) == 1, problems
    assert expected in problems[0]
    assert problems[0].startswith("models/transformations/hourly.sql:")


SCHEDULED_CASES = [
    pytest.param({"schedule": DROP}, "schedule: required field is missing", id="schedule-missing"),
    pytest.param({"schedule": ""}, "schedule: schedule is empty", id="schedule-empty"),
    pytest.param({"schedule": "every hour"}, "schedule: cron expression 'every hour' has 2 fields", id="cron-words"),
    pytest.param({"interval": {"max": 1}}, "interval: unknown field", id="scheduled-interval"),
    pytest.param(
        {"schedules": {"forwardfill": "@hourly"}},
        "schedules: unknown field (did you mean 'schedule'?)",
        id="scheduled-schedules",
    ),
    pytest.param({"write": {"strategy": "replace"}}, "write: unknown field", id="scheduled-write"),
    pytest.param({"dependencies": ["nope"]}, "dependencies[0]: expected 'database.table'", id="scheduled-bad-dep"),
]


@pytest.mark.parametrize(("changes", "expected"), SCHEDULED_CASES)
def test_scheduled_rule(project: Project, changes: dict[str, Any], expected: str) -> None:
    project.scheduled(**changes)
    problems = project.problems()
    assert len(problems) == 1, problems
    assert expected in problems[0]


EXTERNAL_CASES = [
    pytest.param({"interval": DROP}, "interval: required field is missing", id="external-interval-missing"),
    pytest.param({"interval": {"max": 5}}, "interval.max: unknown field", id="external-interval-max"),
    pytest.param({"lag": -1}, "lag: expected greater than or equal to 0", id="lag-negative"),
    pytest.param({"lag": "1m"}, "lag: expected a valid integer", id="lag-string"),
    pytest.param(
        {"cache": {"full_scan_interval": "5 minutes"}},
        "cache.full_scan_interval: expected a duration",
        id="cache-duration",
    ),
    pytest.param(
        {"cache": {"incremental_scan_interval": "0s"}},
        "cache.incremental_scan_interval: expected greater",
        id="cache-zero",
    ),
    pytest.param(
        {"cache": {"incremental_scan_interval": "1h", "full_scan_interval": "1m"}},
        "cache.full_scan_interval: full_scan_interval (60s) must be >= incremental_scan_interval (3600s)",
        id="cache-order",
    ),
    pytest.param({"dependencies": ["a.b"]}, "dependencies: unknown field", id="external-dependencies"),
    pytest.param(
        {"type": "incremental"},
        "type: a incremental transformation belongs under models.transformations",
        id="transformation-in-external-path",
    ),
    pytest.param({"type": "source"}, "type: expected 'external'", id="external-type-unknown"),
]


@pytest.mark.parametrize(("changes", "expected"), EXTERNAL_CASES)
def test_external_rule(project: Project, changes: dict[str, Any], expected: str) -> None:
    project.external(**changes)
    problems = project.problems()
    assert len(problems) == 1, problems
    assert expected in problems[0]


BODY_CASES = [
    pytest.param(
        "models/transformations/x.sql",
        {"exec": DROP},
        "",
        "sql: the SQL body after the frontmatter is empty",
        id="empty-body",
    ),
    pytest.param(
        "models/transformations/x.sql",
        {"exec": "python x.py"},
        "SELECT 1",
        "exec: set either exec or a SQL body",
        id="exec-and-body",
    ),
    pytest.param(
        "models/transformations/x.yml",
        {"exec": DROP},
        None,
        "exec: required field is missing: a .yml",
        id="yml-without-exec",
    ),
    pytest.param(
        "models/transformations/x.yml", {"exec": "python 'x.py"}, None, "exec: exec command", id="exec-unparseable"
    ),
    pytest.param(
        "models/transformations/x.yml",
        {"exec": "python x.py", "write": {"strategy": "sql"}},
        None,
        "write: write applies to SQL models",
        id="write-on-exec",
    ),
]


@pytest.mark.parametrize(("rel", "changes", "body", "expected"), BODY_CASES)
def test_sql_or_exec_rule(
    project_with_blocks: Project, rel: str, changes: dict[str, Any], body: str | None, expected: str
) -> None:
    import yaml
    from conftest import make_incremental

    fields = make_incremental("x", **changes)
    if body is None:
        project_with_blocks.file(rel, yaml.safe_dump(fields, sort_keys=False))
    else:
        project_with_blocks.sql_model(rel, fields, body)
    problems = project_with_blocks.problems()
    assert len(problems) == 1, problems
    assert expected in problems[0]


def test_every_problem_of_one_file_is_reported_at_its_own_line(project_with_blocks: Project) -> None:
    project_with_blocks.file(
        "models/transformations/many.sql",
        """\
        ---
        type: incremental
        table: many
        interval:
          max: 10
          min: 20
          type: slot
        schedules:
          forwardfill: "*/5 * * *"
        dependencies:
          - ethereum.blocks
          - [ethereum.nope, ethereum.blocks]
        limits: {min: 5, max: 2}
        write: {strategy: append}
        colour: blue
        ---
        SELECT 1
        """,
    )
    assert project_with_blocks.problems() == [
        "models/transformations/many.sql:6: interval.min: interval.min (20) must be <= interval.max (10)",
        "models/transformations/many.sql:9: schedules.forwardfill: cron expression '*/5 * * *' has 4 fields; "
        "expected 5 (minute hour day month weekday)",
        "models/transformations/many.sql:12: dependencies[1][0]: model ethereum.nope does not exist",
        "models/transformations/many.sql:12: dependencies[1][1]: ethereum.blocks is listed more than once",
        "models/transformations/many.sql:13: limits.min: limits.min (5) must be <= limits.max (2)",
        "models/transformations/many.sql:14: write.unique_key: write strategy append requires unique_key (the "
        "columns identifying a row, so a re-run does not insert it twice)",
        "models/transformations/many.sql:15: colour: unknown field; expected one of: batch, change, checks, "
        "database, dependencies, env, exec, expose, fill, interval, limits, schedules, table, tags, timeout, type, "
        "write",
    ]


def test_a_change_policy_is_read_and_effective_from_needs_forward_only(project_with_blocks: Project) -> None:
    project_with_blocks.incremental("kept", change={"mode": "forward_only", "effective_from": 1_000})
    project_with_blocks.incremental("forced", change={"category": "metadata", "retention": "2d"})
    project_with_blocks.incremental("forever", change={"retention": None})
    models = project_with_blocks.load()
    kept, forced, forever = (models.get(f"analytics.{m}") for m in ("kept", "forced", "forever"))
    assert isinstance(kept, IncrementalModel) and isinstance(forced, IncrementalModel)
    assert isinstance(forever, IncrementalModel)
    assert (kept.change.mode, kept.change.effective_from) == ("forward_only", 1_000)
    assert forced.change.category == "metadata"
    assert (kept.change.retention_s, forced.change.retention_s, forever.change.retention_s) == (
        7 * 86_400, 2 * 86_400, None), "the old version's files: 7 days by default"

    path = project_with_blocks.incremental("odd", change={"effective_from": 5})
    [problem] = project_with_blocks.problems()
    assert problem.startswith(f"{path.relative_to(project_with_blocks.root)}:")
    assert "change: effective_from applies to mode forward_only" in problem


def test_valid_models_build_the_spec_values(project_with_blocks: Project) -> None:
    path = project_with_blocks.incremental(
        interval={"max": 100, "min": 20},
        limits={"min": 1000, "max": 0},
        fill={"direction": "tail", "buffer": 5},
        tags=["a", "b", "a"],
        env={"PORT": 8080, "ON": True},
        write={"strategy": "append", "unique_key": "id"},
        dependencies=["ethereum.blocks", ["ethereum.blocks_a", "ethereum.blocks_b"]],
        timeout="5m",
        batch={"mode": "bounds", "max_intervals": 48},
    )
    project_with_blocks.external("blocks_a")
    project_with_blocks.external("blocks_b")
    model = project_with_blocks.load().get("analytics.hourly")
    assert model.interval.max == 100 and model.interval.min == 20  # type: ignore[union-attr]
    assert model.limits.min == 1000 and model.limits.max is None  # type: ignore[union-attr]
    assert model.fill.direction == "tail" and model.fill.buffer == 5  # type: ignore[union-attr]
    assert model.tags == ("a", "b")  # type: ignore[union-attr]
    assert model.env == {"PORT": "8080", "ON": "true"}
    assert model.write.unique_key == ("id",)  # type: ignore[union-attr]
    assert model.timeout_s == 300
    assert model.batch == Batch("bounds", 48) and batch_mode(model) == "bounds"  # type: ignore[union-attr]
    assert model.dependencies == ("ethereum.blocks", ("ethereum.blocks_a", "ethereum.blocks_b"))  # type: ignore[union-attr]
    lines = path.read_text().splitlines()
    assert model.source.line == lines.index("table: hourly") + 1
    assert model.source.body_line == lines.index("---", 1) + 2
