"""A Spark standalone cluster of the tests' own (master, worker, and a Spark Connect server submitted to it), started
with the project's launcher beside the shared local stack, and what the cluster itself says it ran: the master's
``/json`` and the Connect server's application REST API (executors and their tasks)."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import time
import urllib.request
from dataclasses import dataclass, field
from typing import Any

import pytest
from pyspark.sql import SparkSession

from cbt.adapters.spark import SessionPool
from cbt.dev import stack
from cbt.dev.layout import Layout, SparkCluster
from cbt.dev.pipeline import free_port
from cbt.dev.process import wait_until
from cbt.dev.spark_cluster import SparkWorker, alive_workers, master_state
from tests.e2e.harness import PROJECT

LONG_SUITE = pytest.mark.skipif(os.environ.get("CBT_LONG_TESTS") != "1",
                                reason="long suite: `make chaos` (CBT_LONG_TESTS=1), to keep `make test` short")
"""Runs in ``make chaos``, not ``make test``: a second Spark (a standalone cluster) and a fault on it, ~3 minutes."""
BACKENDS = ("local", pytest.param("cluster", id="spark-cluster", marks=[pytest.mark.long, LONG_SUITE]))
"""``@pytest.mark.parametrize("spark_backend", BACKENDS, indirect=True)`` runs a test on both (the cluster in the long
suite)."""
HOME = PROJECT / "var" / "test-spark-cluster"
"""Its own var/ (metastore, warehouse, worker's work dir, logs): emptied at every start."""


def standalone_layout() -> Layout:
    """Cluster mode on free ports, sized for a test beside the shared stack: one 2-core, 1 GiB executor."""
    cluster = SparkCluster(master_port=free_port(), master_ui_port=free_port(), worker_port=free_port(),
                           worker_ui_port=free_port(), driver_ui_port=free_port(), worker_cores=2,
                           worker_memory="2g", executor_cores=2, executor_memory="1g")
    return dataclasses.replace(Layout.from_env(spark_mode="cluster"), var=HOME, spark_port=free_port(),
                               cluster=cluster)


@dataclass(frozen=True)
class Crash:
    """What was lost: the executor that was running a task, and the worker it ran on."""

    executor_id: str
    worker_id: str


@dataclass
class StandaloneCluster:
    layout: Layout = field(default_factory=standalone_layout)
    sessions: SessionPool = field(init=False)
    _app_id: str | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.parts = stack.spark_components(self.layout)
        self.sessions = SessionPool(self.layout.spark_remote)

    @property
    def remote(self) -> str:
        return self.layout.spark_remote

    @property
    def cluster(self) -> SparkCluster:
        return self.layout.cluster

    def start(self) -> None:
        stack.stop(self.parts)  # what a killed run left behind (found by its PID files)
        shutil.rmtree(HOME, ignore_errors=True)
        stack.start(self.parts)

    def stop(self) -> None:
        self.sessions.close()
        stack.stop(self.parts)

    def session(self) -> SparkSession:
        return self.sessions.session("tests")

    def master(self) -> dict[str, Any]:
        state = master_state(self.cluster)
        assert state is not None, f"the master's web UI ({self.cluster.master_ui}) does not answer"
        return state

    def app_id(self) -> str:
        """The Connect server's application, as its driver names it (and the master too)."""
        if self._app_id is None:
            (app,) = self._rest("applications")
            self._app_id = str(app["id"])
        return self._app_id

    def executors(self) -> list[dict[str, Any]]:
        """Every executor the application had, the lost ones too, and the driver's own entry."""
        return self._rest(f"applications/{self.app_id()}/allexecutors")

    def busy_executor(self) -> dict[str, Any] | None:
        return next((e for e in self.executors() if e["id"] != "driver" and e["isActive"] and e["activeTasks"]),
                    None)

    def crash_worker_mid_task(self, timeout_s: float = 60.0) -> Crash:
        """SIGKILL the worker and the executor it launched (one process group: a machine lost) while the executor
        runs a task."""
        deadline = time.monotonic() + timeout_s
        while (busy := self.busy_executor()) is None:
            assert time.monotonic() < deadline, f"no executor ran a task within {timeout_s:.0f}s"
            time.sleep(0.1)
        (worker,) = alive_workers(self.master())
        assert self.worker.process.kill(), "the worker was not running"
        assert wait_until(lambda: not alive_workers(master_state(self.cluster)), 30.0), "the master kept the worker"
        return Crash(executor_id=str(busy["id"]), worker_id=str(worker["id"]))

    def restart_worker(self) -> None:
        stack.start([self.worker])

    @property
    def worker(self) -> SparkWorker:
        (part,) = [p for p in self.parts if isinstance(p, SparkWorker)]
        return part

    def _rest(self, path: str) -> list[dict[str, Any]]:
        url = f"{self.cluster.driver_ui}/api/v1/{path}"
        with urllib.request.urlopen(url, timeout=60) as response:  # the driver is busy on a busy machine
            body: list[dict[str, Any]] = json.loads(response.read())
        return body


@dataclass(frozen=True)
class SparkBackend:
    """Where a deployment's Spark work runs: its Connect server, and the standalone cluster behind it if any."""

    remote: str
    session: SparkSession
    cluster: StandaloneCluster | None
    """None for the stack's ``local[*]`` Connect server."""
