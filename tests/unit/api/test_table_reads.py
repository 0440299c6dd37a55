"""Keyset pages over a real Delta table (delta-rs, no Spark): following ``next_page_token`` returns every row exactly
once, in the order a single sorted read returns them — through ties wider than a page, NULLs, NaN and infinities,
ascending and descending — and each page costs a bounded sort, whatever its depth."""

from __future__ import annotations

import asyncio
import math
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
import pytest
from deltalake import write_deltalake

from cbt.api.tables.delta_rows import DeltaRows, ReadTimedOut, TableUnreadable
from cbt.api.tables.routes import read_page
from cbt.api.tables.row_query import TokenSigner
from cbt.config.settings import TablesApiConfig
from cbt.models.spec import Expose

SIGNER = TokenSigner(b"s" * 32, 3600)


@pytest.fixture(scope="module")
def delta(tmp_path_factory: pytest.TempPathFactory) -> DeltaRows:
    warehouse = tmp_path_factory.mktemp("warehouse")
    nan, inf = float("nan"), float("inf")
    ms = [1.0, nan, None, 3.0, inf, -inf, 1.0, 1.0, nan, None] * 4 + [2.0] * 8
    table = pa.table({  # every row twice (period 20), and 8 identical rows: ties across pages
        "slot": pa.array([i % 4 for i in range(40)] + [5] * 8, pa.int64()),
        "ms": pa.array(ms, pa.float64()),
        "root": pa.array([None if i % 4 == 1 else f"r{i % 2}" for i in range(40)] + ["same"] * 8, pa.string()),
        "blob": pa.array([b"x"] * 48, pa.binary()),  # (not an ordered column)
    })
    write_deltalake(str(warehouse / "a.db" / "t"), table)
    return DeltaRows(TablesApiConfig(warehouse=str(warehouse)), Path("."))


