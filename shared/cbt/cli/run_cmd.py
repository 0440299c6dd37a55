"""``cbt run <service>``: one service per process; ``cbt run all`` supervises one of each installed service.

Each service is its own distribution (``cbt-worker``, …) and announces itself through the ``cbt.services`` entry
points (name = module with ``serve``); it also has its own command, ``cbt-<service>``, with the same options.
A service's modules (and config and models) are imported only when it runs, not when the parser is built.
"""

from __future__ import annotations

import argparse
import faulthandler
import importlib
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from importlib.metadata import entry_points
from types import ModuleType
from typing import Any

from cbt.base.errors import CbtError

SERVICE_GROUP = "cbt.services"
PORT_OFFSET = {"coordinator": 0, "worker": 1, "bounds-cache": 2, "invalidator": 3, "api": 4}
"""Every service this project has, with the offset of its health and metrics ports from ``health_addr`` and
``metrics_addr``."""


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("run", help="run a service: coordinator, worker, bounds-cache, invalidator, api, or all")
    p.add_argument("service", choices=[*PORT_OFFSET, "all"])
    add_run_options(p)
    p.set_defaults(func=cmd_run)


def add_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", metavar="FILE", help="config file (default: $CBT_CONFIG or ./config.yaml)")
    p.add_argument("--health-addr", metavar="HOST:PORT",
                   help="where /healthz and /readyz answer (default: health_addr, port offset per service; :0 picks)")
    p.add_argument("--metrics-addr", metavar="HOST:PORT",
                   help="where Prometheus scrapes /metrics (default: metrics_addr, port offset per service; :0 picks; "
                        "'off': none)")


def service_main(service: str, argv: Sequence[str] | None = None) -> int:
    """``cbt-<service> [--config FILE] [--health-addr HOST:PORT]``: the service's own command."""
    parser = argparse.ArgumentParser(prog=f"cbt-{service}",
                                     description=f"Run the {service} service (docs/design/services.md#services).")
    add_run_options(parser)
    args = parser.parse_args(argv)
    args.service = service
    try:
        return cmd_run(args)
    except CbtError as e:
        print(f"cbt-{service}: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def installed_services() -> dict[str, str]:
    """Service name -> module with ``serve``, for every service distribution installed in this environment."""
    return {entry.name: entry.value for entry in entry_points(group=SERVICE_GROUP)}


def service_module(service: str) -> ModuleType:
    module = installed_services().get(service)
    if module is None:
        raise CbtError(f"the {service} service is not installed in this environment (its distribution: cbt-{service})")
    return importlib.import_module(module)


SHUTDOWN_SLACK_S = 4.0
"""Beyond the shutdown timeout, time to interrupt what still runs and commit what ended; then the process exits
regardless (what it had not committed is delivered again elsewhere): every service exits within the shutdown
timeout + 5 s of SIGTERM."""
THREAD_GRACE_S = 1.5
"""Once a service has stopped, how long calls still running in its threads may take before they are abandoned."""


def cmd_run(args: argparse.Namespace) -> int:
    import asyncio

    from cbt.models.loader import load_project

    config, models = load_project(args.config)
    if args.service == "all":
        return _supervise(args)
    module = service_module(args.service)
    from cbt.adapters import telemetry
    from cbt.adapters.runtime import (
        abandon_threads_after,
        exit_when_stuck,
        install_stop_signals,
        instance_id,
        setup_logging,
    )

    setup_logging(config)
    faulthandler.enable(all_threads=True)  # a native crash on a Python thread logs every thread's stack
    health_addr = args.health_addr or _offset_addr(config.health_addr, PORT_OFFSET[args.service])
    metrics_addr = args.metrics_addr or _offset_addr(config.metrics_addr, PORT_OFFSET[args.service])
    exported = telemetry.start(config, args.service, instance_id(args.service),
                               None if metrics_addr == "off" else metrics_addr)

    async def main() -> threading.Event:
        stop = asyncio.Event()
        install_stop_signals(stop)
        watchdog = asyncio.create_task(exit_when_stuck(stop, config.worker.shutdown_timeout_s + SHUTDOWN_SLACK_S))
        await module.serve(config, models, stop, None if health_addr == "off" else health_addr)
        watchdog.cancel()
        return abandon_threads_after(THREAD_GRACE_S, exported.shutdown)

    exiting = None
    try:
        exiting = asyncio.run(main())  # (joins the threads of the loop's executor: the abandoning timer bounds it)
    finally:
        if exiting is not None:
            exiting.set()
        exported.shutdown()
    return 0


def _offset_addr(addr: str, offset: int) -> str:
    """``addr`` with the service's port offset; ``off`` (or empty) stays off."""
    if addr in ("off", ""):
        return "off"
    host, _, port = addr.rpartition(":")
    return f"{host}:{int(port) + offset}"


def _supervise(args: argparse.Namespace) -> int:
    """Start one process per service; stop them all when one exits or on SIGINT/SIGTERM."""
    base = [sys.executable, "-m", "cbt.cli", "run"]
    extra = ["--config", args.config] if args.config else []
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

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while not stopping and all(child.poll() is None for child in children):
        signal.sigtimedwait([signal.SIGCHLD], 1.0)
    stop()
    codes = [child.wait() for child in children]
    return max((c for c in codes if c and c > 0), default=0)

