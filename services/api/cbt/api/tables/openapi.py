"""The read API's part of the OpenAPI document, generated from the exposed tables' schemas: per table, a list
operation whose query parameters are its columns' typed filters, a get-by-key operation when it has a key, and the
schema of its rows. Pure: schemas in, document out."""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cbt.api.tables.row_query import LISTS, Column, Kind
from cbt.models.spec import Expose, ModelId

PREFIX = "/api/v1/tables"
_PROBLEM = {"$ref": "#/components/schemas/Problem"}
_TYPES: dict[Kind, dict[str, Any]] = {
    "integer": {"type": "integer", "format": "int64"},
    "float": {"type": "number"},
    "decimal": {"type": "string", "description": "a decimal number, exact"},
    "string": {"type": "string"},
    "boolean": {"type": "boolean"},
    "timestamp": {"type": "string", "format": "date-time"},
    "date": {"type": "string", "format": "date"},
    "other": {},
}
_WHAT = {"eq": "equals", "ne": "differs from", "lt": "is less than", "lte": "is at most", "gt": "is greater than",
         "gte": "is at least", "in_values": "is one of (comma-separated)", "not_in_values": "is none of "
         "(comma-separated)", "contains": "contains", "starts_with": "starts with", "like": "matches the SQL LIKE "
         "pattern (% and _)", "is_null": "is null (true) or not (false)"}


@dataclass(frozen=True)
class TableSchema:
    model_id: ModelId
    expose: Expose
    columns: tuple[Column, ...]
    """Empty while the table cannot be read (not created yet)."""


def with_tables(document: dict[str, Any], tables: Sequence[TableSchema], max_page_size: int) -> dict[str, Any]:
    """A copy of ``document`` with the read API's operations and row schemas."""
    out = copy.deepcopy(document)
    paths = out.setdefault("paths", {})
    schemas = out.setdefault("components", {}).setdefault("schemas", {})
    paths[PREFIX] = {"get": _operation("list_tables", "The exposed tables, their columns and filters", [],
                                       {"type": "object"}, "tables")}
    model = {"name": "model_id", "in": "path", "required": True, "schema": {"type": "string"}}
    paths[f"{PREFIX}/{{model_id}}"] = {"get": _operation(
        "list_rows", "Rows of any exposed table; each table's own operation below lists its typed filters",
        [model, *_paging(max_page_size)], {"type": "object"}, "tables")}
    paths[f"{PREFIX}/{{model_id}}/{{key}}"] = {"get": _operation(
        "get_row", "One row of any exposed table by its key", [model, _KEY], {"type": "object"}, "tables")}
    for table in (t for t in tables if t.columns):  # a table not created yet has no columns to describe
        name = "Row_" + re.sub(r"\W", "_", table.model_id)
        schemas[name] = row_schema(table.columns)
        ref = {"$ref": f"#/components/schemas/{name}"}
        page = {"type": "object", "required": ["model", "version", "rows", "next_page_token"], "properties": {
            "model": {"type": "string"}, "version": {"type": "integer", "description": "the Delta version read"},
            "rows": {"type": "array", "items": ref},
            "next_page_token": {"type": ["string", "null"], "description": "pass as page_token for the next page"}}}
        slug = re.sub(r"\W", "_", table.model_id)
        paths[f"{PREFIX}/{table.model_id}"] = {"get": _operation(
            f"list_{slug}", f"Rows of {table.model_id}", list_parameters(table, max_page_size), page, "tables")}
        if table.expose.key:
            key = {**_KEY, "description": f"the values of {', '.join(table.expose.key)}, separated by commas"}
            one = {"type": "object", "properties": {"model": {"type": "string"}, "version": {"type": "integer"},
                                                    "row": ref}}
            paths[f"{PREFIX}/{table.model_id}/{{key}}"] = {"get": _operation(
                f"get_{slug}", f"One row of {table.model_id} by its key", [key], one, "tables")}
    return out


_KEY = {"name": "key", "in": "path", "required": True, "schema": {"type": "string"},
        "description": "the values of the key's columns, separated by commas"}


def _paging(max_page_size: int, names: str = "") -> list[dict[str, Any]]:
    return [
        _query("page_size", {"type": "integer", "minimum": 1, "maximum": max_page_size}, "rows per page"),
        _query("page_token", {"type": "string"}, "next_page_token of the previous page"),
        _query("order_by", {"type": "string"}, "columns, each optionally followed by asc or desc"
               + (f" ({names})" if names else "")),
    ]


def list_parameters(table: TableSchema, max_page_size: int) -> list[dict[str, Any]]:
    params = _paging(max_page_size, ", ".join(c.name for c in table.columns))
    if table.expose.position is not None:
        params.append(_query("covered_only", {"type": "boolean"},
                             f"only rows whose {table.expose.position} lies in ranges the model has covered"))
    for column in table.columns:
        for operator in column.operators():
            params.append(_query(f"{column.name}_{operator}", _filter_type(column, operator),
                                 f"{column.name} ({column.delta_type}) {_WHAT[operator]}"))
    return params


def _filter_type(column: Column, operator: str) -> dict[str, Any]:
    if operator == "is_null":
        return {"type": "boolean"}
    if operator in LISTS:
        return {"type": "string"}
    return dict(_TYPES[column.kind])


def row_schema(columns: Sequence[Column]) -> dict[str, Any]:
    properties = {}
    for c in columns:
        schema = dict(_TYPES[c.kind])
        if c.nullable and "type" in schema:
            schema["type"] = [schema["type"], "null"]
        properties[c.name] = schema
    return {"type": "object", "properties": properties}


def _query(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": schema, "description": description}


def _operation(operation_id: str, summary: str, parameters: list[dict[str, Any]], body: dict[str, Any],
               tag: str) -> dict[str, Any]:
    problem = {"content": {"application/problem+json": {"schema": _PROBLEM}}}
    return {"tags": [tag], "summary": summary, "operationId": operation_id, "parameters": parameters,
            "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": body}}},
                          "400": {"description": "A filter, order or token the table cannot take", **problem},
                          "404": {"description": "Unknown or unexposed model, table not created yet", **problem},
                          "504": {"description": "Past api.tables.query_timeout_s", **problem}}}
