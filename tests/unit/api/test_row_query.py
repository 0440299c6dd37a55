"""The read API's query string → SQL: typed filters, the order, the page token (cbt.api.tables.row_query)."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json

import pytest

from cbt.api.tables.row_query import (
    MAX_TIES,
    Column,
    OrderKey,
    PageToken,
    QueryError,
    TokenExpired,
    TokenSigner,
    check_token,
    condition,
    covered_condition,
    keyset_condition,
    parse_filters,
    parse_key,
    parse_order,
    parse_page_size,
    query_digest,
    statement,
)

COLUMNS = (Column("slot", "long"), Column("at", "timestamp"), Column("root", "string"), Column("ok", "boolean"),
           Column("wei", "decimal(38,0)"), Column("ms", "double"), Column("day", "date"), Column("tags", "other"),
           Column("idx", "integer"))


def where(name: str, value: str) -> str:
    return condition(parse_filters([(name, value)], COLUMNS)[0])


@pytest.mark.parametrize(("name", "value", "sql"), [
    pytest.param("slot_eq", "7", '"slot" = 7', id="eq"),
    pytest.param("slot_ne", "7", '"slot" <> 7', id="ne"),
    pytest.param("slot_lt", "-3", '"slot" < -3', id="lt"),
    pytest.param("slot_lte", "7", '"slot" <= 7', id="lte"),
    pytest.param("slot_gt", "7", '"slot" > 7', id="gt"),
    pytest.param("ms_gte", "1.5", '"ms" >= 1.5', id="gte-float"),
    pytest.param("slot_in_values", "1,2,3", '"slot" IN (1, 2, 3)', id="in"),
    pytest.param("root_not_in_values", "a,b'c", "\"root\" NOT IN ('a', 'b''c')", id="not-in-quoted"),
    pytest.param("root_contains", "x'; DROP", "strpos(\"root\", 'x''; DROP') > 0", id="contains-injection-quoted"),
    pytest.param("root_starts_with", "0x", "starts_with(\"root\", '0x')", id="starts-with"),
    pytest.param("root_like", "0x%", "\"root\" LIKE '0x%'", id="like"),
    pytest.param("root_is_null", "true", '"root" IS NULL', id="is-null"),
    pytest.param("tags_is_null", "false", '"tags" IS NOT NULL', id="is-not-null-any-type"),
    pytest.param("ok_eq", "TRUE", '"ok" = TRUE', id="boolean"),
    pytest.param("at_gte", "2024-01-01T00:00:01Z", '"at" >= to_timestamp_micros(1704067201000000)', id="iso-time"),
    pytest.param("at_lt", "1704067201", '"at" < to_timestamp_micros(1704067201000000)', id="unix-seconds"),
    pytest.param("wei_gt", "10.50", "\"wei\" > CAST('10.50' AS DECIMAL(38, 2))", id="decimal"),
    pytest.param("day_eq", "2024-05-01", "\"day\" = DATE '2024-05-01'", id="date"),
])
def test_each_filter_becomes_a_typed_condition(name: str, value: str, sql: str) -> None:
    assert where(name, value) == sql


@pytest.mark.parametrize(("name", "value", "reason"), [
    pytest.param("slot_eq", "abc", "expected an integer", id="not-an-integer"),
    pytest.param("idx_eq", str(2**31), "expected an integer", id="out-of-int-range"),
    pytest.param("slot_eq", "1.5", "expected an integer", id="fraction-for-long"),
    pytest.param("ms_eq", "nan", "expected a finite number", id="nan"),
    pytest.param("ok_eq", "yes", "expected true or false", id="bad-boolean"),
    pytest.param("at_gt", "yesterday", "ISO 8601 time", id="bad-time"),
    pytest.param("slot_in_values", "1,x", "expected an integer", id="bad-list-item"),
    pytest.param("nope_eq", "1", "not a filter", id="unknown-column"),
    pytest.param("slot_between", "1", "not a filter", id="unknown-operator"),
    pytest.param("slot_contains", "1", "takes eq", id="text-match-on-number"),
    pytest.param("ok_lt", "true", "not lt", id="order-on-boolean"),
    pytest.param("tags_eq", "x", "not eq", id="compare-other-type"),
    pytest.param("root_like", "", "empty value", id="empty-pattern"),
    pytest.param("root_is_null", "maybe", "true or false", id="bad-is-null"),
    pytest.param("wei_eq", "1E+999999999", "a decimal number", id="decimal-beyond-38-digits"),
    pytest.param("wei_eq", "1e40", "a decimal number", id="decimal-too-large"),
    pytest.param("wei_eq", "1e-39", "a decimal number", id="decimal-too-fine"),
    pytest.param("at_gte", "0001-01-01T00:00:00+01:00", "ISO 8601 time", id="time-before-year-one-in-utc"),
])
def test_a_bad_filter_names_the_parameter_and_the_reason(name: str, value: str, reason: str) -> None:
    with pytest.raises(QueryError, match=reason) as error:
        parse_filters([(name, value)], COLUMNS)
    assert str(error.value).startswith(f"{name}: ")


def test_reserved_parameters_are_not_filters() -> None:
    params = [("page_size", "5"), ("page_token", "x"), ("order_by", "slot"), ("covered_only", "true")]
    assert parse_filters(params, COLUMNS) == []


def test_a_column_named_like_an_operator_suffix_is_still_found() -> None:
    columns = (Column("x_in", "long"), Column("x", "long"))
    found = parse_filters([("x_in_values", "1"), ("x_in_eq", "2")], columns)
    assert [(f.column.name, f.operator) for f in found] == [("x", "in_values"), ("x_in", "eq")]


def test_the_order_is_made_total_with_the_key_then_every_ordered_column() -> None:
    order = parse_order("-ms, root desc", COLUMNS, ("slot", "at"))
    assert [(k.column, k.is_descending) for k in order][:5] == [("ms", True), ("root", True), ("slot", False),
                                                                 ("at", False), ("ok", False)]
    assert "tags" not in [k.column for k in order]
    assert len({k.column for k in order}) == len(order)


@pytest.mark.parametrize("raw", [pytest.param("nope", id="unknown"), pytest.param("slot sideways", id="direction"),
                                 pytest.param("tags", id="unordered-type")])
def test_a_bad_order_is_refused(raw: str) -> None:
    with pytest.raises(QueryError, match="order_by"):
        parse_order(raw, COLUMNS, ())


def test_a_key_is_parsed_by_its_columns_types() -> None:
    found = parse_key("7,0xab", ("slot", "root"), COLUMNS)
    assert [condition(f) for f in found] == ['"slot" = 7', "\"root\" = '0xab'"]
    assert [f.values for f in parse_key("a,b", ("root",), COLUMNS)] == [("a,b",)]
    with pytest.raises(QueryError, match="expected 2 values"):
        parse_key("7", ("slot", "root"), COLUMNS)
    with pytest.raises(QueryError, match=r"key\.slot: expected an integer"):
        parse_key("x,y", ("slot", "root"), COLUMNS)


def test_covered_ranges_become_half_open_conditions_on_the_position() -> None:
    assert covered_condition(Column("slot", "long"), [(0, 10), (20, 30)]) == \
        '(("slot" >= 0 AND "slot" < 10) OR ("slot" >= 20 AND "slot" < 30))'
    assert covered_condition(Column("at", "timestamp"), [(60, 120)]) == \
        '(("at" >= to_timestamp_seconds(60) AND "at" < to_timestamp_seconds(120)))'
    assert covered_condition(Column("slot", "long"), []) == "FALSE"
    with pytest.raises(QueryError, match="expected an integer or a timestamp"):
        covered_condition(Column("root", "string"), [(0, 1)])


def test_the_statement_pages_with_a_limit_and_skips_only_ties() -> None:
    sql = statement("t", ['"slot" = 1'], parse_order("slot", COLUMNS[:1], ()), 11, 2)
    assert sql == 'SELECT * FROM "t" WHERE ("slot" = 1) ORDER BY "slot" ASC NULLS FIRST LIMIT 11 OFFSET 2'
    assert statement("t", [], [], 5) == 'SELECT * FROM "t" LIMIT 5'
    with pytest.raises(QueryError):
        statement("t", [], [], 5, MAX_TIES + 1)


SIGNER = TokenSigner(b"k" * 32, max_age_s=3600)


def test_a_page_token_round_trips_signed_and_is_bound_to_its_query() -> None:
    filters = parse_filters([("slot_gt", "1")], COLUMNS)
    digest = query_digest("a.b", filters, parse_order(None, COLUMNS, ()), False)
    token = PageToken(12, (200, "2024-01-01T00:00:00+00:00", None), 3, digest, 1_700_000_000)
    assert SIGNER.decode(SIGNER.encode(token), 1_700_000_100) == token
    check_token(token, digest)
    other = query_digest("a.b", parse_filters([("slot_gt", "2")], COLUMNS), parse_order(None, COLUMNS, ()), False)
    with pytest.raises(QueryError, match="made for another query"):
        check_token(token, other)


def _forged(change: dict[str, object]) -> str:
    """A real token whose body a client re-encoded with ``change`` (the signature kept): the attack of issue 33."""
    real = SIGNER.encode(PageToken(12, (200,), 0, "q", 1_700_000_000))
    body, _, mac = real.partition(".")
    fields = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    fields.update(change)
    forged = base64.urlsafe_b64encode(json.dumps(fields).encode()).decode().rstrip("=")
    return f"{forged}.{mac}"


@pytest.mark.parametrize("raw", [
    pytest.param("%%%", id="not-base64"), pytest.param("e30", id="unsigned-empty-json"),
    pytest.param(_forged({"n": 10_000_000}), id="ties-moved-deep-into-the-table"),
    pytest.param(_forged({"v": 3}), id="an-older-version"),
    pytest.param(_forged({"a": [10**12]}), id="another-position"),
    pytest.param(_forged({"t": 1_800_000_000}), id="younger-than-it-is"),
    pytest.param(TokenSigner(b"x" * 32, 3600).encode(PageToken(1, (), 0, "q", 1_700_000_000)), id="another-key"),
])
def test_a_forged_page_token_is_refused(raw: str) -> None:
    with pytest.raises(QueryError, match="not a token this API made"):
        SIGNER.decode(raw, 1_700_000_100)


def test_a_token_older_than_its_maximum_age_is_refused_as_expired() -> None:
    raw = SIGNER.encode(PageToken(12, (1,), 0, "q", 1_700_000_000))
    assert SIGNER.decode(raw, 1_700_003_600).version == 12
    with pytest.raises(TokenExpired, match="start again without page_token"):
        SIGNER.decode(raw, 1_700_003_601)


def test_the_keyset_condition_orders_nulls_and_nan_as_the_sort_does() -> None:
    order = [OrderKey("ms", is_descending=True), OrderKey("slot")]
    assert keyset_condition(order, COLUMNS, ("1.5", None)) == (
        '(("ms" < 1.5 OR "ms" IS NULL)) OR ("ms" = 1.5 AND "slot" IS NOT NULL) OR ("ms" = 1.5 AND "slot" IS NULL)')
    assert keyset_condition(order, COLUMNS, ("nan", 7)) == (
        '(("ms" IS NULL OR NOT isnan("ms"))) OR (isnan("ms") AND "slot" > 7) OR (isnan("ms") AND "slot" = 7)')
    with pytest.raises(QueryError, match="made for another query"):
        keyset_condition(order, COLUMNS, (1.5,))


def test_values_keep_their_types() -> None:
    found = parse_filters([("wei_eq", "1e3"), ("at_eq", "2024-01-01T02:00:00+02:00")], COLUMNS)
    assert found[0].values == (decimal.Decimal("1e3"),)
    assert found[1].values == (dt.datetime(2024, 1, 1, tzinfo=dt.UTC),)


@pytest.mark.parametrize("raw", ["0", "51", "\u00b2", "\u0663", "1e3", "-1", "", "9" * 400])
def test_a_page_size_is_ascii_digits_up_to_the_maximum(raw: str) -> None:
    with pytest.raises(QueryError, match="page_size: expected an integer from 1 to 50"):
        parse_page_size(raw, 20, 50)
    assert (parse_page_size(None, 20, 50), parse_page_size(" 50 ", 20, 50), parse_page_size(None, 80, 50)) == (
        20, 50, 50)
