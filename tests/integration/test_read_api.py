"""The read API (/api/v1/tables, docs/read-api.md) over a derived table the worker's writer made on the real Spark
Connect server, read straight from its Delta files: each kind of filter, pages that neither repeat nor miss a row
while rows are appended, get by key, covered_only against the real Redis coverage, 400s with the reason, and a column
added to the table showing in the OpenAPI document."""

from __future__ import annotations

import asyncio
import base64
import csv
import io
import json
import os
import shlex
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from pyspark.sql import SparkSession
from redis import Redis

from cbt.adapters.redis_state import RedisState
from cbt.adapters.spark import SessionPool
from cbt.api.context import ApiContext
from cbt.api.events import EventHub
from cbt.api.offline import Offline
from cbt.api.web import create_app
from cbt.config.settings import Config
from cbt.dev.pipeline import free_port
from cbt.models.dag import ModelSet
from cbt.models.spec import Expose, IncrementalModel, Write
from cbt.models.templates import RenderSettings, TaskContext
from cbt.worker.executor import SparkExecutor
from tests.conftest import Endpoints
from tests.integration.test_cbt_api import serving
from tests.unit.scheduling.factories import inc

pytestmark = pytest.mark.integration
STEP, INTERVALS = 10, 6
ROWS = STEP * INTERVALS
CBT = str(Path(sys.executable).with_name("cbt"))
"""The installed ``cbt`` script: ``cbt rows`` through its entry point, as a user runs it."""


def blocks(database: str) -> IncrementalModel:
    """One row per position: its slot, a root, a flag, a value and a time; key (slot, root)."""
    sql = ("SELECT id AS slot, concat('0x', lpad(hex(id), 4, '0')) AS root, id % 3 = 0 AS is_late, "
           "CASE WHEN id % 7 = 0 THEN NULL ELSE id * 1.5 END AS ms, timestamp_seconds(id) AS at "
           "FROM range({{ bounds.start }}, {{ bounds.end }})")
    model = replace(inc(f"{database}.blocks", imax=STEP), sql=sql)  # type: ignore[arg-type]
    between = "slot >= {{ bounds.start }} AND slot < {{ bounds.end }}"
    return replace(model, write=Write("replace", replace_where=between), expose=Expose(("slot", "root"), "slot"))


def write(executor: SparkExecutor, model: IncrementalModel, start: int, end: int) -> None:
    asyncio.run(executor.run(model, TaskContext(model.id, int(time.time()), start, end, "forward")))


@pytest.fixture(scope="module")
def table(spark_sessions: SessionPool, endpoints: Endpoints) -> Iterator[tuple[IncrementalModel, SparkExecutor]]:
    """Written once for the module (six worker runs); the tests that change it (an append, a column) run last."""
    spark = spark_sessions.session("tests")
    database = f"tdb_{uuid.uuid4().hex[:10]}"
    spark.sql(f"CREATE DATABASE {database}")
    spark.sql(f"CREATE TABLE {database}.blocks (slot BIGINT, root STRING, is_late BOOLEAN, ms DOUBLE, "
              "at TIMESTAMP) USING DELTA")
    executor = SparkExecutor(SessionPool(endpoints.spark_remote), RenderSettings(), exec_timeout_s=60)
    model = blocks(database)
    for start in range(0, ROWS, STEP):
        write(executor, model, start, start + STEP)
    yield model, executor
    spark.sql(f"DROP DATABASE IF EXISTS {database} CASCADE")


def warehouse(spark: SparkSession, table_name: str) -> str:
    location = spark.sql(f"DESCRIBE DETAIL {table_name}").collect()[0]["location"]
    return str(Path(location.removeprefix("file:")).parents[1])


