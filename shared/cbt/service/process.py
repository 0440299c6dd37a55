"""One service per process: ``cbt run <service>`` and each service's own command, ``cbt-<service>``.

``run_service`` sets the process up around a service's ``serve``: logging, telemetry (metrics, traces), SIGTERM and
SIGINT as the stop, the exit watchdog once stopping (a call stuck on an unreachable server must not keep a stopped
service alive), and the threads abandoned once the service has stopped. Each service announces itself through the
``cbt.services`` entry points (name = module with ``serve``). A service's modules (and config and models) are
imported only when it runs, not when a parser is built: this module imports no library at the top.
"""

from __future__ import annotations

import argparse
import faulthandler
import importlib
import logging
import os
import sys
import threading
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points
from types import ModuleType
from typing import TYPE_CHECKING

from cbt.base.errors import CbtError

if TYPE_CHECKING:
    import asyncio

SERVICE_GROUP = "cbt.services"
PORT_OFFSET = {"coordinator": 0, "worker": 1, "bounds-cache": 2, "invalidator": 3, "api": 4}
"""Every service this project has, with the offset of its health and metrics ports from ``health_addr`` and
``metrics_addr``."""
DEFAULT_IDLE_S = 5.0
"""``--until-idle`` without a value: how long a service must have had nothing to do before it stops."""
SHUTDOWN_SLACK_S = 4.0
"""Beyond the shutdown timeout, time to interrupt what still runs and commit what ended; then the process exits
regardless (what it had not committed is delivered again elsewhere): every service exits within the shutdown
timeout + 5 s of SIGTERM."""
THREAD_GRACE_S = 1.5
"""Once a service has stopped, how long calls still running in its threads may take before they are abandoned."""


def add_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", metavar="FILE", help="config file (default: $CBT_CONFIG or ./config.yaml)")
    p.add_argument("--health-addr", metavar="HOST:PORT",
                   help="where /healthz and /readyz answer (default: health_addr, port offset per service; :0 picks)")
    p.add_argument("--metrics-addr", metavar="HOST:PORT",
                   help="where Prometheus scrapes /metrics (default: metrics_addr, port offset per service; :0 picks; "
                        "'off': none)")
    p.add_argument("--until-idle", metavar="SECONDS", nargs="?", type=float, const=DEFAULT_IDLE_S, default=None,
                   help="stop (exit 0) once the topics the service consumes are drained and nothing is in flight "
                        f"for SECONDS (default {DEFAULT_IDLE_S:g}); for tests and one-off catch-ups")


def service_main(service: str, argv: Sequence[str] | None = None) -> int:
    """``cbt-<service> [--config FILE] [--health-addr HOST:PORT] [--until-idle[=SECONDS]]``."""
    parser = argparse.ArgumentParser(prog=f"cbt-{service}",
                                     description=f"Run the {service} service (docs/design/services.md#services).")
    add_run_options(parser)
    args = parser.parse_args(argv)
    try:
        return run_service(service, args)
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


def run_service(service: str, args: argparse.Namespace) -> int:
    """Run ``service`` in this process until SIGTERM/SIGINT (or until idle); 0 once it stopped."""
    import asyncio

    from cbt.adapters import telemetry
    from cbt.adapters.runtime import instance_id, setup_logging
    from cbt.models.loader import load_project

    config, models = load_project(args.config)
    module = service_module(service)
    setup_logging(config)
    for warning in config.warnings:  # (the original CBT's keys, set aside: said once, at start)
        logging.getLogger("cbt").warning(str(warning))
    faulthandler.enable(all_threads=True)  # a native crash on a Python thread logs every thread's stack
    health_addr = args.health_addr or offset_addr(config.health_addr, PORT_OFFSET[service])
    metrics_addr = args.metrics_addr or offset_addr(config.metrics_addr, PORT_OFFSET[service])
    exported = telemetry.start(config, service, instance_id(service), None if metrics_addr == "off" else metrics_addr)

    async def main() -> threading.Event:
        stop = asyncio.Event()
        install_stop_signals(stop)
        watchdog = asyncio.create_task(exit_when_stuck(stop, config.worker.shutdown_timeout_s + SHUTDOWN_SLACK_S))
        await module.serve(config, models, stop, None if health_addr == "off" else health_addr,
                           until_idle_s=getattr(args, "until_idle", None))
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


def offset_addr(addr: str, offset: int) -> str:
    """``addr`` with the service's port offset; ``off`` (or empty) stays off."""
    if addr in ("off", ""):
        return "off"
    host, _, port = addr.rpartition(":")
    return f"{host}:{int(port) + offset}"


def install_stop_signals(stop: asyncio.Event) -> None:
    import asyncio
    import signal

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)


async def exit_when_stuck(stop: asyncio.Event, grace_s: float) -> None:
    """Once ``stop`` is set, give the service ``grace_s`` to shut down, then end the process: a call stuck on an
    unreachable server, or a thread that never returns, must not keep a stopped service alive (its uncommitted
    messages are delivered again elsewhere)."""
    await stop.wait()
    timer = threading.Timer(grace_s, _exit_stuck, args=(grace_s,))
    timer.daemon = True
    timer.start()


def abandon_threads_after(grace_s: float, before_exit: Callable[[], object]) -> threading.Event:
    """Called once a service's ``serve`` has returned (its work recorded and committed): threads still running a
    call then (a read of the admin tables on a busy Spark, a statement being interrupted) would hold the process at
    exit, where Python joins them. Past ``grace_s`` they are abandoned — their work is redone at the next start —
    and the process exits (code 0) after ``before_exit`` (flushing telemetry). Set the returned event once the
    process goes on to exit by itself."""
    exiting = threading.Event()

    def abandon() -> None:
        if exiting.is_set():
            return
        busy = [t.name for t in threading.enumerate()
                if t not in (threading.current_thread(), threading.main_thread()) and not t.daemon]
        logging.getLogger("cbt").info("stopped; abandoning calls still running in threads: %s", ", ".join(busy))
        before_exit()
        logging.shutdown()
        os._exit(0)

    timer = threading.Timer(grace_s, abandon)
    timer.daemon = True
    timer.start()
    return exiting


def _exit_stuck(grace_s: float) -> None:
    logging.getLogger("cbt").error("shutdown did not finish within %.0f s; exiting now", grace_s)
    logging.shutdown()
    os._exit(1)
