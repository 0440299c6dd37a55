"""Reading a state snapshot from JSON: shapes, normalisation, and errors that name the JSON path."""

from __future__ import annotations

import pytest

from cbt.scheduling.snapshot import RawBounds, StateFileError, snapshot_from_json


def test_snapshot_from_json_normalises_coverage() -> None:
    snap, warnings = snapshot_from_json(
        {
            "bounds": {"eth.blocks": {"min": 0, "max": 50}, "eth.empty": {"min": None, "max": None}},
            "coverage": {"an.t": [[200, 300], [0, 100], [100, 150]]},
            "in_flight": {"an.t": [[300, 400]]},
            "reruns": {"an.t": [[0, 100]]},
            "skipped": {"an.t": [[500, 600], [450, 500]]},
            "now": 1700000000,
            "comment": "ignored",
        }
    )
    assert snap.bounds == {"eth.blocks": RawBounds(0, 50)}
    assert snap.coverage == {"an.t": ((0, 150), (200, 300))}
    assert snap.in_flight == {"an.t": ((300, 400),)}
    assert snap.reruns == {"an.t": ((0, 100),)}
    assert snap.skipped == {"an.t": ((450, 600),)}
    assert snap.now == 1700000000
    assert warnings == ["$.comment: unknown key ignored (known: bounds, coverage, in_flight, reruns, skipped, now)"]


def test_empty_document_is_an_empty_snapshot() -> None:
    snap, warnings = snapshot_from_json({})
    assert (snap.bounds, snap.coverage, snap.in_flight, snap.now, warnings) == ({}, {}, {}, None, [])


@pytest.mark.parametrize(
    ("data", "where"),
    [
        pytest.param([], "$", id="not-an-object"),
        pytest.param({"bounds": {"a.b": {"min": -1, "max": 5}}}, "$.bounds['a.b']", id="negative-bound"),
        pytest.param({"bounds": {"a.b": {"min": 1, "max": 5, "lag": 3}}}, "$.bounds['a.b']", id="extra-bound-key"),
        pytest.param({"bounds": {"a.b": [1, 5]}}, "$.bounds['a.b']", id="bounds-not-object"),
        pytest.param({"coverage": {"a.b": [[5, 1]]}}, "$.coverage['a.b'][0]", id="reversed-range"),
        pytest.param({"coverage": {"a.b": [[1, 2, 3]]}}, "$.coverage['a.b'][0]", id="triple"),
        pytest.param({"coverage": {"a.b": [[1.5, 2]]}}, "$.coverage['a.b'][0]", id="float"),
        pytest.param({"coverage": {"a.b": [[True, 2]]}}, "$.coverage['a.b'][0]", id="bool"),
        pytest.param({"coverage": []}, "$.coverage", id="coverage-not-object"),
        pytest.param({"now": "soon"}, "$.now", id="now-not-int"),
    ],
)
def test_malformed_snapshot_names_the_path(data: object, where: str) -> None:
    with pytest.raises(StateFileError) as err:
        snapshot_from_json(data)
    assert str(err.value).startswith(where + ":")
