"""Bench verdicts are computed, never omitted: a missing or thin measurement is "not measured", which counts as
missed (bench.verdicts, bench.judged)."""

from __future__ import annotations

import pytest

from bench.judged import CATCHUP_TABLES, MIXED_TABLES, TARGETS, verdicts
from bench.verdicts import Measured, Target, judge, missed, show

RATIO = Target("ratio", "a ratio", 1.25, "x", min_n=3)


def by_key(entries: list[dict[str, object]]) -> dict[object, object]:
    return {e["key"]: e["verdict"] for e in entries}


@pytest.mark.parametrize(("measured", "expected"), [
    (Measured(1.25, 3), "met"),
    (Measured(1.26, 3), "missed"),
    (Measured(None, 3), "not measured"),
    (Measured(1.0, 2), "not measured"),  # too few samples to say anything
])
def test_a_numeric_target_is_met_missed_or_not_measured(measured: Measured, expected: str) -> None:
    assert by_key(judge([RATIO], {"ratio": measured})) == {"ratio": expected}


def test_a_target_nothing_was_measured_for_is_reported_not_measured_and_counts_as_missed() -> None:
    entries = judge([RATIO, Target("same", "same rows", comparison="holds")], {"same": Measured(True)})
    assert by_key(entries) == {"ratio": "not measured", "same": "met"}
    assert missed(entries) == ["ratio"]


def test_a_strict_target_misses_at_its_limit_and_a_property_misses_when_false() -> None:
    entries = judge([Target("rss", "rss", 2048.0, " MB", "<"), Target("same", "same rows", comparison="holds")],
                    {"rss": Measured(2048.0), "same": Measured(False)})
    assert by_key(entries) == {"rss": "missed", "same": "missed"}


def test_a_measurement_with_neither_target_nor_figure_is_refused_rather_than_dropped() -> None:
    with pytest.raises(ValueError, match="surprise"):
        judge([RATIO], {"ratio": Measured(1.0, 3), "surprise": Measured(2.0)})


def test_figures_without_a_target_are_listed_after_the_targets() -> None:
    entries = judge([RATIO], {"ratio": Measured(1.1, 5)}, {"wall": ("wall time", Measured(12.5, 5), " s")})
    assert [(e["key"], e["verdict"]) for e in entries] == [("ratio", "met"), ("wall", "no target")]
    assert show(entries[0]) == "1.1x (n=5)"
    assert show(entries[1]) == "12.5 s (n=5)"


@pytest.mark.parametrize("bench", sorted(TARGETS))
def test_a_failed_bench_has_every_target_not_measured(bench: str) -> None:
    entries = verdicts(bench, {"error": "TimeoutError: no catch-up"})
    assert [e["verdict"] for e in entries] == ["not measured"] * len(TARGETS[bench])


def test_a_model_missing_from_the_catchup_report_is_not_measured_not_left_out() -> None:
    work = {t: {"work_per_covered_position": 1.0, "tasks": 4} for t in CATCHUP_TABLES[1:]}
    part = {"start_to_caught_up_s": 47.0, "oracle": {"holds": True, "problems": ""},
            "work_per_covered_position": work}
    judged = by_key(verdicts("catchup", part))
    assert judged[f"work_per_covered_position.{CATCHUP_TABLES[0]}"] == "not measured"
    assert judged["start_to_caught_up_s"] == "met"
    assert judged["equals_oracle_and_covers_the_data"] == "met"


def test_mixed_under_load_needs_three_tasks_of_the_alone_length() -> None:
    models = {t: {"kind": "incremental", "under_load_vs_alone": 1.5, "under_load": {"n": 2, "interval": 60}}
              for t in MIXED_TABLES}
    judged = by_key(verdicts("mixed", {"start_to_quiet_s": None, "models": models}))
    assert {judged[f"under_load_vs_alone.{t}"] for t in MIXED_TABLES} == {"not measured"}
    assert judged["start_to_quiet_s"] == "not measured"  # never quiet: no time to judge, and it counts as missed


def test_the_live_bounds_are_two_intervals_and_ten_seconds_of_the_example_models() -> None:
    from bench.judged import LIVE_BOUNDS_S
    from cbt.config.settings import load_config
    from cbt.models.loader import load_models
    from tests.e2e.harness import CONFIG

    models = {m.table: m for m in load_models(load_config(CONFIG)).incrementals}
    assert {t: 2 * models[t].interval.max + 10 for t in models} == LIVE_BOUNDS_S
