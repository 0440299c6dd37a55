"""One root exception; user-facing errors carry enough context to act on."""

from __future__ import annotations

from dataclasses import dataclass


class CbtError(Exception):
    """Root of every error this package raises on purpose."""


@dataclass(frozen=True)
class Problem:
    """One problem in a user's file, printed as ``path:line: field: problem``."""

    path: str
    line: int
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.field}: {self.message}"


class ModelError(CbtError):
    """One or more problems in model files or the config; ``problems`` lists every one."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = sorted(problems, key=lambda p: (p.path, p.line, p.field, p.message))
        super().__init__("\n".join(str(p) for p in self.problems))


class ConfigError(CbtError):
    """The configuration file or environment overrides are invalid."""


class InfraError(CbtError):
    """A local infrastructure component could not be started, stopped or reached."""
