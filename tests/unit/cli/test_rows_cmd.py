"""``cbt rows``: its arguments become the read API's URLs (filters passed as given, in their order), the api's
address comes from --api, $CBT_API_URL or api.addr, an error answer becomes one line, and --all / --limit follow the
page tokens — here against a list of rows served as the api pages them (offset tokens, a default page size)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest

from cbt.base.errors import CbtError
from cbt.cli import parse
from cbt.cli.rows_cmd import (
    RowsQuery,
    api_url,
    api_url_of_addr,
    check_arguments,
    next_page_command,
    parse_filters,
    problem_line,
    read_rows,
    row_path,
)


@pytest.mark.parametrize(
    ("query", "token", "expected"),
    [
        pytest.param(RowsQuery("db.blocks"), None, "/api/v1/tables/db.blocks", id="bare"),
        pytest.param(
            RowsQuery("db.blocks", (("slot_gte", "100"), ("root_starts_with", "0xab"))),
            None,
            "/api/v1/tables/db.blocks?slot_gte=100&root_starts_with=0xab",
            id="filters-in-order",
        ),
        pytest.param(
            RowsQuery("db.blocks", (("slot_in_values", "1,2"), ("at_gte", "2024-05-01T12:00:00+02:00"))),
            None,
            "/api/v1/tables/db.blocks?slot_in_values=1%2C2&at_gte=2024-05-01T12%3A00%3A00%2B02%3A00",
            id="values-escaped",
        ),
        pytest.param(
            RowsQuery("db.blocks", (("slot_lt", "9"),), "slot desc", 7, True),
            "tok/en=",
            "/api/v1/tables/db.blocks?slot_lt=9&order_by=slot+desc&page_size=7&page_token=tok%2Fen%3D"
            "&covered_only=true",
            id="every-option",
        ),
        pytest.param(RowsQuery("weird/name"), None, "/api/v1/tables/weird%2Fname", id="model-escaped"),
    ],
)
def test_a_query_becomes_the_read_api_s_path(query: RowsQuery, token: str | None, expected: str) -> None:
    assert query.path(token) == expected


def test_a_key_keeps_its_commas() -> None:
    assert row_path("db.blocks", "12,0x000C") == "/api/v1/tables/db.blocks/12,0x000C"
    assert row_path("db.blocks", "a b") == "/api/v1/tables/db.blocks/a%20b"


def test_filters_are_passed_as_given() -> None:
    assert parse_filters(["slot_gte=100", "root_like=0x%_", "note_eq=a=b", "ms_eq="]) == (
        ("slot_gte", "100"),
        ("root_like", "0x%_"),
        ("note_eq", "a=b"),
        ("ms_eq", ""),
    )


@pytest.mark.parametrize(
    ("argument", "reason"),
    [
        pytest.param("slot", "expected <column>_<operator>=<value>", id="no-value"),
        pytest.param("=5", "expected <column>_<operator>=<value>", id="no-name"),
        pytest.param("order_by=slot", "order_by is not a filter; give --order-by", id="an-option"),
        pytest.param("page_token=x", "give --page-token", id="a-token"),
    ],
)
def test_a_filter_that_is_not_one_names_the_fix(argument: str, reason: str) -> None:
    with pytest.raises(CbtError, match=reason):
        parse_filters([argument])


@pytest.mark.parametrize(
    ("addr", "url"),
    [
        pytest.param("127.0.0.1:8080", "http://127.0.0.1:8080", id="loopback"),
        pytest.param(":8080", "http://127.0.0.1:8080", id="every-interface"),
        pytest.param("0.0.0.0:9000", "http://127.0.0.1:9000", id="every-ipv4-interface"),
        pytest.param("[::]:80", "http://[::1]:80", id="every-ipv6-interface"),
        pytest.param("[::1]:81", "http://[::1]:81", id="ipv6"),
        pytest.param("api.internal:8080", "http://api.internal:8080", id="a-name"),
    ],
)
def test_the_api_is_reached_where_it_listens(addr: str, url: str) -> None:
    assert api_url_of_addr(addr) == url


def test_the_api_url_is_the_option_else_the_environment_else_the_config() -> None:
    def no_config() -> str:
        raise AssertionError("the config is read only when neither --api nor $CBT_API_URL is given")

    env = {"CBT_API_URL": "http://env:1/"}
    assert api_url("https://given/base/", env, no_config) == "https://given/base"
    assert api_url(None, env, no_config) == "http://env:1"
    assert api_url(None, {}, lambda: ":8080") == "http://127.0.0.1:8080"
    with pytest.raises(CbtError, match=r"--api: expected an http:// or https:// URL, got 'localhost:8080'"):
        api_url("localhost:8080", {}, no_config)
    with pytest.raises(CbtError, match=r"\$CBT_API_URL: expected"):
        api_url(None, {"CBT_API_URL": "ftp://x"}, no_config)


@pytest.mark.parametrize(
    ("status", "body", "line"),
    [
        pytest.param(
            400,
            b'{"status": 400, "detail": "nope_eq: not a filter\\nof db.t"}',
            "400 nope_eq: not a filter of db.t",
            id="problem-detail-on-one-line",
        ),
        pytest.param(502, b"<html>Bad Gateway</html>", "502 Bad Gateway", id="not-json"),
        pytest.param(404, b'{"detail": null}', "404 Not Found", id="no-detail"),
        pytest.param(
            401,
            b'{"detail": "Missing bearer token"}',
            "401 Missing bearer token (give a token of api.auth.read_tokens in $CBT_API_TOKEN or --token)",
            id="token-hint",
        ),
    ],
)
def test_an_error_answer_is_one_line(status: int, body: bytes, line: str) -> None:
    reason = {502: "Bad Gateway", 404: "Not Found"}.get(status, "")
    assert problem_line(status, body, reason) == line


def paged_api(rows: list[dict[str, Any]], default_size: int, max_size: int) -> tuple[Callable[[str], Any], list[str]]:
    """The rows served as the read API pages them: a token is the offset of the next row; every path asked kept."""
    asked: list[str] = []

    def get(path: str) -> Any:
        asked.append(path)
        params = dict(parse_qsl(urlsplit(path).query))
        size = int(params.get("page_size", default_size))
        assert 1 <= size <= max_size, f"page_size {size} past the api's maximum"
        start = int(params.get("page_token", "0"))
        more = start + size < len(rows)
        return {
            "model": "db.t",
            "version": 3,
            "rows": rows[start : start + size],
            "next_page_token": str(start + size) if more else None,
        }

    return get, asked


ROWS = [{"slot": i} for i in range(23)]


def slots(answer: dict[str, Any]) -> list[int]:
    return [row["slot"] for row in answer["rows"]]


def sizes(asked: list[str]) -> list[str | None]:
    return [dict(parse_qsl(urlsplit(p).query)).get("page_size") for p in asked]


def test_one_page_is_the_api_s_answer() -> None:
    get, _ = paged_api(ROWS, 10, 50)
    answer = read_rows(get, RowsQuery("db.t"), None, None, is_all=False)
    assert answer == {"model": "db.t", "version": 3, "rows": ROWS[:10], "next_page_token": "10"}


def test_all_follows_every_page() -> None:
    get, asked = paged_api(ROWS, 10, 50)
    answer = read_rows(get, RowsQuery("db.t", page_size=5), "5", None, is_all=True)
    assert slots(answer) == list(range(5, 23)) and answer["next_page_token"] is None
    assert [dict(parse_qsl(urlsplit(p).query)).get("page_token") for p in asked] == ["5", "10", "15", "20"]


@pytest.mark.parametrize(
    ("page_size", "limit", "expected_sizes", "token"),
    [
        pytest.param(5, 12, ["5", "5", "2"], "12", id="last-page-shortened"),
        pytest.param(20, 3, ["3"], "3", id="limit-below-the-page-size"),
        pytest.param(None, 14, [None, "4"], "14", id="default-page-longer-than-the-rest"),
        pytest.param(None, 4, [None, "4"], "4", id="default-page-longer-than-the-limit"),
        pytest.param(5, 100, ["5", "5", "5", "5", "5"], None, id="fewer-rows-than-the-limit"),
    ],
)
def test_limit_stops_after_that_many_rows_with_a_token_for_the_next(
    page_size: int | None, limit: int, expected_sizes: list[str | None], token: str | None
) -> None:
    get, asked = paged_api(ROWS, 10, 50)
    answer = read_rows(get, RowsQuery("db.t", page_size=page_size), None, limit, is_all=False)
    assert slots(answer) == list(range(min(limit, len(ROWS))))
    assert answer["next_page_token"] == token
    assert sizes(asked) == expected_sizes


def test_the_next_page_command_repeats_the_query_without_the_token_of_the_user() -> None:
    query = RowsQuery("db.t", (("root_like", "0x 1%"),), "-slot", 7, True)
    assert next_page_command(query, "abc=", "csv", "http://h:1") == (
        "cbt rows db.t 'root_like=0x 1%' --order-by=-slot --page-size 7 --covered-only --format csv --api http://h:1 "
        "--page-token abc="
    )
    assert next_page_command(RowsQuery("db.t"), "t", "table", None) == "cbt rows db.t --page-token t"


@pytest.mark.parametrize(
    ("argv", "reason"),
    [
        pytest.param(["rows", "slot_gte=1"], "looks like a filter: name the model first", id="filter-without-model"),
        pytest.param(["rows", "--all"], "--all needs a MODEL", id="all-without-model"),
        pytest.param(
            ["rows", "db.t", "slot_gte=1", "--key", "1"],
            "--key gets one row: FILTER=VALUE do not apply",
            id="key-and-filter",
        ),
        pytest.param(["rows", "db.t", "--key", "1", "--limit", "3"], "--limit do not apply", id="key-and-limit"),
    ],
)
def test_options_that_do_not_go_together_say_so(argv: list[str], reason: str) -> None:
    with pytest.raises(CbtError, match=reason):
        check_arguments(parse(argv))


def test_all_and_limit_exclude_each_other_and_sizes_are_positive(capsys: pytest.CaptureFixture[str]) -> None:
    for argv, message in (
        (["rows", "db.t", "--all", "--limit", "3"], "not allowed with argument"),
        (["rows", "db.t", "--page-size", "0"], "expected a whole number of at least 1, got '0'"),
    ):
        with pytest.raises(SystemExit):
            parse(argv)
        assert message in capsys.readouterr().err


def test_a_redirect_to_another_host_does_not_carry_the_token() -> None:
    """urllib keeps every header on a redirect: an api (or a proxy before it) answering 302 to another origin would
    have been sent the bearer token. A redirect within the same origin keeps it."""
    import http.server
    import threading

    from cbt.cli.rows_cmd import HttpApi

    seen: dict[str, str | None] = {}

    def server(handler: type[http.server.BaseHTTPRequestHandler]) -> http.server.HTTPServer:
        running = http.server.HTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=running.serve_forever, daemon=True).start()
        return running

    class Elsewhere(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen[f"elsewhere{self.path}"] = self.headers.get("Authorization")
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *_: Any) -> None:
            pass

    other = server(Elsewhere)

    class Api(Elsewhere):
        def do_GET(self) -> None:
            if self.path.startswith("/away"):
                self.send_response(302)
                self.send_header("Location", f"http://127.0.0.1:{other.server_port}/landed")
                self.end_headers()
            elif self.path.startswith("/home"):
                self.send_response(302)
                self.send_header("Location", "/stayed")
                self.end_headers()
            else:
                seen[f"api{self.path}"] = self.headers.get("Authorization")
                super().do_GET()

    api = server(Api)
    try:
        client = HttpApi(f"http://127.0.0.1:{api.server_port}", "t" * 40)
        client.get("/away")
        client.get("/home")
    finally:
        for running in (api, other):
            running.shutdown()
            running.server_close()
    assert seen["elsewhere/landed"] is None and seen["api/stayed"] == f"Bearer {'t' * 40}"