@pytest.fixture
def app(table: tuple[IncrementalModel, SparkExecutor], spark: SparkSession, redis_client: Redis,
        redis_prefix: str) -> Any:
    model, _ = table
    config = Config.model_validate({"api": {"tables": {"warehouse": warehouse(spark, model.id), "max_page_size": 50,
                                                  "schema_refresh_s": 0}},
                                    "redis": {"key_prefix": redis_prefix}})
    state = RedisState(redis_client, redis_prefix)
    return create_app(ApiContext(config=config, models=ModelSet({model.id: model}), hot=state,  # type: ignore[arg-type]
                                 refresh=Offline(), admin=Offline(), commands=Offline(), events=EventHub()))


def call(app: Any, path: str, query: str = "") -> tuple[int, bytes]:
    """One GET through the ASGI app, as a server would send it: status and body."""
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": query.encode(), "root_path": "", "headers": [],
             "client": ("203.0.113.7", 50000), "server": ("testserver", 80)}
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    return status, b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


def get(app: Any, path: str, **params: str) -> tuple[int, Any]:
    status, body = call(app, path, urlencode(params))
    return status, json.loads(body)


def slots(app: Any, model: IncrementalModel, **params: str) -> list[int]:
    status, body = get(app, f"/api/v1/tables/{model.id}", page_size="50", **params)
    assert status == 200, body
    return [row["slot"] for row in body["rows"]]


def test_each_filter_selects_the_rows_it_names(app: Any, table: tuple[IncrementalModel, SparkExecutor]) -> None:
    model, _ = table
    assert slots(app, model, slot_eq="5") == [5]
    assert slots(app, model, slot_ne="0", slot_lt="4") == [1, 2, 3]
    assert slots(app, model, slot_lte="2") == [0, 1, 2]
    assert slots(app, model, slot_gt="57") == [58, 59]
    assert slots(app, model, slot_gte="58", order_by="-slot") == [59, 58]
    assert slots(app, model, slot_in_values="3,30,300") == [3, 30]
    assert slots(app, model, slot_not_in_values=",".join(str(i) for i in range(2, 60))) == [0, 1]
    assert slots(app, model, root_contains="00C") == [12]  # 0x000C
    assert slots(app, model, root_starts_with="0x003") == [48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59]
    assert slots(app, model, root_like="0x000_", slot_lt="3") == [0, 1, 2]
    assert slots(app, model, ms_is_null="true") == [0, 7, 14, 21, 28, 35, 42, 49, 56]
    assert slots(app, model, is_late_eq="true", slot_lt="10") == [0, 3, 6, 9]
    assert slots(app, model, at_gte="1970-01-01T00:00:58Z") == [58, 59]
    assert slots(app, model, ms_gt="85.5") == [58, 59]


@pytest.mark.parametrize(("params", "reason"), [
    pytest.param({"slot_eq": "five"}, "slot_eq: expected an integer", id="bad-value"),
    pytest.param({"nope_eq": "1"}, "nope_eq: not a filter", id="unknown-column"),
    pytest.param({"root_lt_values": "1"}, "not a filter", id="unknown-operator"),
    pytest.param({"slot_contains": "1"}, "not contains", id="operator-of-another-type"),
    pytest.param({"page_size": "51"}, "page_size: expected an integer from 1 to 50", id="page-too-big"),
    pytest.param({"page_size": "\u00b2"}, "page_size: expected an integer from 1 to 50", id="superscript-digit"),
    pytest.param({"order_by": "nope"}, "order_by", id="bad-order"),
    pytest.param({"page_token": "garbage"}, "page_token: not a token", id="bad-token"),
])
def test_bad_input_is_a_400_with_the_reason(app: Any, table: tuple[IncrementalModel, SparkExecutor],
                                            params: dict[str, str], reason: str) -> None:
    status, body = get(app, f"/api/v1/tables/{table[0].id}", **params)
    assert status == 400
    assert reason in body["detail"]


