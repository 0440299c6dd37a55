"""What a change to a model means: its category with the reasons, and which descendants it reaches.

A change is classified by comparing the deployed definition with the files' (``cbt.models.versions``, canonical and
normalised, so formatting never counts):

- **breaking**: an existing column's expression changed or a column was removed, a filter, join, grouping or any
  other clause changed, or the interval, dependencies, write strategy or an exec model's command changed. The model
  recomputes, and so does every descendant that reads a changed column.
- **non-breaking**: only output columns were added. The model recomputes; its descendants do not.
- **metadata**: only what never changes rows (tags, schedules, …). Nothing recomputes.

Which columns a descendant reads of a parent comes from the parsed SQL (every column of every scope whose source is
the parent's table). Where that cannot be proven — an exec model, ``*`` over the parent, an unqualified column
beside several sources, more than one statement — the descendant recomputes whatever changed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.scope import Scope, build_scope

from cbt.models.spec import ModelId

Category = Literal["new", "breaking", "non-breaking", "metadata", "unchanged"]
Columns = frozenset[str] | None
"""Column names; ``None``: every column (not provable)."""
CLAUSES = {"where": "filter", "joins": "join", "group": "grouping", "having": "filter after grouping",
           "qualify": "window filter", "from": "source", "with": "common table expression", "distinct": "distinct",
           "order": "order", "limit": "limit", "laterals": "lateral view", "windows": "window definition"}
"""A SELECT's clauses by sqlglot's key, with the word a reason uses."""


@dataclass(frozen=True)
class Change:
    """One model's change: its category, why, and which of its output columns changed (``None``: all)."""

    model: ModelId
    category: Category
    reasons: tuple[str, ...] = ()
    changed_columns: Columns = frozenset()
    added_columns: tuple[str, ...] = ()

    @property
    def recomputes(self) -> bool:
        """Whether its rows are computed again (a new model has none yet)."""
        return self.category in ("breaking", "non-breaking")


def classify(model: ModelId, deployed: Mapping[str, Any] | None, files: Mapping[str, Any], *,
             metadata_changed: bool = False) -> Change:
    """``deployed`` and ``files``: canonical definitions (``versions.data_definition``); ``None``: never deployed."""
    if deployed is None:
        return Change(model, "new", ("not deployed before",))
    if deployed == files:
        return Change(model, "metadata", ("only metadata changed",)) if metadata_changed else Change(model, "unchanged")
    reasons = [f"{name} changed" for name in ("kind", "interval", "dependencies", "write")
               if deployed.get(name) != files.get(name)]
    if deployed.get("exec") != files.get("exec"):
        reasons.append("the exec command, its options or its files changed")
    if reasons or "sql" not in files or "sql" not in deployed:
        return Change(model, "breaking", tuple(reasons) or ("SQL became exec or exec became SQL",), None)
    return _sql_change(model, deployed["sql"], files["sql"])


def _sql_change(model: ModelId, deployed: Sequence[str], files: Sequence[str]) -> Change:
    old, new = _single_select(deployed), _single_select(files)
    if old is None or new is None:
        return Change(model, "breaking", ("SQL changed (not one SELECT: its columns cannot be compared)",), None)
    old_columns, new_columns = _projections(old), _projections(new)
    if old_columns is None or new_columns is None:
        return Change(model, "breaking", ("SQL changed (a * in the SELECT list: its columns cannot be compared)",),
                      None)
    reasons = [f"{CLAUSES[key]} changed" for key in CLAUSES if _clause(old, key) != _clause(new, key)]
    changed = [c for c in old_columns if c in new_columns and old_columns[c] != new_columns[c]]
    removed = [c for c in old_columns if c not in new_columns]
    added = tuple(c for c in new_columns if c not in old_columns)
    reasons += [f"column {c}: expression changed" for c in changed] + [f"column {c}: removed" for c in removed]
    if reasons:
        every = any(not r.startswith("column ") for r in reasons)
        return Change(model, "breaking", tuple(reasons), None if every else frozenset(changed + removed), added)
    if added:
        return Change(model, "non-breaking", tuple(f"column {c}: added" for c in added), frozenset(), added)
    return Change(model, "breaking", ("SQL changed (the columns' order)",), None)


def _single_select(statements: Sequence[str]) -> exp.Select | None:
    if len(statements) != 1:
        return None
    try:
        parsed = sqlglot.parse_one(statements[0], read="spark")
    except SqlglotError:
        return None
    return parsed if isinstance(parsed, exp.Select) else None


