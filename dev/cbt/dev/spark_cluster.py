"""A Spark standalone cluster from the pip pyspark jars: one master and one worker on loopback, for the Connect
server to submit its application to (``cbt dev up --spark cluster``)."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pyspark

from cbt.dev.layout import HOST, Layout, SparkCluster
from cbt.dev.process import ManagedProcess, port_open

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
DAEMON_MEMORY = "512m"
"""Heap of the master and of the worker daemon itself (the executors it launches get ``executor_memory``)."""


def spark_home() -> Path:
    """The pip pyspark package is a Spark distribution: ``bin/``, ``jars/``."""
    return Path(pyspark.__file__).parent


def daemon_env(home: Path) -> dict[str, str]:
    """Loopback everywhere: ``SPARK_LOCAL_IP`` also binds the web UIs and the executors the worker launches."""
    return {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": HOST, "SPARK_DAEMON_MEMORY": DAEMON_MEMORY,
            "SPARK_NO_DAEMONIZE": "1",
            # Remove the directories of finished applications (executor logs, fetched jars) after a day.
            "SPARK_WORKER_OPTS": "-Dspark.worker.cleanup.enabled=true -Dspark.worker.cleanup.appDataTtl=86400"}


def master_argv(home: Path, cluster: SparkCluster) -> list[str]:
    return [str(home / "bin" / "spark-class"), MASTER_CLASS, "--host", HOST, "--port", str(cluster.master_port),
            "--webui-port", str(cluster.master_ui_port)]


def worker_argv(home: Path, cluster: SparkCluster, work_dir: Path) -> list[str]:
    return [str(home / "bin" / "spark-class"), WORKER_CLASS, "--host", HOST, "--port", str(cluster.worker_port),
            "--webui-port", str(cluster.worker_ui_port), "--cores", str(cluster.worker_cores),
            "--memory", cluster.worker_memory, "--work-dir", str(work_dir), cluster.master_url]


def master_state(cluster: SparkCluster, timeout_s: float = 2.0) -> dict[str, Any] | None:
    """The master's own account (its web UI's ``/json``: workers, applications, cores in use); None while it does
    not answer."""
    try:
        with urllib.request.urlopen(f"{cluster.master_ui}/json/", timeout=timeout_s) as response:
            state: dict[str, Any] = json.loads(response.read())
    except (OSError, urllib.error.URLError, ValueError):
        return None
    return state


def alive_workers(state: dict[str, Any] | None) -> list[dict[str, Any]]:
    return [w for w in (state or {}).get("workers", []) if w.get("state") == "ALIVE"]


class SparkMaster:
    name = "spark-master"
    port_env = "CBT_DEV_SPARK_MASTER_PORT"
    needs: tuple[str, ...] = ()

    def __init__(self, layout: Layout) -> None:
        self.cluster = layout.cluster
        self.home = layout.var / "spark-cluster"
        self.process = ManagedProcess(self.name, self.home / "master.pid", self.home / "master.log")

    @property
    def endpoint(self) -> str:
        return self.cluster.master_url

    @property
    def port(self) -> int:
        return self.cluster.master_port

    @property
    def detail(self) -> str:
        return f"web UI {self.cluster.master_ui}"

    def install(self) -> None:
        """Nothing to fetch: the daemons are in pyspark's jars."""

    def start(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        home = spark_home()
        self.process.start(master_argv(home, self.cluster), cwd=self.home, env=daemon_env(home))

    def is_ready(self) -> bool:
        state = master_state(self.cluster) if port_open(HOST, self.cluster.master_port) else None
        return state is not None and state.get("status") == "ALIVE"

    def after_ready(self) -> None:
        return None


class SparkWorker:
    name = "spark-worker"
    port_env = "CBT_DEV_SPARK_WORKER_PORT"
    needs: tuple[str, ...] = ("spark-master",)

    def __init__(self, layout: Layout) -> None:
        self.cluster = layout.cluster
        self.home = layout.var / "spark-cluster"
        self.process = ManagedProcess(self.name, self.home / "worker.pid", self.home / "worker.log")

    @property
    def endpoint(self) -> str:
        return f"{HOST}:{self.cluster.worker_port}"

    @property
    def port(self) -> int:
        return self.cluster.worker_port

    @property
    def detail(self) -> str:
        return f"{self.cluster.worker_cores} cores, {self.cluster.worker_memory}"

    def install(self) -> None:
        """Nothing to fetch: the daemons are in pyspark's jars."""

    def start(self) -> None:
        work_dir = self.home / "work"
        work_dir.mkdir(parents=True, exist_ok=True)
        home = spark_home()
        self.process.start(worker_argv(home, self.cluster, work_dir), cwd=self.home, env=daemon_env(home))

    def is_ready(self) -> bool:
        """Registered with the master (the master lists it alive), so executors can be placed on it."""
        return any(w.get("port") == self.cluster.worker_port for w in alive_workers(master_state(self.cluster)))

    def after_ready(self) -> None:
        return None
