"""``cbt run <service>``: one service per process; ``cbt run all`` supervises one of each installed service.

Each service is its own distribution (``cbt-worker``, …) and announces itself through the ``cbt.services`` entry
points; it also has its own command, ``cbt-<service>``, with the same options. Running one is
``cbt.service.process``'s: this module only parses and supervises.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
from typing import Any

from cbt.base.errors import CbtError
from cbt.service.process import (
    PORT_OFFSET,
    SHUTDOWN_SLACK_S,
    add_run_options,
    installed_services,
    run_service,
)
from cbt.service.process import offset_addr as _offset_addr

__all__ = ["PORT_OFFSET", "SHUTDOWN_SLACK_S", "_offset_addr", "add_run_options", "cmd_run", "register"]


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("run", help="run a service (coordinator, worker, bounds-cache, ...) or all",
                       description="Runs a service, or every installed one (all), with /healthz and /readyz (and the "
                       "original CBT's /health and /ready) on health_addr plus the service's offset, or "
                       "--health-addr. The same as cbt-<service>; cbt --config FILE with no command runs them all, "
                       "as the original CBT's binary did.")
    p.add_argument("service", choices=[*PORT_OFFSET, "all"])
    add_run_options(p)
    p.set_defaults(func=cmd_run)


def cmd_run(args: argparse.Namespace) -> int:
    if args.service != "all":
        return run_service(args.service, args)
    from cbt.models.loader import load_project

    load_project(args.config)  # (a mistake in the config or the models is told once, here)
    return _supervise(args)


def _supervise(args: argparse.Namespace) -> int:
    """Start one process per service; stop them all when one exits (with ``--until-idle``: when one fails, else
    once all have gone idle) or on SIGINT/SIGTERM."""
    base = [sys.executable, "-m", "cbt.cli", "run"]
    extra = ["--config", args.config] if args.config else []
    if args.until_idle is not None:
        extra += [f"--until-idle={args.until_idle:g}"]
    installed = installed_services()
    names = [name for name in PORT_OFFSET if name in installed]
    if not names:
        raise CbtError("no service is installed in this environment (cbt-coordinator, cbt-worker, …)")
    children = [subprocess.Popen([*base, name, *extra]) for name in names]
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True
        for child in children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)

    def is_running() -> bool:
        codes = [child.poll() for child in children]
        if args.until_idle is not None:
            return any(code is None for code in codes) and not any(codes)
        return all(code is None for code in codes)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while not stopping and is_running():
        signal.sigtimedwait([signal.SIGCHLD], 1.0)
    stop()
    codes = [child.wait() for child in children]
    return max((c for c in codes if c and c > 0), default=0)