def test_a_row_by_its_key(app: Any, table: tuple[IncrementalModel, SparkExecutor]) -> None:
    model, _ = table
    status, body = get(app, f"/api/v1/tables/{model.id}/12,0x000C")
    assert status == 200
    assert body["row"] == {"slot": 12, "root": "0x000C", "is_late": True, "ms": 18.0, "at": "1970-01-01T00:00:12+00:00"}
    assert get(app, f"/api/v1/tables/{model.id}/12,0x0001")[0] == 404
    status, body = get(app, f"/api/v1/tables/{model.id}/12")
    assert status == 400 and "expected 2 values" in body["detail"]
    status, body = get(app, "/api/v1/tables/nope.nope")
    assert status == 404


def test_covered_only_keeps_the_ranges_the_model_has_covered(app: Any, table: tuple[IncrementalModel, SparkExecutor],
                                                             redis_client: Redis, redis_prefix: str) -> None:
    model, _ = table
    state = RedisState(redis_client, redis_prefix)
    redis_client.set(f"{redis_prefix}index-built", int(time.time()))
    for done in ((10, 20), (40, 50)):
        state.coverage.record_completed(model.id, done, 0)
    covered = slots(app, model, covered_only="true")
    assert covered == [*range(10, 20), *range(40, 50)]
    assert len(slots(app, model)) == 50


def without_token(answer: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in answer.items() if k != "next_page_token"}


