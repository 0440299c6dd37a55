"""``cbt rows``: the read API's command-line client (docs/read-api.md#from-the-command-line) — the exposed tables, a
page of a table's rows with the API's own filters, every page (``--all``) or the first N rows (``--limit``), or one
row by its key, printed as an aligned table, JSON or CSV (``cbt.cli.rows_view``).

It asks the api over HTTP (``--api``, else ``$CBT_API_URL``, else the config's ``api.addr``), so it needs neither
Spark nor a Delta reader; the standard library's ``urllib`` is its client. The filters are passed as given
(``slot_gte=100``): the api parses them against the table's schema and answers a bad one with a 400 and the reason,
which this prints as ``cbt rows: 400 <reason>``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from cbt.base.errors import CbtError
from cbt.config.addresses import EVERY_INTERFACE, bind_address

API_URL_ENV_VAR = "CBT_API_URL"
API_TOKEN_ENV_VAR = "CBT_API_TOKEN"
TABLES_PATH = "/api/v1/tables"
TIMEOUT_S = 60.0
"""Longer than the api's own limit on a read (``api.tables.query_timeout_s``, 10 s by default), which answers 504."""
OPTION_OF = {
    "order_by": "--order-by",
    "page_size": "--page-size",
    "page_token": "--page-token",
    "covered_only": "--covered-only",
}
"""The read API's query parameters that are not filters, and the option that sets each."""
FORMATS = ("table", "json", "csv")

Get = Callable[[str], Any]
"""One GET of a path (with its query) on the api: the decoded JSON answer, or a CbtError."""


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(
        "rows",
        help="an exposed table's rows through the read API",
        description="With no MODEL: the exposed tables, their key, position column, columns and the filters each "
        "takes. With MODEL: a page of its rows, filtered by FILTER=VALUE arguments named as the API's "
        "query parameters (slot_gte=100 root_starts_with=0xab ms_is_null=true); with --key: one row.",
        epilog="The api: --api URL, else $CBT_API_URL, else the config's api.addr. A token for api.auth.read_tokens: "
        "$CBT_API_TOKEN (or --token, which other users of the machine can see in its process list). "
        "An order starting with '-' is written --order-by=-slot.",
    )
    p.add_argument("model", metavar="MODEL", nargs="?", help="the exposed model (database.table, as the api names it)")
    p.add_argument(
        "filters",
        metavar="FILTER=VALUE",
        nargs="*",
        help="a filter <column>_<operator>=<value>, e.g. slot_gte=100; several all apply",
    )
    p.add_argument("--key", metavar="K", help="get one row by its key: the key columns' values separated by commas")
    p.add_argument("--order-by", metavar="X", help="columns separated by commas: name, 'name desc' or -name")
    p.add_argument("--page-size", metavar="N", type=_positive, help="rows per page (the api's default when absent)")
    p.add_argument("--page-token", metavar="T", help="continue a listing where its previous page ended")
    follow = p.add_mutually_exclusive_group()
    follow.add_argument("--all", action="store_true", dest="is_all", help="follow next_page_token to the last page")
    follow.add_argument("--limit", metavar="N", type=_positive, help="follow next_page_token until N rows")
    p.add_argument(
        "--covered-only",
        action="store_true",
        dest="is_covered_only",
        help="only rows whose position the model has covered (needs the model's expose.position)",
    )
    p.add_argument("--format", choices=FORMATS, default="table", help="output (default: table)")
    p.add_argument("--api", metavar="URL", help=f"the api's base URL (default: ${API_URL_ENV_VAR}, else from api.addr)")
    p.add_argument("--token", help=f"a bearer token (default: ${API_TOKEN_ENV_VAR})")
    p.add_argument("--config", metavar="FILE", help="config file, for api.addr (default: $CBT_CONFIG or ./config.yaml)")
    p.set_defaults(func=cmd_rows)


def _positive(raw: str) -> int:
    if not raw.isascii() or not raw.isdigit() or int(raw) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {raw!r}")
    return int(raw)


