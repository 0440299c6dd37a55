"""``python -m cbt.cli``."""

from cbt.cli import run

run()
