"""The model-state gauges (lag, gaps, backlog, bounds) say what ``cbt status`` says, one series per model."""

from __future__ import annotations

from dataclasses import replace

from cbt.models.dag import ModelSet
from cbt.models.spec import Interval
from cbt.observability.model_state import tables
from tests.unit.scheduling.factories import ext, inc, models_of, snapshot


def test_every_model_gets_its_lag_gaps_backlog_and_bounds() -> None:
    source = ext("src.blocks")
    behind = inc("an.behind", ["src.blocks"], imax=100)
    idle = inc("an.idle", ["src.other"], imax=100)  # its source was never scanned: no valid range
    models = ModelSet(models_of(source, ext("src.other"), behind, idle))
    state = snapshot(bounds={"src.blocks": (0, 1000)},
                     coverage={"an.behind": [(100, 300), (400, 600)], "an.idle": [(0, 50)]},
                     in_flight={"an.behind": [(600, 700)]})
    out = tables(models, state)
    one = (("model", "an.behind"),)
    assert out.lag[one] == 400
    assert out.gaps[one] == 2 and out.gap_positions[one] == 200
    assert out.backlog[one] == 5  # [0, 100), [300, 400) and [700, 1000): [600, 700) is in flight
    assert out.bounds[(("model", "src.blocks"), ("bound_type", "max"))] == 1000
    assert out.bounds[(("model", "an.behind"), ("bound_type", "covered_min"))] == 100
    assert out.bounds[(("model", "an.behind"), ("bound_type", "valid_max"))] == 1000
    assert (("model", "an.idle"),) not in out.lag and (("model", "an.idle"),) not in out.backlog
    assert out.gaps[(("model", "an.idle"),)] == 0
    assert not out.lag_seconds, "block positions are not seconds"


def test_lag_in_seconds_for_models_whose_positions_are_unix_seconds() -> None:
    timed = replace(inc("an.timed", ["src.blocks"], imax=60), interval=Interval(max=60, min=60, type="timestamp"))
    models = ModelSet(models_of(ext("src.blocks"), timed))
    out = tables(models, snapshot(bounds={"src.blocks": (0, 3600)}, coverage={"an.timed": [(0, 3000)]}))
    assert out.lag_seconds[(("model", "an.timed"),)] == 600


def test_labels_are_model_ids_and_bound_types_only() -> None:
    models = ModelSet(models_of(ext("src.blocks"), *(inc(f"an.m{i}", ["src.blocks"]) for i in range(50))))
    state = snapshot(bounds={"src.blocks": (0, 10_000)}, coverage={f"an.m{i}": [(0, i * 100)] for i in range(50)})
    out = tables(models, state)
    series = [labels for table in vars(out).values() for labels in table]
    assert {name for labels in series for name, _ in labels} == {"model", "bound_type"}
    assert len(out.lag) == 50 and len(out.bounds) == 2 + 50 * 4 - 2  # an.m0 covers nothing: no covered_min, covered_max