@dataclass(frozen=True)
class RowsQuery:
    """What a listing asks for, the same on every page of it (a page token is valid only for its query)."""

    model: str
    filters: tuple[tuple[str, str], ...] = ()
    order_by: str | None = None
    page_size: int | None = None
    is_covered_only: bool = False

    def path(self, page_token: str | None = None, page_size: int | None = None) -> str:
        """The path and query of one page; ``page_size`` replaces the query's own (the last page of a ``--limit``)."""
        params = [*self.filters]
        if self.order_by is not None:
            params.append(("order_by", self.order_by))
        size = page_size or self.page_size
        if size is not None:
            params.append(("page_size", str(size)))
        if page_token is not None:
            params.append(("page_token", page_token))
        if self.is_covered_only:
            params.append(("covered_only", "true"))
        return f"{model_path(self.model)}?{urlencode(params)}" if params else model_path(self.model)


def model_path(model: str) -> str:
    return f"{TABLES_PATH}/{quote(model, safe='')}"


def row_path(model: str, key: str) -> str:
    return f"{model_path(model)}/{quote(key, safe=',')}"


def parse_filters(raw: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """``NAME=VALUE`` arguments as query parameters, in their order; the api judges the names and values."""
    found = []
    for argument in raw:
        name, is_pair, value = argument.partition("=")
        if not is_pair or not name:
            raise CbtError(f"FILTER {argument!r}: expected <column>_<operator>=<value>, e.g. slot_gte=100")
        if name in OPTION_OF:
            raise CbtError(f"FILTER {argument!r}: {name} is not a filter; give {OPTION_OF[name]}")
        found.append((name, value))
    return tuple(found)


def api_url_of_addr(addr: str) -> str:
    """The URL a client reaches an api listening on ``addr`` at: one listening on every interface on loopback."""
    host, port = bind_address(addr)
    host = {EVERY_INTERFACE: "127.0.0.1", "::": "::1"}.get(host, host)
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def api_url(given: str | None, environ: Mapping[str, str], addr: Callable[[], str]) -> str:
    """``--api``, else ``$CBT_API_URL``, else the URL of the config's ``api.addr`` (read only when needed)."""
    url = given or environ.get(API_URL_ENV_VAR) or api_url_of_addr(addr())
    if not url.startswith(("http://", "https://")):
        source = "--api" if given else f"${API_URL_ENV_VAR}"
        raise CbtError(f"{source}: expected an http:// or https:// URL, got {url!r}")
    return url.rstrip("/")


def problem_line(status: int, body: bytes, reason: str, tokens: str = "api.auth.read_tokens") -> str:
    """An error answer as one line: the status and the problem's ``detail`` (RFC 9457), else the HTTP reason;
    ``tokens``: the config's list of tokens the request needs one of."""
    try:
        problem = json.loads(body)
    except ValueError:
        problem = None
    detail = problem.get("detail") if isinstance(problem, dict) else None
    text = " ".join(str(detail or reason).split())
    if status in (401, 403):
        text += f" (give a token of {tokens} in ${API_TOKEN_ENV_VAR} or --token)"
    return f"{status} {text}"


def read_rows(get: Get, query: RowsQuery, page_token: str | None, limit: int | None, is_all: bool) -> dict[str, Any]:
    """One page as the api answers it; with ``is_all`` every page after it, with ``limit`` the first ``limit`` rows —
    joined into one answer whose ``next_page_token`` continues after the last row returned."""
    answer = get(query.path(page_token, min(query.page_size, limit) if query.page_size and limit else None))
    if limit is not None and len(answer["rows"]) > limit:
        # No --page-size: the api's default page is longer than the limit; ask for exactly that many instead, so the
        # token continues right after them.
        answer = get(query.path(page_token, limit))
    if limit is None and not is_all:
        return dict(answer)
    first, rows = answer, list(answer["rows"])
    page_size = query.page_size or len(rows)
    while answer["next_page_token"] and answer["rows"] and (limit is None or len(rows) < limit):
        size = query.page_size if limit is None else min(page_size, limit - len(rows))
        answer = get(query.path(answer["next_page_token"], size))
        rows += answer["rows"]
    return {**first, "rows": rows, "next_page_token": answer["next_page_token"]}


def next_page_command(query: RowsQuery, page_token: str, output: str, api: str | None) -> str:
    """The command that prints the next page (no token of the user's in it)."""
    argv = ["cbt", "rows", query.model, *(f"{name}={value}" for name, value in query.filters)]
    if query.order_by is not None:
        argv.append(f"--order-by={query.order_by}")
    if query.page_size is not None:
        argv += ["--page-size", str(query.page_size)]
    if query.is_covered_only:
        argv.append("--covered-only")
    if output != "table":
        argv += ["--format", output]
    if api is not None:
        argv += ["--api", api]
    return shlex.join([*argv, "--page-token", page_token])


def check_arguments(args: argparse.Namespace) -> None:
    paging = {
        "FILTER=VALUE": args.filters,
        "--order-by": args.order_by,
        "--page-size": args.page_size,
        "--page-token": args.page_token,
        "--all": args.is_all,
        "--limit": args.limit,
        "--covered-only": args.is_covered_only,
    }
    given = [name for name, value in paging.items() if value]
    if args.model is not None and "=" in args.model:
        raise CbtError(f"MODEL {args.model!r} looks like a filter: name the model first (cbt rows MODEL FILTER=VALUE)")
    if args.model is None and (given or args.key is not None):
        raise CbtError(f"{', '.join(given) or '--key'} needs a MODEL (cbt rows MODEL ...)")
    if args.key is not None and given:
        raise CbtError(f"--key gets one row: {', '.join(given)} do not apply to it")


def cmd_rows(args: argparse.Namespace) -> int:
    from cbt.cli import rows_view

    check_arguments(args)
    filters = parse_filters(args.filters)
    base = api_url(args.api, os.environ, lambda: _config_addr(args.config))
    get = HttpApi(base, args.token or os.environ.get(API_TOKEN_ENV_VAR) or None).get
    if args.model is None:
        answer = get(TABLES_PATH)
        print(rows_view.render_tables(answer, args.format), end="")
    elif args.key is not None:
        answer = get(row_path(args.model, args.key))
        print(rows_view.render_row(answer, args.format), end="")
    else:
        query = RowsQuery(args.model, filters, args.order_by, args.page_size, args.is_covered_only)
        answer = read_rows(get, query, args.page_token, args.limit, args.is_all)
        token = answer["next_page_token"]
        hint = next_page_command(query, token, args.format, args.api) if token else None
        rows_view.print_rows(answer, args.format, hint)
    return 0


def _config_addr(path: str | None) -> str:
    from cbt.config.settings import load_config

    return load_config(path).api.addr


def _opener() -> Any:
    """urllib's opener, except that a redirect to another origin (scheme, host or port) drops ``Authorization``:
    urllib keeps every header on a redirect, so an api (or anything in front of it) answering 302 to another host
    would have been sent the token."""
    import urllib.parse
    import urllib.request

    class TokenStaysHome(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> Any:
            redirected = super().redirect_request(req, fp, code, msg, headers, newurl)
            if redirected is not None and _origin(newurl) != _origin(req.full_url):
                redirected.headers.pop("Authorization", None)  # (urllib keeps header names capitalize()d)
                redirected.unredirected_hdrs.pop("Authorization", None)
            return redirected

    def _origin(url: str) -> tuple[str, str | None, int | None]:
        parts = urllib.parse.urlsplit(url)
        return parts.scheme, parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)

    return urllib.request.build_opener(TokenStaysHome)


class HttpApi:
    """GETs and POSTs on the api at ``base_url`` with the standard library's client; every failure a one-line
    CbtError."""

    def __init__(self, base_url: str, token: str | None) -> None:
        self.base_url = base_url
        self.headers = {"Accept": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}

    def get(self, path: str) -> Any:
        return self._call(path, None)

    def post(self, path: str, body: Mapping[str, object]) -> Any:
        """A change: it needs a token of ``api.auth.tokens``."""
        return self._call(path, json.dumps(body).encode())

    def _call(self, path: str, data: bytes | None) -> Any:
        import urllib.error
        import urllib.request

        headers = self.headers if data is None else {**self.headers, "Content-Type": "application/json"}
        request = urllib.request.Request(self.base_url + path, data=data, headers=headers)
        try:
            with _opener().open(request, timeout=TIMEOUT_S) as response:
                body = response.read()
        except urllib.error.HTTPError as e:
            tokens = "api.auth.read_tokens" if data is None else "api.auth.tokens"
            raise CbtError(problem_line(e.code, e.read(), str(e.reason), tokens)) from None
        except urllib.error.URLError as e:
            raise CbtError(
                f"cannot reach the api at {self.base_url}: {e.reason} (is `cbt run api` running there? "
                f"--api URL or ${API_URL_ENV_VAR} names another)"
            ) from None
        except (TimeoutError, OSError) as e:
            raise CbtError(f"the api at {self.base_url} did not answer: {e}") from None
        try:
            return json.loads(body)
        except ValueError:
            raise CbtError(f"{self.base_url}{path}: the answer is not JSON; is {self.base_url} the api?") from None
