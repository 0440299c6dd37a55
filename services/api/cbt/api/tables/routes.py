"""``/api/v1/tables``: the rows of the models marked ``expose`` in their files, read from their Delta tables — a page
with typed filters on the columns, an order and a page token, or one row by its key (docs/read-api.md).

The routes take any query parameter (a table's filters are its columns'), so their OpenAPI description is generated
from each table's schema (``rows_openapi``) each time the document is served: a column added to a table shows up
without a code change or a restart.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from fastapi import APIRouter, FastAPI, Request

from cbt.api.common import PROBLEMS, blocking, context
from cbt.api.context import ApiContext
from cbt.api.problems import ApiProblem, Unavailable, bad_request
from cbt.api.tables import openapi as rows_openapi
from cbt.api.tables.delta_rows import DeltaRows, ReadTimedOut, Snapshot, TableUnreadable, json_row
from cbt.api.tables.row_query import (
    Column,
    PageToken,
    QueryError,
    TokenExpired,
    TokenSigner,
    check_token,
    condition,
    covered_condition,
    keyset_condition,
    next_token,
    parse_filters,
    parse_key,
    parse_order,
    parse_page_size,
    query_digest,
    statement,
)
from cbt.config.settings import TablesApiConfig
from cbt.models.spec import Expose, IncrementalModel, ModelId, ScheduledModel
from cbt.scheduling.coverage import Range
from cbt.service.model_changes import live_folders

router = APIRouter(prefix="/api/v1/tables", tags=["tables"], responses=PROBLEMS)
T = TypeVar("T")
TABLE = "t"
"""The name a snapshot is registered under in a read's statement."""


class TableReads:
    """The reader and its limits: reads run on an executor of their own (``max_concurrent_reads`` threads: a read
    waiting its turn holds none of the threads the Redis-backed routes use), each answered within ``query_timeout_s``
    — a read past it is a 504, and its thread stops at its next record batch; one waiting its turn that long never
    starts — with a memory pool of ``read_memory_mb``; page tokens are signed."""

    def __init__(self, delta: DeltaRows, settings: TablesApiConfig) -> None:
        self.delta = delta
        self.settings = settings
        self.executor = concurrent.futures.ThreadPoolExecutor(settings.max_concurrent_reads, "cbt-table-read")
        secret = settings.page_token_secret.encode() if settings.page_token_secret else secrets.token_bytes(32)
        self.signer = TokenSigner(secret, settings.page_token_max_age_s)

    async def run(self, read: Callable[[threading.Event], T]) -> T:
        """Run ``read`` (given an event set when it is abandoned) on the readers' executor."""
        timeout_s = self.settings.query_timeout_s
        abandoned = threading.Event()
        future = asyncio.get_running_loop().run_in_executor(self.executor, read, abandoned)
        try:
            return await asyncio.wait_for(future, timeout_s)
        except (TimeoutError, ReadTimedOut) as e:
            raise ApiProblem(504, f"the read took longer than api.tables.query_timeout_s ({timeout_s} s): "
                                  "narrow the filters or the page", "read-timeout") from e
        except TokenExpired as e:
            raise ApiProblem(410, str(e), "token-expired") from e
        except QueryError as e:
            raise bad_request(str(e)) from e
        except TableUnreadable as e:
            raise ApiProblem(e.status, str(e), "table-unreadable") from e
        finally:
            abandoned.set()  # (done: a no-op; abandoned at the timeout or a client gone: the scan stops)

    def close(self) -> None:
        """Stop taking reads; those running stop at their deadline (nothing to wait for)."""
        self.executor.shutdown(wait=False, cancel_futures=True)


def install(app: FastAPI) -> None:
    """Serve ``/api/v1/tables`` on ``app`` and add each exposed table's operations to its OpenAPI document."""
    ctx: ApiContext = app.state.context
    settings = ctx.config.api.tables
    reads = TableReads(DeltaRows(settings, ctx.config.base_dir, functools.partial(live_folders, ctx.config)),
                       settings)
    app.state.table_reads = reads
    app.include_router(router)
    generic = app.openapi
    cached: list[tuple[float, list[rows_openapi.TableSchema]]] = []

    def document() -> dict[str, Any]:
        # FastAPI builds the document on the event loop: opening every exposed table for each request of it (on
        # object storage, a listing and reads per table) would stall every other request meanwhile.
        now = time.monotonic()
        if not cached or now - cached[0][0] >= settings.schema_refresh_s:
            cached[:] = [(now, _schemas(ctx, reads.delta))]
        return rows_openapi.with_tables(generic(), cached[0][1], settings.max_page_size)

    app.openapi = document  # type: ignore[method-assign]


def _schemas(ctx: ApiContext, delta: DeltaRows) -> list[rows_openapi.TableSchema]:
    found = []
    for model_id, expose in exposed_models(ctx):
        try:
            columns = delta.snapshot(model_id).columns if delta.is_enabled else ()
        except TableUnreadable:
            columns = ()
        found.append(rows_openapi.TableSchema(model_id, expose, columns))
    return found


def exposed_models(ctx: ApiContext) -> list[tuple[ModelId, Expose]]:
    return [(m.id, m.expose) for m in ctx.models
            if isinstance(m, IncrementalModel | ScheduledModel) and m.expose is not None]


def _reads(request: Request) -> TableReads:
    reads: TableReads = request.app.state.table_reads
    return reads


def _exposure(ctx: ApiContext, model_id: ModelId) -> Expose:
    model = ctx.models.get(model_id)
    expose = getattr(model, "expose", None)
    if not isinstance(expose, Expose):
        raise ApiProblem(404, f"{model_id} is not exposed: its model file has no expose field", "not-exposed")
    return expose


