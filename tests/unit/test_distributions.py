"""Each distribution imports only what it declares, across the shared ``cbt`` namespace too.

Third-party imports are deptry's (``make lint``); deptry counts every ``cbt.*`` import as first party, so this test
checks those: a module of ``cbt-worker`` may import ``cbt.models`` (cbt-core, declared) but not ``cbt.dev``. Production
code never imports the test doubles (the in-memory twins in ``tests.twins``), which no distribution ships.
"""

from __future__ import annotations

import ast
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def workspace_members() -> list[Path]:
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["uv"]["workspace"]["members"]
    return sorted(path for pattern in patterns for path in ROOT.glob(pattern) if (path / "pyproject.toml").is_file())


@dataclass(frozen=True)
class Distribution:
    name: str
    root: Path
    requires: frozenset[str]

    @property
    def portions(self) -> set[str]:
        """The names directly under ``cbt`` this distribution ships (``worker``, ``models``, ``base``, …)."""
        return {p.stem for p in (self.root / "cbt").iterdir() if p.suffix == ".py" or (p / "__init__.py").is_file()}

    def modules(self) -> list[Path]:
        return sorted((self.root / "cbt").rglob("*.py"))


def _requirement_name(spec: str) -> str:
    match = re.match(r"[A-Za-z0-9._-]+", spec)
    assert match, spec
    return match.group(0).lower().replace("_", "-")


def load_distribution(member: Path) -> Distribution:
    project = tomllib.loads((member / "pyproject.toml").read_text())["project"]
    return Distribution(project["name"], member,
                        frozenset(_requirement_name(d) for d in project.get("dependencies", [])))


def absolute_imports(path: Path) -> list[tuple[int, str]]:
    """Every module a module imports (at any depth, type-checking imports included), with its line."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "cbt":
                found += [(node.lineno, f"cbt.{alias.name}") for alias in node.names]
            else:
                found.append((node.lineno, node.module))
    return found


def cbt_imports(path: Path) -> list[tuple[int, str]]:
    """Every ``cbt.<portion>`` a module imports, with its line."""
    return [(line, name.split(".")[1]) for line, name in absolute_imports(path) if name.startswith("cbt.")]


def undeclared_imports(dist: Distribution, providers: dict[str, str]) -> list[str]:
    problems = []
    for module in dist.modules():
        for line, portion in cbt_imports(module):
            provider = providers.get(portion)
            where = f"{module.relative_to(dist.root)}:{line}"
            if provider is None:
                problems.append(f"{where}: cbt.{portion} is in no distribution")
            elif provider != dist.name and provider not in dist.requires:
                problems.append(f"{where}: cbt.{portion} is {provider}'s, which {dist.name} does not declare")
        for line, name in absolute_imports(module):
            if name == "tests" or name.startswith("tests."):
                problems.append(f"{module.relative_to(dist.root)}:{line}: production code imports {name}, which "
                                f"no distribution ships (the test doubles live in tests/)")
    return problems


DISTRIBUTIONS = [load_distribution(m) for m in workspace_members()]
PROVIDERS = {portion: dist.name for dist in DISTRIBUTIONS for portion in dist.portions}


def test_every_portion_of_the_namespace_has_one_owner() -> None:
    assert len(DISTRIBUTIONS) == 7, [d.name for d in DISTRIBUTIONS]
    owners: dict[str, list[str]] = {}
    for dist in DISTRIBUTIONS:
        for portion in dist.portions:
            owners.setdefault(portion, []).append(dist.name)
    assert {p: names for p, names in owners.items() if len(names) > 1} == {}
    assert not any((dist.root / "cbt" / "__init__.py").exists() for dist in DISTRIBUTIONS), \
        "cbt must stay a namespace package (PEP 420): no distribution may ship cbt/__init__.py"


@pytest.mark.parametrize("dist", DISTRIBUTIONS, ids=lambda d: d.name)
def test_a_distribution_imports_only_the_cbt_portions_it_declares(dist: Distribution) -> None:
    assert undeclared_imports(dist, PROVIDERS) == []


def test_the_check_catches_an_undeclared_portion_and_the_test_doubles(tmp_path: Path) -> None:
    (tmp_path / "cbt" / "lonely").mkdir(parents=True)
    (tmp_path / "cbt" / "lonely" / "__init__.py").write_text("")
    (tmp_path / "cbt" / "lonely" / "app.py").write_text(
        "from cbt.models.spec import ModelId\nimport cbt.dev.stack\nfrom tests.twins import memory_state\n")
    lonely = Distribution("cbt-lonely", tmp_path, frozenset({"cbt-core"}))
    assert undeclared_imports(lonely, {**PROVIDERS, "lonely": "cbt-lonely"}) == [
        "cbt/lonely/app.py:2: cbt.dev is cbt-dev's, which cbt-lonely does not declare",
        "cbt/lonely/app.py:3: production code imports tests.twins, which no distribution ships (the test doubles "
        "live in tests/)",
    ]


def entry_points_declared(group: str) -> list[tuple[str, str, str]]:
    """(distribution, name, module) of every entry in ``group`` across the workspace's pyproject files."""
    found = []
    for dist in DISTRIBUTIONS:
        project = tomllib.loads((dist.root / "pyproject.toml").read_text())["project"]
        found += [(dist.name, name, module) for name, module in project.get("entry-points", {}).get(group, {}).items()]
    return found


@pytest.mark.parametrize(("group", "attribute", "expected"), [
    ("cbt.commands", "register", {"admin", "bounds", "checks", "dev", "import-cbt", "init", "models", "override",
                                  "plan", "rerun", "rows", "run", "schema"}),
    ("cbt.services", "serve", {"coordinator", "worker", "bounds-cache", "invalidator", "api"}),
])
def test_every_entry_point_names_a_module_of_its_own_distribution(group: str, attribute: str,
                                                                   expected: set[str]) -> None:
    import importlib

    entries = entry_points_declared(group)
    assert {name for _, name, _ in entries} == expected
    for dist_name, _, module in entries:
        assert PROVIDERS[module.split(".")[1]] == dist_name, module
        assert callable(getattr(importlib.import_module(module), attribute)), module
