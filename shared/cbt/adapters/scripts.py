"""Model scripts as subprocesses: a minimal inherited environment, a timeout, and the stderr tail on failure.

A script runs in a process group of its own; when it times out or its run is cancelled, the whole group is killed,
so nothing it started keeps running (or writing) after the task has ended."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Mapping, Sequence

from cbt.base.errors import CbtError

STDERR_TAIL_CHARS = 2000
INHERITED = ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "VIRTUAL_ENV", "PYTHONPATH", "JAVA_HOME", "TMPDIR")
"""What a script inherits from the service: enough to find Python and its packages; never the service's secrets."""


class ScriptError(CbtError):
    """A script exited non-zero or timed out; the message carries the stderr tail."""


async def run_script(argv: Sequence[str], env: Mapping[str, str], timeout_s: float, cwd: str | None = None) -> str:
    """Run ``argv`` in ``cwd`` with the inherited basics plus ``env``; returns stdout, raises ``ScriptError``."""
    full_env = {**{k: v for k, v in os.environ.items() if k in INHERITED}, **env}
    # ``python3`` in a model's command means the service's own interpreter (and its packages, e.g. pyspark).
    full_env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), full_env.get("PATH", os.defpath)])
    proc = await asyncio.create_subprocess_exec(
        *argv, env=full_env, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, start_new_session=True, cwd=cwd,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout=timeout_s)
    except TimeoutError:
        await _kill_group(proc)
        raise ScriptError(f"{' '.join(argv)!r} timed out after {timeout_s:.0f}s") from None
    except asyncio.CancelledError:  # the run was stopped (lease lost): nothing of it may keep running
        await _kill_group(proc)
        raise
    if proc.returncode != 0:
        why = _error_text(err.decode(errors="replace"))
        raise ScriptError(f"{' '.join(argv)!r} exited with {proc.returncode}: {why}")
    return out.decode(errors="replace")


async def _kill_group(proc: asyncio.subprocess.Process) -> None:
    """SIGKILL the script and everything it started (its own process group), then reap it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    await asyncio.shield(proc.wait())


def _error_text(stderr: str) -> str:
    """The stderr tail, preceded by the first line naming an error when the tail lost it (long JVM traces)."""
    tail = stderr[-STDERR_TAIL_CHARS:]
    headline = next((line for line in stderr.splitlines() if "Error" in line or "Exception" in line), "")
    return tail if not headline or headline in tail else f"{headline[:STDERR_TAIL_CHARS // 2]}\n…\n{tail}"
