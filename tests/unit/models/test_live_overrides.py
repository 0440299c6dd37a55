"""Live config overrides: checked against the model they name, applied to a model set without touching the rest."""

from __future__ import annotations

from typing import Any

import pytest

from cbt.models import live_overrides
from cbt.models.dag import ModelSet
from cbt.models.live_overrides import OverrideRejected
from cbt.models.spec import IncrementalModel, ScheduledModel
from tests.unit.scheduling.factories import ext, inc, models_of, sched

MODELS = ModelSet(models_of(ext("src.blocks"), inc("an.hourly", limits=(10, 500)), sched("an.report")))


@pytest.mark.parametrize(
    ("model_id", "data", "reason"),
    [
        pytest.param("an.nope", {"enabled": False}, "an.nope: no such model", id="unknown-model"),
        pytest.param("an.hourly", {"colour": "red"}, "colour: unknown field", id="unknown-field"),
        pytest.param("an.hourly", {"limits": {"min": 1, "step": 2}}, "limits.step: unknown field", id="unknown-nested"),
        pytest.param(
            "an.hourly", {"schedules": {"forwardfill": "every day"}}, "schedules.forwardfill: ", id="bad-schedule"
        ),
        pytest.param("an.hourly", {"schedules": {"forwardfill": "0 0 30 2 *"}}, "never fires",
                     id="schedule-that-never-fires"),
        pytest.param("an.report", {"schedule": "0 0 31 4 *"}, "schedule: ", id="scheduled-never-fires"),
        pytest.param("an.hourly", {"limits": {"min": -5}}, "limits.min: ", id="negative-limit"),
        pytest.param(
            "an.hourly",
            {"limits": {"min": 900}},
            "limits.min (900) must be <= limits.max (500)",
            id="min-above-the-config-max",
        ),
        pytest.param("an.hourly", {"fill": {"direction": "sideways"}}, "fill.direction", id="bad-direction"),
        pytest.param("an.hourly", {"enabled": "no"}, "enabled: ", id="enabled-not-a-bool"),
        pytest.param(
            "an.hourly", {"schedules": {"forwardfill": "", "backfill": ""}}, "at least one of", id="no-schedule-left"
        ),
        pytest.param("an.hourly", {"schedule": "@hourly"}, "schedule: does not apply to incremental", id="wrong-kind"),
        pytest.param("an.report", {"limits": {"min": 1}}, "limits: does not apply to scheduled", id="scheduled-limits"),
        pytest.param("src.blocks", {"enabled": False}, "does not apply to external models", id="external"),
        pytest.param("an.hourly", {}, "at least one field", id="empty"),
        pytest.param("an.hourly", ["enabled"], "a JSON object", id="not-an-object"),
    ],
)
def test_an_invalid_override_is_rejected_with_the_reason(model_id: str, data: Any, reason: str) -> None:
    with pytest.raises(OverrideRejected) as caught:
        live_overrides.check(MODELS, model_id, data)
    assert reason in str(caught.value)


def test_an_override_replaces_only_the_fields_it_sets() -> None:
    override = live_overrides.check(
        MODELS,
        "an.hourly",
        {"schedules": {"backfill": ""}, "limits": {"min": 20}, "fill": {"buffer": 3}, "tags": ["heavy", "heavy"]},
    )
    models, paused = live_overrides.apply(MODELS, {"an.hourly": override})
    hourly = models.models["an.hourly"]
    assert isinstance(hourly, IncrementalModel)
    assert (hourly.schedules.forwardfill, hourly.schedules.backfill) == ("@every 1m", "")
    assert (hourly.limits.min, hourly.limits.max) == (20, 500)
    assert (hourly.fill.buffer, hourly.fill.direction) == (3, "tail")
    assert hourly.tags == ("heavy",)
    assert paused == frozenset()
    assert models.models["src.blocks"] is MODELS.models["src.blocks"]
    assert models.dependents("src.blocks") == MODELS.dependents("src.blocks")


def test_enabled_false_pauses_the_model_and_keeps_it_in_the_graph() -> None:
    override = live_overrides.check(MODELS, "an.report", {"enabled": False, "schedule": "@every 10s"})
    models, paused = live_overrides.apply(MODELS, {"an.report": override})
    report = models.models["an.report"]
    assert isinstance(report, ScheduledModel) and report.schedule == "@every 10s"
    assert paused == {"an.report"} and "an.report" in models


def test_no_overrides_leave_the_model_set_as_it_is() -> None:
    assert live_overrides.apply(MODELS, {}) == (MODELS, frozenset())