def _projections(select: exp.Select) -> dict[str, str] | None:
    out = {}
    for projection in select.expressions:
        if isinstance(projection, exp.Star) or (isinstance(projection, exp.Column) and projection.is_star):
            return None
        expression = projection.this if isinstance(projection, exp.Alias) else projection
        out[projection.alias_or_name] = expression.sql(dialect="spark")
    return out


def _clause(select: exp.Select, key: str) -> str:
    value = select.args.get(key)
    if isinstance(value, list):
        return ";".join(v.sql(dialect="spark") for v in value)
    return value.sql(dialect="spark") if isinstance(value, exp.Expression) else str(value or "")


# -- which columns of a parent a model reads ------------------------------------------------------------------------


def columns_read(statements: Sequence[str] | None, parent_table: str) -> Columns:
    """The columns of ``parent_table`` (``database.table``, as the rendered SQL names it) the statements read, in
    any clause; ``None`` when that cannot be proven."""
    if statements is None or len(statements) != 1:
        return None
    try:
        root = build_scope(sqlglot.parse_one(statements[0], read="spark"))
    except SqlglotError:
        return None
    if root is None:
        return None
    read: set[str] = set()
    for scope in root.traverse():
        names = _parent_aliases(scope, parent_table)
        if not names:
            continue
        if _star_over(scope, names):
            return None
        for column in scope.columns:
            source = column.table
            if source in names or (not source and len(scope.sources) == 1):
                read.add(column.name)
            elif not source:
                return None  # an unqualified column beside several sources: whose it is cannot be told
    return frozenset(read)


def _parent_aliases(scope: Scope, parent_table: str) -> set[str]:
    wanted = parent_table.lower().split(".")
    return {alias for alias, source in scope.sources.items()
            if isinstance(source, exp.Table) and [p.lower() for p in (source.db, source.name) if p] == wanted[-2:]}


def _star_over(scope: Scope, names: set[str]) -> bool:
    """Whether the scope's SELECT list has ``*``, or ``alias.*`` for the parent."""
    selects = scope.expression.selects if isinstance(scope.expression, exp.Select) else []
    for projection in selects:
        if isinstance(projection, exp.Star):
            return True
        if isinstance(projection, exp.Column) and projection.is_star and (not projection.table
                                                                           or projection.table in names):
            return True
    return False


# -- what a set of changes recomputes -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Impact:
    """Every model a deployment recomputes, each with why, in dependency order."""

    recompute: dict[ModelId, tuple[str, ...]] = field(default_factory=dict)
    unaffected: dict[ModelId, str] = field(default_factory=dict)
    """Descendants of a changed model that keep their rows, with why."""


def impact(changes: Mapping[ModelId, Change], order: Iterable[ModelId], parents: Mapping[ModelId, Sequence[ModelId]],
           statements: Mapping[ModelId, Sequence[str] | None], tables: Mapping[ModelId, str]) -> Impact:
    """Walk the models in dependency ``order``: a changed model recomputes per its category; a descendant recomputes
    when it reads a column its parent changed (``statements``: each model's rendered SQL, ``None`` for an exec model;
    ``tables``: the name its SQL uses for each model). A recomputed descendant passes on every column as changed
    unless it is unchanged itself (what it outputs from a changed column cannot be narrowed further here)."""
    changed_out: dict[ModelId, Columns] = {}
    recompute: dict[ModelId, tuple[str, ...]] = {}
    unaffected: dict[ModelId, str] = {}
    for model in order:
        change = changes.get(model)
        if change is not None and change.recomputes:
            recompute[model] = change.reasons
            changed_out[model] = change.changed_columns
            continue
        reasons = []
        for parent in parents.get(model, ()):
            changed = changed_out.get(parent, frozenset())
            if changed is not None and not changed:
                continue
            read = columns_read(statements.get(model), tables[parent])
            if read is None:
                reasons.append(f"reads {parent} (which columns cannot be proven)")
            elif changed is None:
                reasons.append(f"reads {parent}, whose rows all changed")
            elif read & changed:
                reasons.append(f"reads {', '.join(sorted(read & changed))} of {parent}")
            else:
                unaffected[model] = f"reads none of the changed columns of {parent}"
        if reasons:
            recompute[model] = tuple(reasons)
            changed_out[model] = None
            unaffected.pop(model, None)
    return Impact(recompute, unaffected)
