"""Model scripts as subprocesses: a minimal inherited environment, a timeout, output kept to a bound, and the stderr
tail on failure.

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
OUTPUT_LIMIT_BYTES = 1024 * 1024
"""Of a script's stdout the first this many bytes are kept (what it returns: a bounds script's JSON), of its stderr
the first and the last (the error's headline and tail); the rest is read and dropped."""
INHERITED = ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "VIRTUAL_ENV", "PYTHONPATH", "JAVA_HOME", "TMPDIR")
"""What a script inherits from the service: enough to find Python and its packages; never the service's secrets."""
INFRASTRUCTURE_PREFIXES = ("CBT_", "KAFKA_", "REDIS_", "SPARK_AUTH", "SPARK_CONNECT_AUTHENTICATE")
"""Names of the service's own settings and credentials (``CBT__…`` overrides, ``CBT_KAFKA_PASSWORD``,
``CBT_REDIS_PASSWORD``, the images' ``KAFKA_PASSWORD``…): ``inherit_env: true`` passes everything else, and these
only when the model lists them by name."""


def inherited_environment(inherit_env: bool | Sequence[str], environ: Mapping[str, str]) -> dict[str, str]:
    """What a script gets of the service's environment: the basics; with ``inherit_env: true`` all of it but the
    infrastructure's settings and credentials; with a list of names, the basics and those names (any of them)."""
    if inherit_env is True:
        return {k: v for k, v in environ.items() if not k.startswith(INFRASTRUCTURE_PREFIXES)}
    listed = set(inherit_env) if not isinstance(inherit_env, bool) else set()
    return {k: v for k, v in environ.items() if k in INHERITED or k in listed}


class ScriptError(CbtError):
    """A script exited non-zero or timed out; the message carries the stderr tail."""


async def run_script(
    argv: Sequence[str], env: Mapping[str, str], timeout_s: float, cwd: str | None = None,
    inherit_env: bool | Sequence[str] = False,
) -> str:
    """Run ``argv`` in ``cwd`` with what it inherits of the service's environment (``inherited_environment``) plus
    ``env``; returns stdout, raises ``ScriptError``."""
    inherited = inherited_environment(inherit_env, os.environ)
    full_env = {**inherited, **env}
    # ``python3`` in a model's command means the service's own interpreter (and its packages, e.g. pyspark).
    full_env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), full_env.get("PATH", os.defpath)])
    proc = await asyncio.create_subprocess_exec(
        *argv, env=full_env, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, start_new_session=True, cwd=cwd,
    )
    assert proc.stdout is not None and proc.stderr is not None
    try:
        (out, _), (err_head, err), _ = await asyncio.wait_for(
            asyncio.gather(_capped(proc.stdout), _capped(proc.stderr), proc.wait()), timeout=timeout_s)
    except TimeoutError:
        await _kill_group(proc)
        raise ScriptError(f"{' '.join(argv)!r} timed out after {timeout_s:.0f}s") from None
    except asyncio.CancelledError:  # the run was stopped (lease lost): nothing of it may keep running
        await _kill_group(proc)
        raise
    if proc.returncode != 0:
        why = _error_text(err.decode(errors="replace"), err_head.decode(errors="replace"))
        raise ScriptError(f"{' '.join(argv)!r} exited with {proc.returncode}: {why}")
    return out.decode(errors="replace")


async def _capped(stream: asyncio.StreamReader, limit: int = OUTPUT_LIMIT_BYTES) -> tuple[bytes, bytes]:
    """Read ``stream`` to its end keeping only its first and its last ``limit`` bytes: a script that prints
    gigabytes costs the service a pipe's worth of memory, not what it printed."""
    head, tail = bytearray(), bytearray()
    while chunk := await stream.read(64 * 1024):
        if len(head) < limit:
            head += chunk[:limit - len(head)]
        tail += chunk
        del tail[:-limit]
    return bytes(head), bytes(tail)


async def _kill_group(proc: asyncio.subprocess.Process) -> None:
    """SIGKILL the script and everything it started (its own process group), then reap it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    await asyncio.shield(proc.wait())


def _error_text(stderr: str, head: str = "") -> str:
    """The stderr tail, preceded by the first line naming an error when the tail lost it (long JVM traces); ``head``:
    the start of stderr when only its ends were kept."""
    tail = stderr[-STDERR_TAIL_CHARS:]
    headline = next((line for line in (head or stderr).splitlines() if "Error" in line or "Exception" in line), "")
    return tail if not headline or headline in tail else f"{headline[:STDERR_TAIL_CHARS // 2]}\n…\n{tail}"