@router.get("", include_in_schema=False)
async def list_tables(request: Request) -> dict[str, Any]:
    ctx, reads = context(request), _reads(request)
    tables = await blocking(_schemas, ctx, reads.delta)
    return {"tables": [{"model": t.model_id, "key": list(t.expose.key), "position": t.expose.position,
                        "readable": bool(t.columns),
                        "columns": [{"name": c.name, "type": c.delta_type, "filters": list(c.operators())}
                                    for c in t.columns]} for t in tables]}


@router.get("/{model_id}", include_in_schema=False)
async def list_rows(request: Request, model_id: str) -> dict[str, Any]:
    ctx, reads = context(request), _reads(request)
    expose = _exposure(ctx, model_id)
    params = request.query_params
    try:
        page_size = _page_size(params.get("page_size"), reads.settings)
        raw_token = params.get("page_token")
        token = reads.signer.decode(raw_token, int(time.time())) if raw_token else None
        is_covered_only = _flag("covered_only", params.get("covered_only"))
    except TokenExpired as e:
        raise ApiProblem(410, str(e), "token-expired") from e
    except QueryError as e:
        raise bad_request(str(e)) from e
    ranges = await _covered(ctx, model_id, expose) if is_covered_only else None
    read = functools.partial(read_page, reads.delta, reads.signer, model_id, expose, list(params.multi_items()),
                             page_size, token, ranges)
    return await reads.run(read)


@router.get("/{model_id}/{key}", include_in_schema=False)
async def get_row(request: Request, model_id: str, key: str) -> dict[str, Any]:
    ctx, reads = context(request), _reads(request)
    expose = _exposure(ctx, model_id)
    if not expose.key:
        raise bad_request(f"{model_id} declares no key (expose.key, or write.unique_key): read it with filters")
    found = await reads.run(functools.partial(read_row, reads.delta, model_id, expose.key, key))
    if found is None:
        raise ApiProblem(404, f"{model_id} has no row with key ({', '.join(expose.key)}) = {key}", "no-such-row")
    return found


def read_page(delta: DeltaRows, signer: TokenSigner, model_id: ModelId, expose: Expose,
              params: Sequence[tuple[str, str]], page_size: int, token: PageToken | None,
              covered: Sequence[Range] | None, abandoned: threading.Event | None = None) -> dict[str, Any]:
    """One page: the filters parsed against the snapshot's columns, read from the token's key on (keyset paging),
    page_size + 1 rows to know if more follow."""
    snap = delta.snapshot(model_id, token.version if token else None, token.folder if token else None)
    filters = parse_filters(params, snap.columns)
    order_by = next((value for name, value in params if name == "order_by"), None)
    order = parse_order(order_by, snap.columns, expose.key)
    digest = query_digest(model_id, filters, order, covered is not None)
    conditions = [condition(f) for f in filters]
    if covered is not None:
        conditions.append(covered_condition(_position_column(snap, expose), covered))
    if token is not None:
        check_token(token, digest)
        conditions.append(keyset_condition(order, snap.columns, token.after))
    sql = statement(TABLE, conditions, order, page_size + 1, token.ties if token else 0)
    rows = delta.rows(snap, sql, TABLE, abandoned)
    page = rows[:page_size]
    following = next_token(page, order, token, snap.version, digest, int(time.time()), snap.folder) \
        if len(rows) > page_size else None
    return {"model": model_id, "version": snap.version, "rows": [json_row(row) for row in page],
            "next_page_token": signer.encode(following) if following else None}


def read_row(delta: DeltaRows, model_id: ModelId, key: Sequence[str], raw: str,
             abandoned: threading.Event | None = None) -> dict[str, Any] | None:
    snap = delta.snapshot(model_id)
    missing = [name for name in key if name not in {c.name for c in snap.columns}]
    if missing:
        raise QueryError(f"{model_id}: the key's columns {', '.join(missing)} are not in the table")
    conditions = [condition(f) for f in parse_key(raw, key, snap.columns)]
    rows = delta.rows(snap, statement(TABLE, conditions, [], 1), TABLE, abandoned)
    return {"model": model_id, "version": snap.version, "row": json_row(rows[0])} if rows else None


def _position_column(snap: Snapshot, expose: Expose) -> Column:
    column = next((c for c in snap.columns if c.name == expose.position), None)
    if column is None:
        raise QueryError(f"covered_only: {snap.model_id} names no position column in the table (expose.position: "
                         f"{expose.position})")
    return column


async def _covered(ctx: ApiContext, model_id: ModelId, expose: Expose) -> list[Range]:
    if expose.position is None:
        raise bad_request(f"covered_only: {model_id} declares no expose.position, the column holding a row's position")
    if not isinstance(ctx.models.get(model_id), IncrementalModel):
        raise bad_request(f"covered_only: {model_id} is a scheduled model; only incremental models cover positions")
    state = await blocking(ctx.live.read_shown, [model_id])
    if not state.coverage_known:
        raise Unavailable("the coverage index is being rebuilt; the request may be repeated")
    return list(state.coverage.get(model_id, ()))


def _page_size(raw: str | None, settings: TablesApiConfig) -> int:
    return parse_page_size(raw, settings.default_page_size, settings.max_page_size)


def _flag(name: str, raw: str | None) -> bool:
    if raw is None:
        return False
    value = {"true": True, "false": False, "1": True, "0": False}.get(raw.strip().lower())
    if value is None:
        raise QueryError(f"{name}: expected true or false, got {raw!r}")
    return value
