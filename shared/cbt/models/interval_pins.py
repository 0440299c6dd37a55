"""Which interval each row of a SELECT belongs to, scope by scope (``cbt.models.batch_safety`` proves ``bounds`` with
it). Pure: sqlglot trees in, facts out.

The SELECT has been rendered with symbols for the bounds (``START``, ``END``). A *bounded* relation is one whose rows
partition by interval: a source read through ``X >= g(START) AND X < g(END)`` (``g`` non-decreasing, the same on both
sides), and what row-wise operations, joins that keep only its rows, and groupings by a *pin* make of it. A pin is a
value that tells a row's interval: the filtered value ``X`` itself, or a bucket of it (``Pin.width``). Each filter
proven is replaced by ``TRUE`` in the tree, so a symbol left over afterwards is a use of the bounds the analysis did
not account for.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Literal

from sqlglot import exp

SYMBOL = "cbt_sym_"
"""Prefix of the identifiers symbolic values render as; ``cbt_sym_v_…`` ones vary from interval to interval."""
START, END = f"{SYMBOL}v_start", f"{SYMBOL}v_end"
Kind = Literal["number", "seconds", "millis", "micros", "other"]
"""What a pinned value is: the position itself, the position as a timestamp (of unix seconds, ms, µs), or other."""
_SCALE = {"seconds": 1, "millis": 1000, "micros": 1_000_000}
_TRUNC_S = {"MICROSECOND": 0, "MILLISECOND": 0, "SECOND": 1, "MINUTE": 60, "HOUR": 3600}
_TIMESTAMP_FROM = {"timestamp_seconds": "seconds", "timestamp_millis": "millis", "timestamp_micros": "micros"}
_KNOWN_ANONYMOUS = frozenset({*_TIMESTAMP_FROM, "pmod", "hash", "xxhash64", "bin", "conv", "bround",
                              "octet_length", "crc32", "isnull", "isnotnull", "now"})
"""Deterministic scalar Spark functions that sqlglot parses as ``Anonymous``; any other anonymous function (a UDF)
is not classified."""
_RANDOM = (exp.Rand, exp.Randn, exp.Uuid, exp.Shuffle)


class Unproven(Exception):
    """The analysis cannot prove ``bounds``; the message says why."""


class ReadsItself(Unproven):
    """The SQL reads the model's own table: not even ``union`` gives the runs one by one (each interval would read
    the table as it was before the batch)."""


@dataclass(frozen=True)
class Pin:
    """A value that tells which interval its row is in: ``width`` 0 is the filtered value itself; ``width`` w a
    bucket of w positions (aligned at multiples of w)."""

    width: int
    kind: Kind = "other"
    is_local_hour: bool = False
    """A bucket of ``date_trunc('HOUR', …)``: hours of the session's time zone, aligned only if it is whole hours
    from UTC."""


@dataclass
class Rel:
    """A relation as a function of the bounds: ``bounded`` when its rows partition by interval (the range's rows are
    the disjoint union of the intervals'), ``pins`` its output columns that pin a row (lower-case name → pin)."""

    bounded: bool
    pins: dict[str, Pin] = field(default_factory=dict)


@dataclass
class Proof:
    """What the analysis found, for the reason it gives."""

    model_id: str
    table: str
    filters: list[str] = field(default_factory=list)
    groupings: list[str] = field(default_factory=list)
    widths: set[int] = field(default_factory=set)
    assumptions: set[str] = field(default_factory=set)


# --- checks over the whole statement -----------------------------------------------------------------------------


def check_everywhere(tree: exp.Expr, proof: Proof) -> None:
    for node in tree.walk():
        if isinstance(node, exp.Anonymous) and node.name.lower() not in _KNOWN_ANONYMOUS:
            raise Unproven(f"{node.name}() is a function the analysis does not know (a UDF?)")
        if isinstance(node, exp.AnonymousAggFunc):
            raise Unproven(f"{node.name}() is an aggregate the analysis does not know")
        if isinstance(node, _RANDOM):
            raise Unproven(f"{node.sql('spark')} differs from run to run")
        if isinstance(node, exp.Limit | exp.Offset | exp.Fetch | exp.TableSample):
            raise Unproven(f"{node.key.upper()} picks rows out of the whole result")
        if isinstance(node, exp.With) and node.args.get("recursive"):
            raise Unproven("a recursive WITH is not analysed")
        if isinstance(node, exp.Table) and _is_model(node, proof.model_id):
            raise ReadsItself(f"the SQL reads the model's own table ({node.sql('spark')})")


def _is_model(table: exp.Table, model_id: str) -> bool:
    """``table`` names the model: by its id, by its table alone, or under a ``{{…}}`` database placeholder."""
    database, name = model_id.lower().split(".", 1)
    parts = [part.name.lower() for part in table.parts]
    return parts[-1] == name and (len(parts) == 1 or parts[-2] in (database, "") or parts[-2].startswith("{{"))


def no_symbol_left(tree: exp.Expr) -> None:
    """Every use of a varying symbol that a filter did not account for (they are replaced as they are proven)."""
    for node in tree.walk():
        text = node.name if isinstance(node, exp.Identifier | exp.Literal) else ""
        if f"{SYMBOL}v_" in text:
            while node.parent is not None and not isinstance(node.parent, _CLAUSES):
                node = node.parent
            raise Unproven("the bounds (or task.id) are used outside a filter on a source: "
                           f"{shown(node.sql('spark'))}")


_CLAUSES = (exp.Query, exp.Where, exp.Group, exp.Having, exp.Order, exp.Join, exp.Connector, exp.From, exp.Subquery)
"""Where a node stops being part of the expression an error message quotes."""


def shown(sql: str) -> str:
    for symbol, name in ((START, "bounds.start"), (END, "bounds.end"), (f"{SYMBOL}v_task_id", "task.id"),
                         (f"{SYMBOL}v_interval", "self.interval")):
        sql = sql.replace(symbol, name)
    return sql if len(sql) <= 120 else sql[:117] + "..."


# --- relations, scope by scope -----------------------------------------------------------------------------------


def relation(node: exp.Expr, ctes: dict[str, Rel], proof: Proof) -> Rel:
    with_ = node.args.get("with_")
    if with_ is not None:
        ctes = dict(ctes)
        for cte in with_.expressions:
            ctes[cte.alias_or_name.lower()] = relation(cte.this, ctes, proof)
    if isinstance(node, exp.Subquery):
        return relation(node.this, ctes, proof)
    if isinstance(node, exp.Select):
        return _select(node, ctes, proof)
    if isinstance(node, exp.Union) and not node.args.get("distinct"):
        return _union_all(relation(node.this, ctes, proof), relation(node.expression, ctes, proof), node)
    if isinstance(node, exp.SetOperation):
        sides = [relation(node.this, ctes, proof), relation(node.expression, ctes, proof)]
        if any(side.bounded for side in sides):
            raise Unproven(f"{node.key.upper()} (not UNION ALL) compares rows across the whole range")
        return Rel(False)
    if isinstance(node, exp.Table):
        known = ctes.get(node.name.lower()) if not node.args.get("db") else None
        return known if known is not None else Rel(False)
    if isinstance(node, exp.Values):
        return Rel(False)
    raise Unproven(f"a {node.key} source is not analysed")


def _union_all(left: Rel, right: Rel, node: exp.Expr) -> Rel:
    if left.bounded != right.bounded:
        raise Unproven("a UNION ALL branch reads no source filtered by the bounds: every run would repeat its rows")
    names = _output_names(node)
    pins = {name: pin for name, pin in left.pins.items() if name in right.pins} if names is None else {}
    if names is not None:
        left_names, right_names = names
        pins = {a: left.pins[a] for a, b in zip(left_names, right_names, strict=False)
                if a in left.pins and b in right.pins and left.pins[a] == right.pins[b]}
    return Rel(left.bounded, pins)


def _output_names(node: exp.Expr) -> tuple[list[str], list[str]] | None:
    """The output column names of both branches by position, when neither has a star."""
    sides = [_leftmost(node.this), _leftmost(node.expression)]
    if any(s is None or any(isinstance(e, exp.Star) or e.is_star for e in s.expressions) for s in sides):
        return None
    return ([e.alias_or_name.lower() for e in sides[0].expressions],  # type: ignore[union-attr]
            [e.alias_or_name.lower() for e in sides[1].expressions])  # type: ignore[union-attr]


def _leftmost(node: exp.Expr) -> exp.Select | None:
    while isinstance(node, exp.SetOperation | exp.Subquery):
        node = node.this
    return node if isinstance(node, exp.Select) else None


@dataclass
class _Source:
    alias: str
    rel: Rel
    join: exp.Join | None = None


def _select(select: exp.Select, ctes: dict[str, Rel], proof: Proof) -> Rel:
    sources = _sources(select, ctes, proof)
    single = len(sources) == 1
    pool = conjuncts(select.args.get("where"))
    for source in sources:
        join = source.join
        if join is not None and join.kind.upper() in ("", "INNER", "CROSS") and not join.side:
            pool += conjuncts(join.args.get("on"))
    pins = _filter_sources(sources, pool, single, proof)
    bounded = _joined(sources, pool)
    for source in sources:
        if source.rel.bounded:
            pins.update({_key(exp.column(name, table=source.alias), single): pin
                         for name, pin in source.rel.pins.items()})
    if bounded:
        _groups_by_pins(select, pins, single, sources, proof)
    return Rel(bounded, _output_pins(select, pins, single, sources) if bounded else {})


def _sources(select: exp.Select, ctes: dict[str, Rel], proof: Proof) -> list[_Source]:
    from_ = select.args.get("from_")
    if from_ is None:
        return []
    out = [_Source(from_.this.alias_or_name.lower(), relation(from_.this, ctes, proof))]
    for join in select.args.get("joins") or []:
        out.append(_Source(join.this.alias_or_name.lower(), relation(join.this, ctes, proof), join))
    return out


def conjuncts(node: exp.Expr | None) -> list[exp.Expr]:
    if node is None:
        return []
    if isinstance(node, exp.Where):
        return conjuncts(node.this)
    if isinstance(node, exp.Paren):
        return conjuncts(node.this)
    if isinstance(node, exp.And):
        return conjuncts(node.this) + conjuncts(node.expression)
    return [node]


def _filter_sources(sources: list[_Source], pool: list[exp.Expr], single: bool,
                    proof: Proof) -> dict[str, Pin]:
    """Each source read through a filter on the bounds becomes bounded, pinned by the filtered value (returned, as
    this scope sees it)."""
    pins: dict[str, Pin] = {}
    for value, kind, conjuncts in bound_pairs(pool):
        owners = {col.table.lower() for col in value.find_all(exp.Column)}
        if single and owners <= {"", sources[0].alias}:
            owner: _Source | None = sources[0]
        elif len(owners) == 1 and "" not in owners:
            owner = next((s for s in sources if s.alias == next(iter(owners))), None)
        else:
            raise Unproven(f"cannot tell which source {shown(value.sql('spark'))} belongs to (qualify its columns)")
        if owner is None or owner.rel.bounded:
            raise Unproven(f"{shown(value.sql('spark'))}: a second filter on the bounds of one source")
        owner.rel = Rel(True, {value.name.lower(): Pin(0, kind)} if isinstance(value, exp.Column) else {})
        pins[_key(value, single)] = Pin(0, kind)
        proof.filters.append(shown(" AND ".join(c.sql("spark") for c in conjuncts)))
        for conjunct in conjuncts:
            conjunct.replace(exp.true())
    return pins


def bound_pairs(pool: list[exp.Expr]) -> Iterator[tuple[exp.Expr, Kind, list[exp.Expr]]]:
    """``(X, kind of g, conjuncts)`` for each ``X >= g(start) AND X < g(end)`` (or its closed forms) in ``pool``."""
    lows: dict[str, tuple[exp.Expr, exp.Expr, exp.Expr]] = {}
    highs: dict[str, tuple[exp.Expr, exp.Expr, exp.Expr]] = {}
    for conjunct in pool:
        if isinstance(conjunct, exp.Between) and _is_symbol(conjunct.args["low"], START) \
                and _is_end_minus_one(conjunct.args["high"]) and not _has_symbol(conjunct.this):
            yield conjunct.this, "number", [conjunct]
            continue
        side = _comparison(conjunct)
        if side is not None:
            bound, value, bound_expr = side
            (lows if bound == "low" else highs)[_key(value, False)] = (value, bound_expr, conjunct)
    for key, (value, low, low_conjunct) in lows.items():
        if key not in highs:
            continue
        _, high, high_conjunct = highs[key]
        kind = _monotone_kind(low, START)
        is_closed = _is_end_minus_one(high) and _is_symbol(low, START) and isinstance(high_conjunct, exp.LTE | exp.GTE)
        if is_closed or (isinstance(high_conjunct, exp.LT | exp.GT) and _same_shape(low, high)):
            yield value, kind, [low_conjunct, high_conjunct]


def _comparison(node: exp.Expr) -> tuple[str, exp.Expr, exp.Expr] | None:
    """``("low", X, g(start))`` for ``X >= g(start)``; ``("high", X, g(end))`` for ``X < g(end)`` / ``X <= end - 1``;
    either way round."""
    if not isinstance(node, exp.GTE | exp.LTE | exp.LT | exp.GT):
        return None
    left, right = node.this, node.expression
    flipped = _has_symbol(left) and not _has_symbol(right)
    value, bound = (right, left) if flipped else (left, right)
    if _has_symbol(value) or not _has_symbol(bound):
        return None
    op = {exp.GTE: ">=", exp.LTE: "<=", exp.LT: "<", exp.GT: ">"}[type(node)]
    if flipped:
        op = {">=": "<=", "<=": ">=", "<": ">", ">": "<"}[op]
    if op == ">=" and _only_symbol(bound) == START:
        return "low", value, bound
    if (op == "<" or (op == "<=" and _is_end_minus_one(bound))) and _only_symbol(bound) == END:
        return "high", value, bound
    return None


def _same_shape(low: exp.Expr, high: exp.Expr) -> bool:
    return low.sql("spark").replace(START, "b") == high.sql("spark").replace(END, "b") and \
        _monotone_kind(low, START) is not None


def _monotone_kind(bound: exp.Expr, symbol: str) -> Kind:
    """What ``g`` makes of a position, for a non-decreasing ``g``; raise Unproven if ``g`` may decrease."""
    node = _unparen(bound)
    if _is_symbol(node, symbol):
        return "number"
    if isinstance(node, exp.Anonymous) and node.name.lower() in _TIMESTAMP_FROM and len(node.expressions) == 1:
        inner = _monotone_kind(node.expressions[0], symbol)
        return _TIMESTAMP_FROM[node.name.lower()] if inner == "number" else "other"  # type: ignore[return-value]
    if isinstance(node, exp.Cast | exp.TryCast):
        inner, to = _monotone_kind(node.this, symbol), node.args["to"]
        if to.is_type(*exp.DataType.TEMPORAL_TYPES):
            return "seconds" if inner == "number" else "other"
        if to.is_type(*exp.DataType.NUMERIC_TYPES):
            return inner if inner == "number" else "other"
        raise Unproven(f"{shown(bound.sql('spark'))}: a cast the analysis does not order")
    if isinstance(node, exp.Add | exp.Sub | exp.Mul):
        symbolic, constant = (node.this, node.expression) if _has_symbol(node.this) else (node.expression, node.this)
        is_increasing = _is_positive(constant) if isinstance(node, exp.Mul) else (
            isinstance(constant, exp.Literal) and constant.is_number)
        if is_increasing and not (isinstance(node, exp.Sub) and symbolic is node.expression):
            _monotone_kind(symbolic, symbol)
            return "other"
    raise Unproven(f"{shown(bound.sql('spark'))}: not a non-decreasing function of the bounds")


def _is_positive(node: exp.Expr) -> bool:
    return isinstance(node, exp.Literal) and node.is_number and float(node.name) > 0


def _unparen(node: exp.Expr) -> exp.Expr:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _is_symbol(node: exp.Expr, symbol: str) -> bool:
    node = _unparen(node)
    return isinstance(node, exp.Column) and not node.table and node.name == symbol


def _is_end_minus_one(node: exp.Expr) -> bool:
    node = _unparen(node)
    return isinstance(node, exp.Sub) and _is_symbol(node.this, END) and node.expression.is_number and \
        node.expression.name == "1"


def _symbols(node: exp.Expr) -> set[str]:
    return {c.name for c in node.find_all(exp.Column) if c.name.startswith(f"{SYMBOL}v_")}


def _has_symbol(node: exp.Expr) -> bool:
    return bool(_symbols(node))


def _only_symbol(node: exp.Expr) -> str | None:
    found = _symbols(node)
    return next(iter(found)) if len(found) == 1 else None


def _key(node: exp.Expr, strip: bool) -> str:
    """A comparable text of an expression; without table qualifiers when the scope has one source."""
    node = node.copy()
    for identifier in node.find_all(exp.Identifier):
        identifier.set("quoted", False)
    if strip:
        for column in node.find_all(exp.Column):
            column.set("table", None)
    return node.sql("spark").lower()


def _joined(sources: list[_Source], pool: list[exp.Expr]) -> bool:
    """Whether the joined rows partition by interval: the kept side of every outer join is bounded, and two bounded
    sides meet only on equal pins."""
    if not sources:
        return False
    bounded, seen = sources[0].rel.bounded, [sources[0]]
    for source in sources[1:]:
        join, right = source.join, source.rel.bounded
        assert join is not None
        side, kind = join.side.upper(), join.kind.upper()
        if bounded and right and not _meet_on_pins(seen, source, pool + conjuncts(join.args.get("on")), join):
            raise Unproven(f"joins {source.alias} and another source both filtered by the bounds without equal "
                           "pins: over the whole range rows of different intervals would meet")
        kept_unbounded = (side in ("LEFT", "FULL") and right and not bounded) or (
            side in ("RIGHT", "FULL") and bounded and not right)
        if kept_unbounded or (kind in ("SEMI", "ANTI") and right and not bounded):
            raise Unproven(f"the {side or kind} JOIN of {source.alias} keeps rows of a source the bounds do not "
                           "filter: every run would repeat them")
        bounded = bounded or (right and kind not in ("SEMI", "ANTI"))
        seen.append(source)
    return bounded


def _meet_on_pins(left: list[_Source], right: _Source, conditions: list[exp.Expr], join: exp.Join) -> bool:
    pins = {_key(exp.column(n, table=s.alias), False): p for s in left for n, p in s.rel.pins.items()}
    mine = {_key(exp.column(n, table=right.alias), False): p for n, p in right.rel.pins.items()}
    using = {i.name.lower() for i in join.args.get("using") or []}
    if using & set(right.rel.pins) and any(n in using for s in left for n in s.rel.pins):
        return True
    for condition in conditions:
        if isinstance(condition, exp.EQ):
            a, b = _key(condition.this, False), _key(condition.expression, False)
            if (a in pins and b in mine and pins[a] == mine[b]) or (b in pins and a in mine and pins[b] == mine[a]):
                return True
    return False


# --- aggregations, windows, DISTINCT -----------------------------------------------------------------------------


def _own(nodes: Iterable[exp.Expr]) -> Iterator[exp.Expr]:
    """Nodes of this scope: not inside a nested query."""
    for root in nodes:
        yield from root.walk(prune=functools.partial(_is_nested, root))


def _is_nested(root: exp.Expr, node: exp.Expr) -> bool:
    return node is not root and isinstance(node, exp.Query | exp.Subquery)


def _groups_by_pins(select: exp.Select, pins: dict[str, Pin], single: bool, sources: list[_Source],
                    proof: Proof) -> None:
    """Every aggregation, window and DISTINCT of a bounded scope keeps each group inside one interval."""
    exprs = list(select.expressions)
    scope = [*exprs, *(select.args[k] for k in ("having", "qualify", "order") if select.args.get(k))]
    group = select.args.get("group")
    if group is not None and (group.args.get("rollup") or group.args.get("cube") or any(
            isinstance(e, exp.Rollup | exp.Cube | exp.GroupingSets) for e in group.expressions)):
        raise Unproven("ROLLUP/CUBE/GROUPING SETS add totals over every interval")
    if group is None and any(isinstance(n, exp.AggFunc) and not n.find_ancestor(exp.Window) for n in _own(scope)):
        raise Unproven("an aggregate without GROUP BY gathers every interval's rows into one")
    if group is not None:
        keys = [e for e in exprs if not any(isinstance(n, exp.AggFunc) for n in _own([e]))] \
            if group.args.get("all") else [_resolve(e, exprs) for e in group.expressions]
        _need_pin(keys, pins, single, "GROUP BY", proof)
    for window in (n for n in _own(scope) if isinstance(n, exp.Window)):
        if not window.args.get("partition_by"):
            raise Unproven(f"the window {shown(window.sql('spark'))} has no PARTITION BY: it spans every interval")
        _need_pin(window.args["partition_by"], pins, single, "PARTITION BY", proof)
    has_pinned_star = any(isinstance(e, exp.Star) for e in exprs) and any(s.rel.pins for s in sources)
    if select.args.get("distinct") and not has_pinned_star:
        _need_pin(exprs, pins, single, "DISTINCT", proof)


def _resolve(node: exp.Expr, exprs: list[exp.Expr]) -> exp.Expr:
    """A GROUP BY ordinal or select alias as the expression it names."""
    if isinstance(node, exp.Literal) and node.is_int and 1 <= int(node.name) <= len(exprs):
        return exprs[int(node.name) - 1]
    if isinstance(node, exp.Column) and not node.table:
        for e in exprs:
            if isinstance(e, exp.Alias) and e.alias.lower() == node.name.lower():
                return e
    return node


def _need_pin(keys: list[exp.Expr], pins: dict[str, Pin], single: bool, what: str, proof: Proof) -> Pin:
    for key in keys:
        pin = classify(key, pins, single)
        if pin is not None:
            proof.widths.add(pin.width)
            proof.groupings.append(shown(_unalias(key).sql("spark")) + (
                f" (buckets of {pin.width})" if pin.width > 1 else ""))
            if pin.is_local_hour:
                proof.assumptions.add("the Spark session's time zone is whole hours from UTC (date_trunc('HOUR'); the "
                                      "worker asks its session and runs a batch as union when it is not)")
            return pin
    listed = ", ".join(shown(_unalias(k).sql("spark")) for k in keys)
    hint = "".join(f"; date_trunc('{n.text('unit').upper()}') follows the session's time zone and daylight saving"
                   for k in keys for n in k.walk() if isinstance(n, exp.TimestampTrunc)
                   and n.text("unit").upper() not in _TRUNC_S)
    raise Unproven(f"{what} {listed}: no pin of the position (the filtered value, or a bucket of it no coarser than "
                   f"the interval), so a group would gather rows of several intervals{hint}")


def _unalias(node: exp.Expr) -> exp.Expr:
    return node.this if isinstance(node, exp.Alias) else node


def _output_pins(select: exp.Select, pins: dict[str, Pin], single: bool, sources: list[_Source]) -> dict[str, Pin]:
    out: dict[str, Pin] = {}
    for e in select.expressions:
        if isinstance(e, exp.Star) or (isinstance(e, exp.Column) and e.is_star):
            table = e.table.lower() if isinstance(e, exp.Column) else ""
            for source in sources:
                if source.rel.bounded and table in ("", source.alias):
                    out.update(source.rel.pins)
            continue
        pin = classify(e, pins, single)
        if pin is not None and e.alias_or_name:
            out[e.alias_or_name.lower()] = pin
    return out


def classify(node: exp.Expr, pins: dict[str, Pin], single: bool) -> Pin | None:
    """The pin ``node`` is in this scope: a pinned value, a bucket of one, or an injective function of one."""
    node = _unparen(_unalias(node))
    found = pins.get(_key(node, single))
    if found is not None:
        return found
    if isinstance(node, exp.TimestampTrunc):
        inner, unit = classify(node.this, pins, single), node.text("unit").upper()
        if inner is None or inner.width or inner.kind not in _SCALE or unit not in _TRUNC_S:
            return None
        return Pin(max(1, _TRUNC_S[unit] * _SCALE[inner.kind]), is_local_hour=unit == "HOUR")
    if isinstance(node, exp.UnixSeconds | exp.UnixMillis | exp.UnixMicros):
        inner = classify(node.this, pins, single)
        if inner is None or inner.width or inner.kind not in _SCALE:
            return None
        per_unit = {exp.UnixSeconds: 1, exp.UnixMillis: 1000, exp.UnixMicros: 1_000_000}[type(node)]
        ratio = _SCALE[inner.kind] // per_unit
        return Pin(0, "number") if ratio <= 1 else Pin(ratio)
    if isinstance(node, exp.Mul) and node.expression.is_int:
        inner = _bucket_index(node.this, pins, single)
        return inner if inner is not None and inner.width == int(node.expression.name) else None
    if isinstance(node, exp.Sub) and isinstance(_unparen(node.expression), exp.Mod):
        mod = _unparen(node.expression)
        is_same = _key(node.this, single) == _key(mod.this, single) and mod.expression.is_int
        if is_same and classify(node.this, pins, single) == Pin(0, "number") and int(mod.expression.name) > 0:
            return Pin(int(mod.expression.name))
        return None
    return _bucket_index(node, pins, single) or _injective(node, pins, single)


def _bucket_index(node: exp.Expr, pins: dict[str, Pin], single: bool) -> Pin | None:
    """``floor(P / w)`` or ``P DIV w`` of the position ``P``: buckets of ``w``."""
    node = _unparen(node)
    if isinstance(node, exp.Floor) and isinstance(_unparen(node.this), exp.Div):
        node = _unparen(node.this)
    elif not isinstance(node, exp.IntDiv):
        return None
    width = node.expression
    if width.is_int and int(width.name) > 0 and classify(node.this, pins, single) == Pin(0, "number"):
        return Pin(int(width.name))
    return None


def _injective(node: exp.Expr, pins: dict[str, Pin], single: bool) -> Pin | None:
    """``timestamp_seconds(P)`` of the position is the position as a timestamp; it, or a cast, of a bucket is the
    same bucket."""
    if isinstance(node, exp.Anonymous) and node.name.lower() in _TIMESTAMP_FROM and len(node.expressions) == 1:
        inner = classify(node.expressions[0], pins, single)
        kind: Kind = _TIMESTAMP_FROM[node.name.lower()]  # type: ignore[assignment]
    elif isinstance(node, exp.Cast | exp.TryCast) and node.args["to"].is_type(*exp.DataType.NUMERIC_TYPES,
                                                                                exp.DataType.Type.TIMESTAMP,
                                                                                exp.DataType.Type.TIMESTAMPTZ):
        inner = classify(node.this, pins, single)
        kind = "seconds" if node.args["to"].is_type(*exp.DataType.TEMPORAL_TYPES) else "number"
    else:
        return None
    if inner == Pin(0, "number"):
        return Pin(0, kind)
    return inner if inner is not None and inner.width else None
