"""Where the local stack lives: project files, the var/ folder, and the ports (overridable by environment)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cbt.base.errors import InfraError

HOST = "127.0.0.1"
SPARK_MODES = ("local", "cluster")
"""How the Spark Connect server runs its work: ``local[*]`` inside its own JVM, or on a standalone master and
worker of its own (``cbt dev up --spark cluster``)."""


def project_dir() -> Path:
    """The checkout holding deploy/local/ (this package is installed editable from it)."""
    explicit = os.environ.get("CBT_PROJECT_DIR")
    candidates = [Path(explicit)] if explicit else [Path(__file__).resolve().parents[3], Path.cwd()]
    for candidate in candidates:
        if (candidate / "deploy" / "local" / "kafka-pom.xml").is_file():
            return candidate
    raise InfraError("deploy/local/kafka-pom.xml not found: run from the project checkout or set CBT_PROJECT_DIR")


@dataclass(frozen=True)
class SparkCluster:
    """The standalone cluster's ports and sizes. The defaults fit a 2-core, 24 GB machine: one worker offering both
    cores and 4 GiB, one executor of 2 cores and 2 GiB (next to a 1 GiB driver and two 512 MiB daemons)."""

    master_port: int = 7077
    master_ui_port: int = 7080
    """Not Spark's 8080/8081: the api and the services' health endpoints are there."""
    worker_port: int = 7078
    worker_ui_port: int = 7081
    driver_ui_port: int = 4040
    """The Connect server's application UI (its REST API lists the executors and their tasks)."""
    worker_cores: int = 2
    worker_memory: str = "4g"
    executor_cores: int = 2
    executor_memory: str = "2g"

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> SparkCluster:
        cluster = cls(
            master_port=_int(environ, "CBT_DEV_SPARK_MASTER_PORT", cls.master_port),
            master_ui_port=_int(environ, "CBT_DEV_SPARK_MASTER_UI_PORT", cls.master_ui_port),
            worker_port=_int(environ, "CBT_DEV_SPARK_WORKER_PORT", cls.worker_port),
            worker_ui_port=_int(environ, "CBT_DEV_SPARK_WORKER_UI_PORT", cls.worker_ui_port),
            driver_ui_port=_int(environ, "CBT_DEV_SPARK_UI_PORT", cls.driver_ui_port),
            worker_cores=_int(environ, "CBT_DEV_SPARK_WORKER_CORES", cls.worker_cores),
            worker_memory=environ.get("CBT_DEV_SPARK_WORKER_MEMORY", cls.worker_memory),
            executor_cores=_int(environ, "CBT_DEV_SPARK_EXECUTOR_CORES", cls.executor_cores),
            executor_memory=environ.get("CBT_DEV_SPARK_EXECUTOR_MEMORY", cls.executor_memory),
        )
        cluster.validate()
        return cluster

    def validate(self) -> None:
        """An executor that does not fit the worker would never start: the Connect server's jobs would wait forever."""
        for name, value in (("CBT_DEV_SPARK_WORKER_MEMORY", self.worker_memory),
                            ("CBT_DEV_SPARK_EXECUTOR_MEMORY", self.executor_memory)):
            if not re.fullmatch(r"[1-9][0-9]*[mg]", value):
                raise InfraError(f"{name}: expected a size like 512m or 2g, got {value!r}")
        if not 1 <= self.executor_cores <= self.worker_cores:
            raise InfraError(f"CBT_DEV_SPARK_EXECUTOR_CORES: expected 1..{self.worker_cores} (the worker's cores), "
                             f"got {self.executor_cores}")
        if mebibytes(self.executor_memory) > mebibytes(self.worker_memory):
            raise InfraError(f"CBT_DEV_SPARK_EXECUTOR_MEMORY: {self.executor_memory} does not fit the worker's "
                             f"{self.worker_memory}; lower it or raise CBT_DEV_SPARK_WORKER_MEMORY")

    @property
    def master_url(self) -> str:
        return f"spark://{HOST}:{self.master_port}"

    @property
    def master_ui(self) -> str:
        return f"http://{HOST}:{self.master_ui_port}"

    @property
    def driver_ui(self) -> str:
        return f"http://{HOST}:{self.driver_ui_port}"


@dataclass(frozen=True)
class Layout:
    project: Path
    var: Path
    kafka_port: int
    kafka_controller_port: int
    redis_port: int
    spark_port: int
    spark_mode: str = "local"
    is_spark_mode_chosen: bool = False
    """False when neither ``--spark`` nor ``CBT_DEV_SPARK_MODE`` said: the launcher then follows the running stack."""
    cluster: SparkCluster = field(default_factory=SparkCluster)

    @classmethod
    def from_env(cls, spark_mode: str | None = None) -> Layout:
        """From ``CBT_DEV_*`` variables; ``spark_mode`` (the ``--spark`` option) wins over ``CBT_DEV_SPARK_MODE``."""
        project = project_dir()
        env = os.environ
        chosen = spark_mode or env.get("CBT_DEV_SPARK_MODE")
        mode = chosen or "local"
        if mode not in SPARK_MODES:
            raise InfraError(f"CBT_DEV_SPARK_MODE: expected one of {', '.join(SPARK_MODES)}, got {mode!r}")
        return cls(
            project=project,
            var=Path(env.get("CBT_VAR_DIR", project / "var")).resolve(),
            kafka_port=_int(env, "CBT_DEV_KAFKA_PORT", 9092),
            kafka_controller_port=_int(env, "CBT_DEV_KAFKA_CONTROLLER_PORT", 9093),
            redis_port=_int(env, "CBT_DEV_REDIS_PORT", 6379),
            spark_port=_int(env, "CBT_DEV_SPARK_PORT", 15002),
            spark_mode=mode,
            is_spark_mode_chosen=bool(chosen),
            cluster=SparkCluster.from_env(env),
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

    @property
    def spark_master(self) -> str:
        """Where the Connect server runs its work: its own JVM, or the standalone master."""
        return self.cluster.master_url if self.spark_mode == "cluster" else "local[*]"


def mebibytes(size: str) -> int:
    """``512m`` → 512, ``2g`` → 2048 (the JVM's size suffixes that Spark's memory settings take)."""
    return int(size[:-1]) * (1024 if size.endswith("g") else 1)


def _int(environ: Mapping[str, str], name: str, default: int) -> int:
    raw = environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise InfraError(f"{name}: expected a number, got {raw!r}") from None
