"""SIGTERM stops the demo the way Ctrl-C does, so the services it started are stopped with it."""

from __future__ import annotations

import os
import signal
from collections.abc import Sequence

import pytest

from cbt.dev import demo


class LeftToTheOldHandler(Exception):
    pass


def test_sigterm_reaches_the_demo_as_the_keyboard_interrupt_that_stops_its_services(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def terminated_while_starting(argv: Sequence[str] | None) -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        raise AssertionError("SIGTERM did not interrupt the demo")

    def old_handler(signum: int, frame: object) -> None:
        raise LeftToTheOldHandler

    previous = signal.signal(signal.SIGTERM, old_handler)
    monkeypatch.setattr(demo, "parse_options", terminated_while_starting)
    try:
        with pytest.raises(KeyboardInterrupt):
            demo.main([])
    finally:
        signal.signal(signal.SIGTERM, previous)
