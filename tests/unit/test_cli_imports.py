"""Every ``cbt`` command builds the whole parser (each distribution's ``register`` modules), so those modules import
only what parsing needs; a command imports its libraries when it runs, and ``cbt status`` / ``cbt plan`` never
import Spark, pandas, FastAPI or the Kafka clients. Checked in a fresh interpreter, where ``sys.modules`` shows
what a command really imported; a witness on the import system names the line that first imported each library."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "config.yaml"
UNREACHABLE_REDIS = "redis://127.0.0.1:1/0"
"""Nothing listens on port 1: the live commands fail at once, after importing everything they read Redis with."""

NEVER_FOR_PLANNING = ("pyspark", "pandas", "fastapi", "faststream", "confluent_kafka")
NEVER_FOR_HELP = (*NEVER_FOR_PLANNING, "pydantic", "redis", "jinja2", "opentelemetry")

PROBE = """
import contextlib, io, json, sys, traceback

watched = set(sys.argv[1].split(","))
commands = json.loads(sys.argv[2])
found = {}  # library -> [command, import chain through cbt's own files]
current = None


class Witness:
    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top in watched and top not in found:
            chain = [f"{f.filename}:{f.lineno}" for f in traceback.extract_stack()[:-1] if "/cbt/" in f.filename]
            found[top] = [current, " -> ".join(chain) or "(outside cbt)"]
        return None


sys.meta_path.insert(0, Witness())
from cbt.cli import main

codes = []
for argv in commands:
    current = " ".join(argv)
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            codes.append(main(argv))
        except SystemExit as e:
            codes.append(e.code)
print(json.dumps({"found": found, "codes": codes}))
"""


def imported(commands: list[list[str]], watched: tuple[str, ...]) -> tuple[dict[str, list[str]], list[int], str]:
    """The watched libraries the commands imported, run in turn in one fresh interpreter (with the command that
    first imported each and how), their exit codes, and what they wrote on stderr."""
    env = {**os.environ, "CBT__REDIS__URL": UNREACHABLE_REDIS}
    env.pop("CBT_CONFIG", None)
    run = subprocess.run([sys.executable, "-c", PROBE, ",".join(watched), json.dumps(commands)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.splitlines()[-1])
    return result["found"], result["codes"], run.stderr


def explain(found: dict[str, list[str]]) -> str:
    lines = [f"`cbt {command}` imported {library}: {chain.replace(f'{ROOT}/', '')}"
             for library, (command, chain) in found.items()]
    return "\n".join([*lines, "move the import into the function the command runs (its func), or under TYPE_CHECKING"])


def test_building_the_parser_imports_no_library_a_command_needs() -> None:
    found, codes, _ = imported([["--help"], ["run", "--help"], ["dev", "up", "--help"], ["version"]], NEVER_FOR_HELP)
    assert codes == [0, 0, 0, 0]
    assert not found, explain(found)


@pytest.mark.parametrize("command", ["status", "plan"])
def test_status_and_plan_import_neither_spark_nor_pandas_nor_fastapi_nor_kafka(tmp_path: Path, command: str) -> None:
    state = tmp_path / "state.json"
    state.write_text('{"bounds": {}, "coverage": {}, "now": 0}', encoding="utf-8")
    live = [command, "--json", "--config", str(CONFIG)]
    found, codes, err = imported([live, [*live, "--state", str(state)]], NEVER_FOR_PLANNING)
    # The live run got as far as reading Redis (so everything it reads Redis with was imported), the other one
    # computed the whole answer from the snapshot.
    assert codes == [1, 0] and f"cannot read live state from {UNREACHABLE_REDIS}" in err, err
    assert not found, explain(found)
