"""Where a service is in its start-up, and when it passed each milestone: what ``/readyz`` shows while it starts and
what the benches read afterwards (a start timeline per service).

Times are seconds since the process started (the kernel's record of it, so the interpreter's own start and the
imports count), rounded to milliseconds. A milestone is recorded once, the first time it is reached: ``topics
created``, ``wired`` (the service's own preparation: admin tables, admission control), ``broker joined``,
``ready``, then each service's own (``leader``, ``index ready``, ``first task started``, ``first completion``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable


def process_started_at() -> float:
    """The unix time this process started (Linux: ``/proc``); now, where that cannot be read."""
    try:
        with open("/proc/self/stat", encoding="ascii") as stat:
            started_ticks = int(stat.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/stat", encoding="ascii") as system:
            boot = next(int(line.split()[1]) for line in system if line.startswith("btime "))
        return boot + started_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return time.time()


class Startup:
    """The current start-up step and the milestones passed (see the module docstring)."""

    def __init__(self, started_at: float | None = None, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._started_at = process_started_at() if started_at is None else started_at
        self.step = "starting"
        self.milestones: dict[str, float] = {}
        self.is_ready = False

    def doing(self, step: str) -> None:
        """The step the service is in now (``/readyz`` says it until the service is ready)."""
        self.step = step

    def reached(self, milestone: str) -> None:
        """Record ``milestone`` (only its first time)."""
        if milestone not in self.milestones:
            self.milestones[milestone] = round(max(self._clock() - self._started_at, 0.0), 3)

    def ready(self) -> None:
        self.reached("ready")
        self.is_ready = True
        self.step = "running"

    async def check(self) -> str | None:
        """A ``/readyz`` check: fails with the current step while starting."""
        if not self.is_ready:
            raise LookupError(f"starting: {self.step}")
        return None

    def report(self) -> dict[str, object]:
        return {"step": self.step, "seconds_since_process_start": dict(self.milestones)}
