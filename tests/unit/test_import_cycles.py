"""No module of ``cbt`` imports itself back through others: the layer contract (``.importlinter``) keeps packages
from importing upward, and this keeps the files inside a package from importing each other in a circle (imports
inside functions count: they are how such circles used to hide)."""

from __future__ import annotations

import grimp


def test_no_module_imports_itself_back() -> None:
    graph = grimp.build_graph("cbt")
    circles = [sorted(group) for group in strongly_connected(
        {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}) if len(group) > 1]
    assert circles == [], f"modules that import each other, directly or through others: {circles}"


def strongly_connected(edges: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's algorithm, iterative: the groups of nodes each reachable from every other in its group."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    groups: list[set[str]] = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(edges.get(root, ())))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges.get(child, ()))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                groups.append(group)
    return groups


def test_the_search_finds_a_circle_through_three_modules() -> None:
    groups = strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}})
    assert {"a", "b", "c"} in groups and {"d"} in groups
