"""Whether ``auto`` may run a backlog of a SQL model's intervals as one run over their whole range (batch mode
``bounds``), proven from the model's SQL; if not, ``union`` (docs/design/scheduling.md#batched-runs). Pure: the SQL is
rendered and parsed, never run.

One run over ``[s_0, s_n)`` writes what the runs over ``[s_0, s_1) … [s_{n-1}, s_n)`` one by one write when:

- every source the SELECT reads through the bounds is filtered by them as ``X >= g(bounds.start) AND X <
  g(bounds.end)`` (or ``X BETWEEN bounds.start AND bounds.end - 1``, ``X`` then taken to hold integers), ``g`` the
  same non-decreasing function on both sides (``timestamp_seconds``, a cast, ``+ c``, ``* c``): the intervals'
  filters tile the range's, so each source row is in exactly one interval's run. The value ``X`` *pins* a row to
  its interval; so does a bucket of it no coarser than the interval (``date_trunc('HOUR', ts)``,
  ``floor(pos / 3600)``, ``pos DIV 60``) once the intervals start at multiples of the bucket (``BatchChoice.align``:
  checked per batch, a batch that is not aligned runs as ``union``);
- (a) the SELECT is row-wise over such rows: projections, filters, scalar functions it knows, ``UNION ALL`` of
  such branches, joins to sources the bounds do not filter (dimension tables: the same rows for every run) when the
  filtered side is the kept one (inner, or the left of a LEFT JOIN), or joins of two filtered sources on their equal
  pins; or (b) every aggregation, window (``PARTITION BY``) and ``DISTINCT`` over such rows groups by a pin, so each
  group lies inside one interval;
- strategy ``replace``: ``write.replace_where`` is one such filter on the target, so the range's predicate replaces
  exactly the intervals' rows; strategy ``append``: the ``unique_key`` holds a pin, so a key repeated by two
  intervals cannot be inserted twice by one ``MERGE``.

Everything else is not proven, and the model gets ``union``: the bounds used anywhere but in such a filter (a
column ``{{ bounds.start }} AS interval_start``, ``task.id``), an aggregate over the whole bounds, ``LIMIT``,
``UNION``/``INTERSECT``/``EXCEPT``, a function it does not know (a UDF), a source whose side of a join it cannot
tell, statements before the SELECT, a template whose output depends on a value it cannot know. Buckets by
``date_trunc`` follow the Spark session's time zone: ``HOUR`` is taken to be whole hours of UTC (true of UTC and all
but a few zones); ``DAY`` and coarser, which move with the zone and its daylight saving, are not accepted.

The template is rendered once with symbolic values: ``bounds.start`` renders as an identifier, arithmetic on it stays
symbolic, and a template whose text would depend on a value (a comparison, a filter like ``| int``) is not proven.
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any, Literal

import sqlglot
from sqlglot import exp

from cbt.models.interval_pins import (
    END,
    START,
    SYMBOL,
    Proof,
    ReadsItself,
    Unproven,
    bound_pairs,
    check_everywhere,
    conjuncts,
    no_symbol_left,
    relation,
    shown,
)
from cbt.models.spec import BatchChoice, IncrementalModel, Write
from cbt.models.sqlsplit import SqlSplitError, split_sql
from cbt.models.templates import SELF_VAR, Namespace, TemplateRenderError, quote_id, render


def choose(model: IncrementalModel) -> BatchChoice:
    """``auto``'s choice for a ``replace`` or ``append`` SQL model that does not read its own table."""
    return _choose(model.id, model.sql or "", model.write, model.interval.max, tuple(sorted(model.env.items())))


