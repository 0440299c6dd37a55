"""``cbt run <service>``: one service per process; ``cbt run all`` supervises one of each on this machine."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import signal
import subprocess
import sys
from typing import Any

from cbt.models.loader import load_project

SERVICES = {
    "coordinator": "cbt.services.coordinator.app",
    "worker": "cbt.services.worker.app",
    "bounds-cache": "cbt.services.bounds_cache.app",
    "invalidator": "cbt.services.invalidator.app",
}
HEALTH_PORT_OFFSET = {"coordinator": 0, "worker": 1, "bounds-cache": 2, "invalidator": 3}


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("run", help="run a service: coordinator, worker, bounds-cache, invalidator, or all")
    p.add_argument("service", choices=[*SERVICES, "all"])
    p.add_argument("--config", metavar="FILE", help="config file (default: $CBT_CONFIG or ./config.yaml)")
    p.add_argument("--health-addr", metavar="HOST:PORT",
                   help="where /healthz and /readyz answer (default: health_addr, port offset per service; :0 picks)")
    p.set_defaults(func=cmd_run)


def cmd_run(args: argparse.Namespace) -> int:
    config, models = load_project(args.config)
    if args.service == "all":
        return _supervise(args)
    from cbt.services.runtime import install_stop_signals, setup_logging

    setup_logging(config)
    health_addr = args.health_addr or _offset_addr(config.health_addr, HEALTH_PORT_OFFSET[args.service])
    module = importlib.import_module(SERVICES[args.service])

    async def main() -> None:
        stop = asyncio.Event()
        install_stop_signals(stop)
        await module.serve(config, models, stop, health_addr)

    asyncio.run(main())
    return 0


def _offset_addr(addr: str, offset: int) -> str:
    host, _, port = addr.rpartition(":")
    return f"{host}:{int(port) + offset}"


def _supervise(args: argparse.Namespace) -> int:
    """Start one process per service; stop them all when one exits or on SIGINT/SIGTERM."""
    base = [sys.executable, "-m", "cbt.cli", "run"]
    extra = ["--config", args.config] if args.config else []
    children = [subprocess.Popen([*base, name, *extra]) for name in SERVICES]
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

