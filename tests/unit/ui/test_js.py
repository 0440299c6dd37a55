"""The UI's pure JavaScript (formatting, the timeline's scale and ticks, the DAG layout) under node's test runner,
and a syntax check of every module the pages load."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from cbt.api.ui.shells import STATIC_DIR

HERE = Path(__file__).resolve().parent
MODULES = sorted((STATIC_DIR / "js").rglob("*.js"))


def _node() -> str:
    node = shutil.which("node")
    assert node, "node (Node.js >= 20) is needed to test the web UI's JavaScript; install it (Debian: nodejs)"
    return node


def test_pure_modules_pass_their_node_tests() -> None:
    run = subprocess.run([_node(), "--test", *sorted(str(p) for p in (HERE / "js").glob("*.test.mjs"))],
                         capture_output=True, text=True, timeout=120, cwd=HERE)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    passed = re.search(r"^# pass (\d+)$", run.stdout, re.MULTILINE)
    assert passed and int(passed.group(1)) >= 20, run.stdout[-2000:]


@pytest.mark.parametrize("module", MODULES, ids=lambda p: p.relative_to(STATIC_DIR).as_posix())
def test_module_parses(module: Path) -> None:
    run = subprocess.run([_node(), "--experimental-default-type=module", "--check", str(module)],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
