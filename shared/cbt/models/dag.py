"""The validated set of models and the dependency graph between them.

Edges point from a model to what it depends on; OR-group members are edges too (any of them may feed the model).
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from cbt.base.errors import CbtError, Problem
from cbt.models.spec import (
    ExternalModel,
    IncrementalModel,
    Model,
    ModelId,
    ScheduledModel,
    all_dependency_ids,
)


class UnknownModel(CbtError):
    """A model named on the command line or in a request does not exist."""


@dataclass(frozen=True)
class ModelSet:
    """Every enabled model by id, with graph queries. Build it with ``cbt.models.loader.load_models``."""

    models: Mapping[ModelId, Model]
    external_database: str | None = None
    transformation_database: str | None = None
    warnings: tuple[Problem, ...] = ()
    _dependents: dict[ModelId, tuple[ModelId, ...]] = field(default_factory=dict, repr=False, compare=False)
    _order: list[ModelId] = field(default_factory=list, repr=False, compare=False)
    _rank: dict[ModelId, int] = field(default_factory=dict, repr=False, compare=False)
    _levels_below: dict[ModelId, int] = field(default_factory=dict, repr=False, compare=False)
    _levels_above: dict[ModelId, int] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        """The graph queries' indexes, built once per load in O(N + E) (a tick or an invalidation only reads them)."""
        dependents: dict[ModelId, list[ModelId]] = {model_id: [] for model_id in self.models}
        for model_id in sorted(self.models):
            for dep in dict.fromkeys(all_dependency_ids(self.models[model_id])):
                if dep in dependents:
                    dependents[dep].append(model_id)
        self._dependents.update({k: tuple(v) for k, v in dependents.items()})
        self._order.extend(topological_order({m: self.dependencies(m) for m in self.models}))
        self._rank.update({model_id: rank for rank, model_id in enumerate(self._order)})
        for node in reversed(self._order):  # (dependents first)
            self._levels_below[node] = max((self._levels_below[d] + 1 for d in self._dependents[node]), default=0)
        for node in self._order:  # (dependencies first; an external is no level of a chain)
            self._levels_above[node] = max((self._levels_above[d] + 1 for d in self.dependencies(node)
                                            if not isinstance(self.models[d], ExternalModel)), default=0)

    def __contains__(self, model_id: object) -> bool:
        return model_id in self.models

    def __iter__(self) -> Iterator[Model]:
        return iter(self.models[k] for k in sorted(self.models))

    def __len__(self) -> int:
        return len(self.models)

    def get(self, model_id: ModelId) -> Model:
        try:
            return self.models[model_id]
        except KeyError:
            raise UnknownModel(f"no model {model_id!r}") from None

    @property
    def externals(self) -> list[ExternalModel]:
        return [m for m in self if isinstance(m, ExternalModel)]

    @property
    def incrementals(self) -> list[IncrementalModel]:
        return [m for m in self if isinstance(m, IncrementalModel)]

    @property
    def scheduled(self) -> list[ScheduledModel]:
        return [m for m in self if isinstance(m, ScheduledModel)]

    def dependencies(self, model_id: ModelId) -> tuple[ModelId, ...]:
        """Direct dependencies, OR-group members included, each once."""
        return tuple(dict.fromkeys(all_dependency_ids(self.get(model_id))))

    def dependents(self, model_id: ModelId) -> tuple[ModelId, ...]:
        """Models that depend directly on ``model_id``."""
        try:
            return self._dependents[model_id]
        except KeyError:
            raise UnknownModel(f"no model {model_id!r}") from None

    def descendants(self, model_id: ModelId) -> tuple[ModelId, ...]:
        """Every model downstream of ``model_id`` (not itself), parents before children."""
        return self._in_order(_reach(model_id, self.dependents))

    def levels_below(self, model_id: ModelId) -> int:
        """The longest chain of dependents below ``model_id`` (0 for a model nothing depends on)."""
        try:
            return self._levels_below[model_id]
        except KeyError:
            raise UnknownModel(f"no model {model_id!r}") from None

    def chain_length(self, model_id: ModelId) -> int:
        """Of a transformation: the levels in the longest chain of transformations through it, less one — 0 when no
        other transformation depends on it or feeds it, 2 for each of three that feed one another in a line."""
        try:
            return self._levels_above[model_id] + self._levels_below[model_id]
        except KeyError:
            raise UnknownModel(f"no model {model_id!r}") from None

    def ancestors(self, model_id: ModelId) -> tuple[ModelId, ...]:
        """Every model upstream of ``model_id`` (not itself), parents before children."""
        return self._in_order(_reach(model_id, self.dependencies))

    def topological_order(self) -> tuple[ModelId, ...]:
        """Dependencies before dependents; ties in id order, so the order is stable."""
        return tuple(self._order)

    def _in_order(self, models: set[ModelId]) -> tuple[ModelId, ...]:
        """``models`` in topological order (models on a cycle, which validation rejects, are left out)."""
        return tuple(sorted((m for m in models if m in self._rank), key=self._rank.__getitem__))

    def resolve(self, name: str) -> ModelId:
        """An id from ``db.table``, ``{{external}}.table``, ``{{transformation}}.table`` or a unique bare table."""
        for placeholder, database in (
            ("{{external}}", self.external_database),
            ("{{transformation}}", self.transformation_database),
        ):
            if name.startswith(placeholder + ".") and database is not None:
                name = database + name[len(placeholder) :]
        if name in self.models:
            return name
        matches = sorted(m.id for m in self.models.values() if m.table == name)
        if len(matches) == 1:
            return matches[0]
        if matches:
            raise UnknownModel(f"{name!r} is ambiguous: {', '.join(matches)}; use database.table")
        raise UnknownModel(f"no model {name!r}")


