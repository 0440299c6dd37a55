"""Where the local stack lives: project files, the var/ folder, and the ports (overridable by environment)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from cbt.errors import InfraError

HOST = "127.0.0.1"


def project_dir() -> Path:
    """The checkout holding deploy/local/ (this package is installed editable from it)."""
    explicit = os.environ.get("CBT_PROJECT_DIR")
    candidates = [Path(explicit)] if explicit else [Path(__file__).resolve().parents[3], Path.cwd()]
    for candidate in candidates:
        if (candidate / "deploy" / "local" / "kafka-pom.xml").is_file():
            return candidate
    raise InfraError("deploy/local/kafka-pom.xml not found: run from the project checkout or set CBT_PROJECT_DIR")


@dataclass(frozen=True)
class Layout:
    project: Path
    var: Path
    kafka_port: int
    kafka_controller_port: int
    redis_port: int
    spark_port: int

    @classmethod
    def from_env(cls) -> Layout:
        project = project_dir()
        return cls(
            project=project,
            var=Path(os.environ.get("CBT_VAR_DIR", project / "var")).resolve(),
            kafka_port=int(os.environ.get("CBT_DEV_KAFKA_PORT", "9092")),
            kafka_controller_port=int(os.environ.get("CBT_DEV_KAFKA_CONTROLLER_PORT", "9093")),
            redis_port=int(os.environ.get("CBT_DEV_REDIS_PORT", "6379")),
            spark_port=int(os.environ.get("CBT_DEV_SPARK_PORT", "15002")),
        )

    @property
    def kafka_bootstrap(self) -> str:
        return f"{HOST}:{self.kafka_port}"

    @property
    def redis_url(self) -> str:
        return f"redis://{HOST}:{self.redis_port}/0"

    @property
    def spark_remote(self) -> str:
        return f"sc://{HOST}:{self.spark_port}"