@functools.cache  # one entry per model SQL a process sees: a bounded cache would parse every model again per pass
def _choose(model_id: str, sql: str, write: Write, interval: int, env: tuple[tuple[str, str], ...]) -> BatchChoice:
    fallback: Literal["union", "off"] = "union" if write.strategy in ("replace", "append") else "off"
    try:
        return prove(model_id, sql, write, interval, dict(env))
    except ReadsItself as e:
        return BatchChoice("off", f"{e}: in one statement every interval would read it as it was before the batch")
    except Unproven as e:
        why = str(e)
    except Exception as e:  # a bug of the analysis must not stop planning: the exact mode does not need it
        why = f"the analysis failed ({type(e).__name__}: {e})"
    how = ("every interval's SELECT in one MERGE, each key from the first run that has it"
           if write.strategy == "append" else "every interval's SELECT in one statement")
    return BatchChoice(fallback, f"{how}; one run over the range is not proven: {why}")


def prove(model_id: str, sql: str, write: Write, interval: int, env: dict[str, str]) -> BatchChoice:
    """``bounds`` with its reason, or raise Unproven."""
    proof = Proof(model_id, model_id.split(".", 1)[1])
    tree = _parse_select(render_symbolic(sql, model_id, env))
    check_everywhere(tree, proof)
    top = relation(tree, {}, proof)
    no_symbol_left(tree)
    if not top.bounded:
        raise Unproven("the SELECT reads no source through a filter on the bounds (X >= bounds.start AND "
                       "X < bounds.end)")
    if write.strategy == "replace":
        proof.filters.append(f"write.replace_where on {_replace_where(write.replace_where or '', model_id, env)}")
    elif write.strategy == "append":
        pinned = [k for k in write.unique_key if k.lower() in top.pins]
        if not pinned:
            raise Unproven(f"the unique key ({', '.join(write.unique_key)}) holds no pin of the position: one MERGE "
                           "could insert a key twice that two intervals both have")
        proof.widths.add(top.pins[pinned[0].lower()].width)
        proof.groupings.append(f"unique key {pinned[0]}")
    align = math.lcm(*(w for w in proof.widths if w > 1)) if any(w > 1 for w in proof.widths) else 1
    if interval % align:
        raise Unproven(f"buckets of {align} positions do not divide the interval ({interval}): a bucket would "
                       "straddle two intervals")
    return BatchChoice("bounds", _bounds_reason(proof, align), align,
                       needs_whole_hour_zone=any("date_trunc('HOUR')" in a for a in proof.assumptions))


def _bounds_reason(proof: Proof, align: int) -> str:
    what = ("grouped by " + ", ".join(proof.groupings)) if proof.groupings else "row-wise"
    reason = f"{what} over rows filtered by the bounds ({'; '.join(dict.fromkeys(proof.filters))})"
    if align > 1:
        reason += f"; a batch starting off a multiple of {align} runs as union"
    return reason + "".join(f"; assumes {a}" for a in sorted(proof.assumptions))


# --- the template, rendered with symbols -------------------------------------------------------------------------