def test_cbt_rows_reads_through_the_api_over_http(app: Any, table: tuple[IncrementalModel, SparkExecutor]) -> None:
    """``cbt rows`` (docs/read-api.md#from-the-command-line) against the app on uvicorn: its JSON is the API's own
    answer, its table's next-page command continues the listing, --all follows every page, --key gets one row, and a
    400 or an api that is not there is one line on stderr and exit 1."""
    model, _ = table
    env = {k: v for k, v in os.environ.items() if k not in ("CBT_API_URL", "CBT_API_TOKEN")}

    def cbt(argv: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run([CBT, *argv], capture_output=True, text=True, timeout=60, env=env, check=False)

    with serving(app) as url:
        def rows(*argv: str) -> subprocess.CompletedProcess[str]:
            return cbt(["rows", *argv, "--api", url])

        run = rows(model.id, "slot_gte=40", "root_starts_with=0x00", "--order-by=-slot", "--page-size", "7",
                   "--format", "json")
        assert run.returncode == 0, run.stderr
        direct = get(app, f"/api/v1/tables/{model.id}", slot_gte="40", root_starts_with="0x00", order_by="-slot",
                     page_size="7")[1]
        assert without_token(json.loads(run.stdout)) == without_token(direct), "(a token names the second it was made)"
        assert bool(json.loads(run.stdout).get("next_page_token")) == bool(direct.get("next_page_token"))
        assert json.loads(rows("--format", "json").stdout) == get(app, "/api/v1/tables")[1]

        first = rows(model.id, "slot_lt=10", "--page-size", "4")
        lines = first.stdout.splitlines()
        assert lines[0].split() == ["slot", "root", "is_late", "ms", "at"] and lines[2].split()[:2] == ["0", "0x0000"]
        hint = f"next page: cbt rows {model.id} slot_lt=10 --page-size 4 --api {url} --page-token "
        assert lines[-1].startswith(hint), first.stdout
        second = cbt(shlex.split(lines[-1].removeprefix("next page: "))[1:])
        assert [line.split()[0] for line in second.stdout.splitlines()[2:6]] == ["4", "5", "6", "7"], second.stdout

        every = rows(model.id, "slot_lt=30", "slot_ne=13", "--page-size", "4", "--all", "--format", "csv")
        assert every.returncode == 0 and every.stderr == "", every.stderr
        read = list(csv.DictReader(io.StringIO(every.stdout)))
        assert [int(row["slot"]) for row in read] == [s for s in range(30) if s != 13]
        assert read[7] == {"slot": "7", "root": "0x0007", "is_late": "false", "ms": "",
                           "at": "1970-01-01T00:00:07+00:00"}

        one = rows(model.id, "--key", "12,0x000C")
        assert one.returncode == 0 and one.stdout.splitlines()[:2] == ["slot     12", "root     0x000C"], one.stdout

        bad = rows(model.id, "nope_eq=1")
        assert bad.returncode == 1 and bad.stdout == ""
        assert bad.stderr.startswith("cbt rows: 400 nope_eq: not a filter") and bad.stderr.count("\n") == 1, bad.stderr

    gone = f"http://127.0.0.1:{free_port()}"
    refused = cbt(["rows", "--api", gone])
    assert refused.returncode == 1 and refused.stderr.startswith(f"cbt rows: cannot reach the api at {gone}: ")


def test_pages_neither_repeat_nor_miss_a_row_while_rows_are_appended(
        app: Any, table: tuple[IncrementalModel, SparkExecutor]) -> None:
    model, executor = table
    seen: list[int] = []
    params = {"page_size": "7", "order_by": "root desc", "slot_ne": "13"}
    status, body = get(app, f"/api/v1/tables/{model.id}", **params)
    first_version = body["version"]
    write(executor, model, ROWS, ROWS + STEP)  # a commit after the first page: not part of this listing
    while True:
        assert status == 200, body
        assert body["version"] == first_version
        seen += [row["slot"] for row in body["rows"]]
        if body["next_page_token"] is None:
            break
        status, body = get(app, f"/api/v1/tables/{model.id}", **params, page_token=body["next_page_token"])
    assert seen == sorted(set(range(ROWS)) - {13}, reverse=True)
    assert len(slots(app, model, slot_gte="0")) == 50  # a new listing sees the appended rows
    status, body = get(app, f"/api/v1/tables/{model.id}", page_size="7", page_token=body.get("next_page_token") or
                       _token_of(app, model))
    assert status == 400 and "made for another query" in body["detail"]


def test_a_real_token_altered_by_its_client_is_refused(app: Any, table: tuple[IncrementalModel, SparkExecutor]) -> None:
    """Issue 33's attack: decode a real next_page_token, move it ten million rows in (or to an older version), encode
    it again. Signed, the token is refused before anything is read."""
    model, _ = table
    body_text, _, mac = _token_of(app, model).partition(".")
    fields = json.loads(base64.urlsafe_b64decode(body_text + "=" * (-len(body_text) % 4)))
    for change in ({"n": 10_000_000}, {"v": 0}, {"a": [0] * len(fields["a"])}):
        forged = base64.urlsafe_b64encode(json.dumps({**fields, **change}).encode()).decode().rstrip("=")
        status, body = get(app, f"/api/v1/tables/{model.id}", page_size="7", slot_lt="20",
                           page_token=f"{forged}.{mac}")
        assert status == 400 and "not a token this API made" in body["detail"], (change, body)


def _token_of(app: Any, model: IncrementalModel) -> str:
    _, body = get(app, f"/api/v1/tables/{model.id}", page_size="7", slot_lt="20")
    token: str = body["next_page_token"]
    return token


def test_a_column_added_to_the_table_shows_in_the_openapi_document(
        app: Any, table: tuple[IncrementalModel, SparkExecutor], spark: SparkSession) -> None:
    model, _ = table
    path = f"/api/v1/tables/{model.id}"

    def parameters() -> dict[str, Any]:
        document = json.loads(call(app, "/api/v1/openapi.json")[1])
        return {p["name"]: p["schema"] for p in document["paths"][path]["get"]["parameters"]}

    before = parameters()
    assert before["slot_gte"] == {"type": "integer", "format": "int64"}
    assert before["at_lt"]["format"] == "date-time"
    assert "root_starts_with" in before and "slot_starts_with" not in before
    assert "proposer_eq" not in before
    spark.sql(f"ALTER TABLE {model.id} ADD COLUMNS (proposer BIGINT)")
    after = parameters()
    assert after["proposer_eq"] == {"type": "integer", "format": "int64"}
    assert get(app, path, proposer_is_null="true", slot_lt="2")[1]["rows"][0]["proposer"] is None
