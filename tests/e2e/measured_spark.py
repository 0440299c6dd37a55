"""A small Spark Connect server of a test's own, whose application REST API says what ran on it and when: the SQL
executions (submission time, duration), to count the statements executing at once on the server's side.

Started with the project's launcher beside the shared stack (whose server has no UI in local mode and runs other
tests' statements too): ``local[*]``, no Delta and no catalog — the statements it is for only run and wait.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import urllib.request
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cbt.dev import stack
from cbt.dev.layout import HOST, Layout
from cbt.dev.pipeline import free_port
from cbt.dev.spark import SparkConnectServer
from tests.e2e.harness import PROJECT

HOME = PROJECT / "var" / "test-measured-spark"


class MeasuredSparkServer(SparkConnectServer):
    """The launcher's Spark Connect server (its PID file and log under ``HOME``) with a UI and nothing else."""

    def __init__(self, layout: Layout, ui_port: int) -> None:
        super().__init__(layout)
        self.ui_port = ui_port

    @property
    def detail(self) -> str:
        return f"UI on {self.ui}"

    @property
    def ui(self) -> str:
        return f"http://{HOST}:{self.ui_port}"

    def server_conf(self) -> dict[str, str]:
        return {
            "spark.connect.grpc.binding.address": HOST,
            "spark.connect.grpc.binding.port": str(self.port),
            "spark.driver.host": HOST,
            "spark.driver.bindAddress": HOST,
            "spark.ui.enabled": "true",
            "spark.ui.port": str(self.ui_port),
            "spark.port.maxRetries": "0",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": "2",
            "spark.sql.warehouse.dir": str(HOME / "warehouse"),
            "spark.driver.extraJavaOptions": f"-Dderby.system.home={HOME}",
        }


@dataclass(frozen=True)
class Execution:
    """One SQL execution as the server recorded it: ``[start_ms, end_ms)``."""

    id: int
    start_ms: int
    end_ms: int
    status: str


@dataclass
class MeasuredSpark:
    server: MeasuredSparkServer

    @classmethod
    def create(cls) -> MeasuredSpark:
        layout = dataclasses.replace(Layout.from_env(spark_mode="local"), var=HOME, spark_port=free_port())
        return cls(MeasuredSparkServer(layout, free_port()))

    @property
    def remote(self) -> str:
        return self.server.endpoint

    def start(self) -> None:
        stack.stop([self.server])  # what a killed run left behind (found by its PID file)
        shutil.rmtree(HOME, ignore_errors=True)
        stack.start([self.server])

    def stop(self) -> None:
        stack.stop([self.server])

    def executions(self) -> list[Execution]:
        """Every SQL execution the server has recorded (completed, failed or still running)."""
        (app,) = self._rest("applications")
        rows = self._rest(f"applications/{app['id']}/sql?details=false&offset=0&length=100000")
        return [Execution(int(row["id"]), _ms(row["submissionTime"]), _ms(row["submissionTime"]) + int(row["duration"]),
                          str(row["status"])) for row in rows]

    def _rest(self, path: str) -> list[dict[str, Any]]:
        with urllib.request.urlopen(f"{self.server.ui}/api/v1/{path}", timeout=60) as response:
            body: list[dict[str, Any]] = json.loads(response.read())
        return body


def _ms(stamp: str) -> int:
    """``2026-11-26T02:31:26.123GMT`` → unix milliseconds."""
    return int(datetime.strptime(stamp.replace("GMT", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp() * 1000)


def most_at_once(executions: Iterable[Execution]) -> int:
    """The most executions running at the same moment (half-open intervals: one ending as another starts is not an
    overlap)."""
    events = sorted((t, delta) for e in executions for t, delta in ((e.start_ms, 1), (e.end_ms, -1)))
    running, most = 0, 0
    for _, delta in events:  # at equal times the end (-1) sorts first
        running += delta
        most = max(most, running)
    return most


def during(executions: Sequence[Execution], start_ms: int, end_ms: int) -> list[Execution]:
    return [e for e in executions if e.start_ms >= start_ms and e.end_ms <= end_ms]
