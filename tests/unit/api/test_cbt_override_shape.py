"""CBT's config-override body to our live override and back (``cbt.api.cbt_compat.override_shape``): what maps passes,
what cannot be expressed here is refused naming the field, and our checks accept what the translation gives."""

from __future__ import annotations

from typing import Any

import pytest

from cbt.api.cbt_compat.override_shape import CbtOverrideRejected, base_config, from_cbt, go_duration, to_cbt
from cbt.models import live_overrides
from cbt.models.dag import ModelSet
from tests.unit.scheduling.factories import ext, inc, models_of, sched

HOURLY, REPORT, SRC = inc("an.hourly", limits=(10, None)), sched("an.report", "@hourly"), ext("src.blocks", lag=5)
MODELS = ModelSet(models_of(SRC, HOURLY, REPORT))


@pytest.mark.parametrize(
    ("model", "body", "ours"),
    [
        pytest.param(HOURLY, {"enabled": False}, {"enabled": False}, id="enabled-only"),
        pytest.param(HOURLY, {"enabled": True, "config": {"schedules": {"forwardfill": "@every 30s", "backfill": ""},
                                                          "limits": {"min": 100, "max": None}, "tags": ["heavy"]}},
                     {"enabled": True, "schedules": {"forwardfill": "@every 30s", "backfill": ""},
                      "limits": {"min": 100}, "tags": ["heavy"]}, id="transformation-fields"),
        pytest.param(HOURLY, {"Config": {"Schedules": {"ForwardFill": "@every 1m"}}},
                     {"schedules": {"forwardfill": "@every 1m"}}, id="keys-case-insensitive-as-go"),
        pytest.param(HOURLY, {"enabled": None, "config": {"schedules": None, "tags": ["a"]}}, {"tags": ["a"]},
                     id="null-keeps"),
        pytest.param(HOURLY, {"config": {"fill": {"buffer": 3}}}, {"fill": {"buffer": 3}}, id="our-fill"),
        pytest.param(REPORT, {"enabled": False, "config": {"schedule": "@daily"}},
                     {"enabled": False, "schedule": "@daily"}, id="scheduled"),
    ],
)
def test_what_cbt_can_say_maps_to_an_override_our_checks_accept(model: Any, body: Any, ours: Any) -> None:
    fields = from_cbt(model, body)
    assert fields == ours
    assert live_overrides.check(MODELS, model.id, fields).fields == ours


@pytest.mark.parametrize(
    ("model", "body", "named"),
    [
        pytest.param(HOURLY, {"config": {"interval": {"max": 50}}}, "config.interval: a live override cannot change",
                     id="interval"),
        pytest.param(SRC, {"config": {"lag": 10}}, "config.lag: external models take no live override",
                     id="external-lag"),
        pytest.param(SRC, {"config": {"cache": {"full_scan_interval": "1h"}}}, "config.cache", id="external-cache"),
        pytest.param(SRC, {"enabled": False}, "enabled: not supported for external models", id="external-enabled"),
        pytest.param(HOURLY, {"config": {"colour": "red"}}, "config.colour: unknown field", id="unknown-config"),
        pytest.param(HOURLY, {"config": {"limits": {"least": 1}}}, "config.limits.least: unknown field",
                     id="unknown-nested"),
        pytest.param(HOURLY, {"override": {}}, "override: unknown field", id="unknown-top"),
        pytest.param(HOURLY, {"config": ["schedules"]}, "config: expected a JSON object, got list", id="not-object"),
        pytest.param(HOURLY, {"enabled": True, "ENABLED": False}, "ENABLED: given twice", id="twice"),
    ],
)
def test_what_has_no_counterpart_is_refused_naming_the_field(model: Any, body: Any, named: str) -> None:
    with pytest.raises(CbtOverrideRejected, match=named.replace(".", r"\.")):
        from_cbt(model, body)


def test_ours_shown_in_cbts_shape() -> None:
    assert to_cbt(HOURLY.id, {"enabled": False}) == {
        "model_id": HOURLY.id, "model_type": "transformation", "enabled": False, "override": None}
    assert to_cbt(HOURLY.id, {"tags": ["a"], "limits": {"min": 1}}) == {
        "model_id": HOURLY.id, "model_type": "transformation", "override": {"tags": ["a"], "limits": {"min": 1}}}


def test_base_config_is_the_files_overridable_fields_as_cbt_writes_them() -> None:
    assert base_config(HOURLY) == {
        "interval": {"min": 100, "max": 100}, "schedules": {"forwardfill": "@every 1m", "backfill": "@every 5m"},
        "tags": [], "limits": {"min": 10, "max": 0},
        "fill": {"direction": "tail", "allow_gap_skipping": False, "buffer": 0}}
    assert base_config(REPORT) == {"schedule": "@hourly", "tags": []}
    cache = {"incremental_scan_interval": "1m0s", "full_scan_interval": "1h0m0s"}
    assert base_config(SRC) == {"lag": 5, "cache": cache}


@pytest.mark.parametrize(("seconds", "text"), [(0, "0s"), (45, "45s"), (90, "1m30s"), (3600, "1h0m0s"),
                                               (3725, "1h2m5s")])
def test_durations_as_go_writes_them(seconds: int, text: str) -> None:
    assert go_duration(seconds) == text
