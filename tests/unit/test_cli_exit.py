"""The ``cbt`` executable leaves the process without the interpreter's teardown once delta-rs is loaded: delta-rs's
native runtime can abort it there (``terminate called without an active exception``, exit code 134), as ``cbt checks
show`` did after printing its answer."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import atexit, sys
{preload}
atexit.register(lambda: print("teardown ran"))
sys.argv = ["cbt", "version"]
from cbt.cli import run
run()
"""


def cbt_version(preload: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", SCRIPT.format(preload=preload)], capture_output=True, text=True,
                          timeout=60)


def test_with_delta_rs_loaded_the_command_s_output_is_flushed_and_teardown_is_skipped() -> None:
    done = cbt_version("import deltalake")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Version: ") and "teardown ran" not in done.stdout


def test_without_delta_rs_the_process_exits_as_usual() -> None:
    done = cbt_version("")
    assert done.returncode == 0, done.stderr
    assert "Version: " in done.stdout and "teardown ran" in done.stdout
