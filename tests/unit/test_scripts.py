"""Model scripts as subprocesses (``cbt.adapters.scripts``): a script that times out, or whose run is cancelled,
leaves nothing running — not even what it started in the background."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from cbt.adapters.scripts import OUTPUT_LIMIT_BYTES, STDERR_TAIL_CHARS, ScriptError, run_script

# Starts a grandchild that would outlive its parent, writes its pid, then waits on it.
SPAWNS_A_SLEEPER = 'sleep 300 & echo $! > "$PID_FILE"; wait'


def _is_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat").read_text().split()[2] if Path(f"/proc/{pid}/stat").exists() else "X"
    return status not in ("Z", "X")  # a zombie waiting for its reaper has stopped running


def _grandchild(pid_file: Path) -> int:
    for _ in range(100):
        if pid_file.exists() and pid_file.read_text().strip():
            return int(pid_file.read_text())
        time.sleep(0.05)
    raise AssertionError("the script never started its child")


def _gone(pid: int) -> bool:
    for _ in range(100):
        if not _is_running(pid):
            return True
        time.sleep(0.05)
    return False


def test_a_script_that_times_out_is_killed_with_everything_it_started(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    with pytest.raises(ScriptError, match="timed out after 1s"):
        asyncio.run(run_script(["sh", "-c", SPAWNS_A_SLEEPER], {"PID_FILE": str(pid_file)}, 1.0))
    assert _gone(_grandchild(pid_file)), "the script's child outlived the timeout"


def test_a_cancelled_run_kills_the_script_and_everything_it_started(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"

    async def scenario() -> None:
        run = asyncio.create_task(run_script(["sh", "-c", SPAWNS_A_SLEEPER], {"PID_FILE": str(pid_file)}, 300.0))
        await asyncio.to_thread(_grandchild, pid_file)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run

    asyncio.run(scenario())
    assert _gone(_grandchild(pid_file)), "the script's child outlived the cancelled run"


def test_a_failing_script_reports_its_exit_code_and_stderr() -> None:
    with pytest.raises(ScriptError, match=r"exited with 3: .*no such table"):
        asyncio.run(run_script(["sh", "-c", "echo 'no such table' >&2; exit 3"], {}, 10.0))


def test_a_script_that_prints_without_end_is_kept_to_a_bound_and_its_error_keeps_headline_and_tail() -> None:
    """Output was buffered whole: a script printing gigabytes took the service's memory with it."""
    loud = "head -c 20000000 /dev/zero | tr '\\0' x; echo 'FatalError: first' >&2; head -c 20000000 /dev/zero >&2"
    out = asyncio.run(run_script(["sh", "-c", loud], {}, 60.0))
    assert len(out) == OUTPUT_LIMIT_BYTES and set(out) == {"x"}
    with pytest.raises(ScriptError) as info:
        asyncio.run(run_script(["sh", "-c", f"{loud}; echo 'the end' >&2; exit 4"], {}, 60.0))
    assert "exited with 4: FatalError: first" in str(info.value) and str(info.value).endswith("the end\n")
    assert len(str(info.value)) < 3 * STDERR_TAIL_CHARS


def test_only_the_basics_of_the_services_environment_unless_inherit_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MODEL_SETTING", "from-the-service")
    monkeypatch.setenv("CBT_REDIS_PASSWORD", "hunter2-hunter2")
    monkeypatch.setenv("CBT__API__AUTH__TOKENS", "[t0ken]")
    monkeypatch.setenv("KAFKA_PASSWORD", "kafka-secret")
    show = ["sh", "-c", 'echo "${MODEL_SETTING:-unset} ${CBT_REDIS_PASSWORD:-unset} ${CBT__API__AUTH__TOKENS:-unset} '
            '${KAFKA_PASSWORD:-unset} $PATH"']
    isolated = asyncio.run(run_script(show, {}, 10.0)).split()
    inherited = asyncio.run(run_script(show, {}, 10.0, inherit_env=True)).split()
    listed = asyncio.run(run_script(show, {}, 10.0, inherit_env=["CBT_REDIS_PASSWORD"])).split()
    assert isolated[:4] == ["unset"] * 4 and isolated[4]  # PATH is one of the basics
    assert inherited[:4] == ["from-the-service", "unset", "unset", "unset"], \
        "inherit_env: true passes the service's environment, never the infrastructure's credentials"
    assert listed[:4] == ["unset", "hunter2-hunter2", "unset", "unset"] and listed[4], "a listed name is passed"