class Symbol:
    """A template value the analysis does not know: its text is an identifier; arithmetic with integers stays
    symbolic; anything that would make the template's text depend on its value raises Unproven."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text

    def _op(self, op: str, other: object, reverse: bool = False) -> Symbol:
        if isinstance(other, bool) or not isinstance(other, int | Symbol):
            raise Unproven(f"the template computes {self.text} {op} {other!r}")
        return Symbol(f"({other} {op} {self})" if reverse else f"({self} {op} {other})")

    def __add__(self, other: object) -> Symbol:
        return self._op("+", other)

    def __radd__(self, other: object) -> Symbol:
        return self._op("+", other, reverse=True)

    def __sub__(self, other: object) -> Symbol:
        return self._op("-", other)

    def __rsub__(self, other: object) -> Symbol:
        return self._op("-", other, reverse=True)

    def __mul__(self, other: object) -> Symbol:
        return self._op("*", other)

    def __rmul__(self, other: object) -> Symbol:
        return self._op("*", other, reverse=True)

    def _unknown(self, *_: object) -> Any:
        raise Unproven(f"the template's text depends on the value of {self.text}")

    __bool__ = __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __int__ = __float__ = __len__ = __iter__ = _unknown
    __truediv__ = __floordiv__ = __mod__ = __neg__ = __getitem__ = _unknown
    __hash__ = object.__hash__


class _AnyNamespace(Namespace):
    """``dep`` and ``spark``: any key, a namespace or a symbol of its own (the analysis needs no real names)."""

    def __missing__(self, key: str) -> Any:
        if self.label == "dep":
            return _AnyNamespace(f"dep.{key}", {})
        if self.label.startswith("dep."):
            name = quote_id(f"{self.label[4:]}.{key}")
            return Namespace(f"{self.label}.{key}", {"database": self.label[4:], "table": key, "from": name,
                                                     "helpers": {"from": name}})
        return Symbol(_ident(f"{SYMBOL}c_{self.label}_{key}"))


class _Env(Namespace):
    def __missing__(self, key: str) -> Symbol:
        return Symbol(_ident(f"{SYMBOL}c_env_{key}"))


def _ident(text: str) -> str:
    return re.sub(r"\W", "_", text)


def render_symbolic(sql: str, model_id: str, env: dict[str, str]) -> str:
    """The template's text with symbols for the bounds, the task and global settings (the model's env is known)."""
    database, table = model_id.split(".", 1)
    name = quote_id(model_id)
    context = {
        SELF_VAR: Namespace("self", {"database": database, "table": table, "id": model_id, "type": "incremental",
                                     "from": name, "helpers": {"from": name}, "interval_type": Symbol("x"),
                                     "interval": Symbol(f"{SYMBOL}v_interval"), "tags": Symbol("x")}),
        "bounds": Namespace("bounds", {"start": Symbol(START), "end": Symbol(END)}),
        "task": Namespace("task", {"id": Symbol(f"{SYMBOL}v_task_id"), "model": model_id,
                                   "start": Symbol(f"{SYMBOL}c_task_start"),
                                   "direction": Symbol(f"{SYMBOL}c_direction"),
                                   "attempt": Symbol(f"{SYMBOL}c_attempt")}),
        "dep": _AnyNamespace("dep", {}),
        "spark": _AnyNamespace("spark", {}),
        "env": _Env("env", env),
        "ref": quote_id,
    }
    try:
        return render(sql, context, model_id, 1)
    except TemplateRenderError as e:
        if isinstance(e.__cause__, Unproven):
            raise e.__cause__ from None
        raise Unproven(f"the template does not render with symbolic bounds ({e.problem.message})") from e


def _parse_select(text: str) -> exp.Query:
    try:
        statements = split_sql(text)
    except SqlSplitError as e:
        raise Unproven(f"the SQL does not split into statements ({e})") from e
    if len(statements) != 1:
        raise Unproven("statements before the SELECT (a view, a setting) are not analysed")
    try:
        tree = sqlglot.parse_one(statements[0], read="spark")
    except sqlglot.errors.SqlglotError as e:
        raise Unproven(f"the SQL does not parse ({_first_line(str(e))})") from e
    if not isinstance(tree, exp.Query):
        raise Unproven(f"the body is not a SELECT ({type(tree).__name__})")
    return tree


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0][:160] if text.strip() else text


# --- write.replace_where -----------------------------------------------------------------------------------------


def _replace_where(predicate: str, model_id: str, env: dict[str, str]) -> str:
    """The filtered value when the predicate is one filter on the bounds (and conditions without them)."""
    tree = _parse_select(f"SELECT 1 WHERE {render_symbolic(predicate, model_id, env)}")
    check_everywhere(tree, Proof(model_id, model_id.split(".", 1)[1]))
    pairs = list(bound_pairs(conjuncts(tree.args.get("where"))))
    if len(pairs) != 1:
        raise Unproven("write.replace_where is not one filter X >= g(bounds.start) AND X < g(bounds.end), so the "
                       "range's predicate may not replace exactly the intervals' rows")
    for conjunct in pairs[0][2]:
        conjunct.replace(exp.true())
    no_symbol_left(tree)
    return shown(pairs[0][0].sql("spark"))
