"""Admin-table values: model ids split for the table columns, and the JSON columns round-trip or fail by name."""

from __future__ import annotations

import pytest

from cbt.scheduling.task_runs import TaskRun
from cbt.state.admin_records import (
    AdminRecordError,
    CompletedInterval,
    decode_metadata,
    decode_ranges,
    decode_seqs,
    encode_metadata,
    encode_ranges,
    encode_seqs,
    split_model_id,
)


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        pytest.param("eth.blocks", ("eth", "blocks"), id="plain"),
        pytest.param("eth.blocks.v2", ("eth", "blocks.v2"), id="dots-belong-to-the-table"),
    ],
)
def test_split_model_id(model: str, expected: tuple[str, str]) -> None:
    assert split_model_id(model) == expected


@pytest.mark.parametrize("model", [pytest.param("blocks", id="no-dot"), pytest.param(".t", id="no-database")])
def test_split_model_id_rejects(model: str) -> None:
    with pytest.raises(AdminRecordError, match=r"expected 'database\.table'"):
        split_model_id(model)


def test_a_completed_interval_must_cover_something() -> None:
    with pytest.raises(AdminRecordError, match="interval > 0"):
        CompletedInterval("a.b", 10, 0, "a.b:10:0")
    assert CompletedInterval("a.b", 10, 5, "a.b:10:5").range == (10, 15)


def test_json_columns_round_trip_and_are_stable() -> None:
    affected = {"z.t": (TaskRun(5, 6, 1),), "a.t": (TaskRun(0, 10, 10), TaskRun(20, 50, 10))}
    text = encode_ranges(affected)

    assert text == '{"a.t":[[0,10,10],[20,50,10]],"z.t":[[5,6,1]]}'
    old_form = decode_ranges('{"a.t":[[0,10],[20,30]]}')
    assert old_form == {"a.t": (TaskRun(0, 10, 10), TaskRun(20, 30, 10))}, "rows written before runs: one task each"
    assert decode_ranges(text) == affected
    assert decode_seqs(encode_seqs({"b.t": 2, "a.t": 7})) == {"a.t": 7, "b.t": 2}
    assert decode_metadata(encode_metadata({"block": 995, "note": "it's"})) == {"block": 995, "note": "it's"}
    assert decode_ranges(None) == {} == decode_seqs("")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("[1]", "affected: expected a JSON object", id="not-an-object"),
        pytest.param("{oops", "affected: expected a JSON object", id="not-json"),
        pytest.param('{"a.t": [[1, 2, 3, 4]]}', r"a.t: expected \[\[start, end, step\]", id="quadruple"),
        pytest.param('{"a.t": [[1, 2, 0]]}', "a.t: expected start < end and step > 0", id="zero-step"),
        pytest.param('{"a.t": [[2, 2]]}', "a.t: expected start < end and step > 0", id="empty"),
        pytest.param('{"a.t": [[1, "2"]]}', "affected: expected integers", id="string-position"),
    ],
)
def test_decode_ranges_rejects(text: str, message: str) -> None:
    with pytest.raises(AdminRecordError, match=message):
        decode_ranges(text)


def test_metadata_must_be_json() -> None:
    with pytest.raises(AdminRecordError, match="JSON-serialisable"):
        encode_metadata({"when": object()})