def page_through(delta: DeltaRows, params: list[tuple[str, str]], page_size: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    token = None
    for _ in range(200):
        body = read_page(delta, SIGNER, "a.t", Expose(), params, page_size,
                         SIGNER.decode(token, int(time.time())) if token else None, None)
        rows += body["rows"]
        token = body["next_page_token"]
        if token is None:
            return rows
    raise AssertionError("the pages did not end")


def one_read(delta: DeltaRows, params: list[tuple[str, str]]) -> list[dict[str, Any]]:
    return read_page(delta, SIGNER, "a.t", Expose(), params, 1000, None, None)["rows"]


def canonical(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [tuple("nan" if isinstance(v, float) and math.isnan(v) else v for v in r.values()) for r in rows]


@pytest.mark.parametrize("order_by", ["ms", "-ms", "root,-slot", "-root,ms", "slot"])
@pytest.mark.parametrize("page_size", [1, 3, 7])
def test_pages_return_every_row_once_in_the_order_of_one_read(delta: DeltaRows, order_by: str,
                                                              page_size: int) -> None:
    params = [("order_by", order_by)]
    whole = one_read(delta, params)
    assert len(whole) == 48 and len(set(canonical(whole))) < 48
    assert canonical(page_through(delta, params, page_size)) == canonical(whole)


def test_with_a_filter_too(delta: DeltaRows) -> None:
    params = [("slot_gte", "2"), ("order_by", "-ms")]
    whole = one_read(delta, params)
    assert 0 < len(whole) < 48 and canonical(page_through(delta, params, 4)) == canonical(whole)


def test_a_read_needing_more_memory_than_its_pool_is_refused_with_the_reason(tmp_path: Path) -> None:
    """Before, a read had no memory limit: a forged deep page sorted millions of rows in the api's memory."""
    n = 200_000
    write_deltalake(str(tmp_path / "a.db" / "big"), pa.table({
        "k": pa.array(range(n), pa.int64()), "text": pa.array([f"{i:09d}-" + "x" * 40 for i in range(n)])}))
    small = DeltaRows(TablesApiConfig(warehouse=str(tmp_path), read_memory_mb=1), Path("."))
    with pytest.raises(TableUnreadable, match=r"needs more memory than api\.tables\.read_memory_mb") as refused:
        read_page(small, SIGNER, "a.big", Expose(), [("order_by", "-text")], 1000, None, None)
    assert refused.value.status == 503
    roomy = DeltaRows(TablesApiConfig(warehouse=str(tmp_path)), Path("."))
    assert len(read_page(roomy, SIGNER, "a.big", Expose(), [("order_by", "-text")], 1000, None, None)["rows"]) == 1000


def test_an_abandoned_read_stops_at_its_next_batch(delta: DeltaRows) -> None:
    gone = threading.Event()
    gone.set()
    with pytest.raises(ReadTimedOut):
        read_page(delta, SIGNER, "a.t", Expose(), [], 10, None, None, gone)


def test_reads_waiting_their_turn_hold_none_of_the_threads_other_routes_use(delta: DeltaRows) -> None:
    """Reads run on an executor of their own: with every read slot busy (and more reads queued), a Redis-backed
    route's ``blocking`` call still runs at once."""
    from cbt.api.common import blocking
    from cbt.api.tables.routes import TableReads

    reads = TableReads(delta, TablesApiConfig(warehouse="x", max_concurrent_reads=2, query_timeout_s=5))
    release = threading.Event()

    def held(abandoned: threading.Event) -> str:
        release.wait(5)
        return "read"

    async def scenario() -> tuple[str, list[str]]:
        queued = [asyncio.create_task(reads.run(held)) for _ in range(40)]
        await asyncio.sleep(0.05)
        other = await asyncio.wait_for(blocking(lambda: "redis route"), timeout=2)
        release.set()
        return other, await asyncio.gather(*queued)

    try:
        other, done = asyncio.run(scenario())
    finally:
        reads.close()
    assert other == "redis route" and done == ["read"] * 40


def test_a_switched_model_is_read_from_its_live_folder_and_a_paging_reader_stays_on_its_first_table(
        tmp_path: Path) -> None:
    """A switch moves the model's name to its build's files (``cbt.adapters.switch``): the next first page reads
    them; a reader already paging keeps the table its first page read, so it never mixes the two versions."""
    for folder, total in (("t", 1.0), ("t__cbt_v2", 2.0)):
        write_deltalake(str(tmp_path / "a.db" / folder), pa.table({"slot": pa.array(range(4), pa.int64()),
                                                                    "total": pa.array([total] * 4, pa.float64())}))
    live: dict[str, str] = {}
    delta = DeltaRows(TablesApiConfig(warehouse=str(tmp_path)), Path("."), lambda: dict(live), folders_ttl_s=0)
    first = read_page(delta, SIGNER, "a.t", Expose(), [("order_by", "slot")], 2, None, None)
    assert {r["total"] for r in first["rows"]} == {1.0}

    live["a.t"] = "t__cbt_v2"
    token = SIGNER.decode(first["next_page_token"], int(time.time()))
    second = read_page(delta, SIGNER, "a.t", Expose(), [("order_by", "slot")], 2, token, None)
    assert [r["slot"] for r in second["rows"]] == [2, 3] and {r["total"] for r in second["rows"]} == {1.0}, \
        "the paging reader's table"
    fresh = read_page(delta, SIGNER, "a.t", Expose(), [("order_by", "slot")], 2, None, None)
    assert {r["total"] for r in fresh["rows"]} == {2.0}, "a new read: the switched files"


def test_the_folders_known_stay_while_the_versions_record_cannot_be_read(tmp_path: Path) -> None:
    answers: list[dict[str, str] | Exception] = [{"a.t": "t__cbt_v2"}, OSError("the store is away")]

    def folders() -> dict[str, str]:
        answer = answers.pop(0) if len(answers) > 1 else answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer

    delta = DeltaRows(TablesApiConfig(warehouse=str(tmp_path)), Path("."), folders, folders_ttl_s=0)
    assert delta.folder("a.t") == "t__cbt_v2"
    assert delta.folder("a.t") == "t__cbt_v2", "not the folder of its name while the record is away"