def _reach(start: ModelId, step: Callable[[ModelId], tuple[ModelId, ...]]) -> set[ModelId]:
    seen: set[ModelId] = set()
    queue = deque([start])
    while queue:
        for nxt in step(queue.popleft()):
            if nxt not in seen and nxt != start:
                seen.add(nxt)
                queue.append(nxt)
    return seen


def topological_order(graph: Mapping[ModelId, tuple[ModelId, ...]]) -> tuple[ModelId, ...]:
    """Kahn's algorithm over ``node → its dependencies``; edges to unknown nodes are ignored; cycles are left out."""
    pending = {n: {d for d in deps if d in graph and d != n} for n, deps in graph.items()}
    users: dict[ModelId, list[ModelId]] = {n: [] for n in graph}
    for node, deps in pending.items():
        for dep in deps:
            users[dep].append(node)
    ready = sorted(n for n, deps in pending.items() if not deps)  # a sorted list is a heap
    out: list[ModelId] = []
    while ready:
        node = heapq.heappop(ready)
        out.append(node)
        for user in users[node]:
            pending[user].discard(node)
            if not pending[user]:
                heapq.heappush(ready, user)
    return tuple(out)


def find_cycles(graph: Mapping[ModelId, tuple[ModelId, ...]]) -> list[list[ModelId]]:
    """One cycle per strongly connected component that has one, each as ``[a, b, …, a]`` starting at its
    smallest id. Edges to unknown nodes are ignored."""
    cycles = []
    for component in _components(graph):
        members = set(component)
        start = min(component)
        if len(component) == 1 and start not in graph[start]:
            continue
        cycles.append(_cycle_from(start, graph, members))
    return sorted(cycles)


def _cycle_from(start: ModelId, graph: Mapping[ModelId, tuple[ModelId, ...]], members: set[ModelId]) -> list[str]:
    """Shortest path from ``start`` back to itself inside one component (BFS)."""
    parents: dict[ModelId, ModelId] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for dep in sorted(set(graph[node]) & members):
            if dep == start:
                path = [node]
                while path[-1] != start:
                    path.append(parents[path[-1]])
                return [start, *reversed(path[:-1]), start]
            if dep not in parents:
                parents[dep] = node
                queue.append(dep)
    raise AssertionError("a strongly connected component always holds a cycle")


def _components(graph: Mapping[ModelId, tuple[ModelId, ...]]) -> list[list[ModelId]]:
    """Tarjan's strongly connected components, iteratively (no recursion limit on long chains)."""
    index: dict[ModelId, int] = {}
    low: dict[ModelId, int] = {}
    stack: list[ModelId] = []
    on_stack: set[ModelId] = set()
    out: list[list[ModelId]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(d for d in graph[root] if d in graph)))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    out.append(component)
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(d for d in graph[child] if d in graph))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return out
