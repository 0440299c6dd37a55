"""The launcher's Spark command lines: a standalone master and worker on loopback, sized from the environment, and
the Connect server submitted to them in cluster mode or running ``local[*]`` as before."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import pytest

from cbt.base.errors import InfraError
from cbt.dev import stack
from cbt.dev.layout import Layout, SparkCluster
from cbt.dev.spark import SparkConnectServer, master_in
from cbt.dev.spark_cluster import MASTER_CLASS, WORKER_CLASS, daemon_env, master_argv, worker_argv
from cbt.dev.stack import spark_components

HOME = Path("/opt/pyspark")


def layout_for(tmp_path: Path, mode: str, **cluster: str) -> Layout:
    env = {f"CBT_DEV_SPARK_{key.upper()}": value for key, value in cluster.items()}
    return Layout(project=tmp_path, var=tmp_path / "var", kafka_port=9092, kafka_controller_port=9093,
                  redis_port=6379, spark_port=15002, spark_mode=mode, cluster=SparkCluster.from_env(env))


def option(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def confs(argv: list[str]) -> dict[str, str]:
    pairs = [argv[i + 1].split("=", 1) for i, arg in enumerate(argv) if arg == "--conf"]
    return {key: value for key, value in pairs}


def test_master_listens_on_loopback_at_its_ports() -> None:
    argv = master_argv(HOME, SparkCluster(master_port=7177, master_ui_port=8180))
    assert argv[:2] == [str(HOME / "bin" / "spark-class"), MASTER_CLASS]
    assert (option(argv, "--host"), option(argv, "--port"), option(argv, "--webui-port")) == (
        "127.0.0.1", "7177", "8180")


def test_worker_offers_its_cores_and_memory_to_the_master(tmp_path: Path) -> None:
    cluster = SparkCluster(master_port=7177, worker_port=7178, worker_ui_port=8181, worker_cores=2,
                           worker_memory="3g")
    argv = worker_argv(HOME, cluster, tmp_path / "work")
    assert argv[:2] == [str(HOME / "bin" / "spark-class"), WORKER_CLASS]
    assert argv[-1] == "spark://127.0.0.1:7177"
    assert {name: option(argv, name) for name in ("--host", "--port", "--webui-port", "--cores", "--memory",
                                                 "--work-dir")} == {
        "--host": "127.0.0.1", "--port": "7178", "--webui-port": "8181", "--cores": "2", "--memory": "3g",
        "--work-dir": str(tmp_path / "work")}


def test_daemons_and_their_executors_bind_loopback_with_a_small_heap() -> None:
    env = daemon_env(HOME)
    assert (env["SPARK_LOCAL_IP"], env["SPARK_HOME"], env["SPARK_DAEMON_MEMORY"]) == ("127.0.0.1", str(HOME), "512m")


def test_local_mode_keeps_the_connect_server_in_its_own_jvm_without_a_ui(tmp_path: Path) -> None:
    argv = SparkConnectServer(layout_for(tmp_path, "local")).argv(HOME)
    conf = confs(argv)
    assert option(argv, "--master") == "local[*]"
    assert conf["spark.ui.enabled"] == "false"
    assert "spark.executor.memory" not in conf and "spark.cores.max" not in conf


def test_cluster_mode_submits_the_connect_server_to_the_master_with_one_sized_executor(tmp_path: Path) -> None:
    lay = layout_for(tmp_path, "cluster", master_port="7177", ui_port="4141", executor_cores="1",
                     executor_memory="1g")
    argv = SparkConnectServer(lay).argv(HOME)
    conf = confs(argv)
    assert option(argv, "--master") == "spark://127.0.0.1:7177"
    assert (conf["spark.executor.cores"], conf["spark.executor.memory"], conf["spark.cores.max"]) == ("1", "1g", "1")
    assert (conf["spark.ui.enabled"], conf["spark.ui.port"]) == ("true", "4141")
    assert conf["spark.driver.host"] == conf["spark.driver.bindAddress"] == "127.0.0.1"
    # Executors write the Delta files where the driver's catalog says: one absolute path on this machine.
    assert conf["spark.sql.warehouse.dir"] == str(tmp_path / "var" / "spark" / "warehouse")
    assert conf["spark.jars.packages"].startswith("io.delta:delta-spark_2.13:")


def test_cluster_mode_starts_the_master_first_then_the_worker_and_connect(tmp_path: Path) -> None:
    parts = spark_components(layout_for(tmp_path, "cluster"))
    assert [(p.name, p.needs) for p in parts] == [
        ("spark-master", ()), ("spark-worker", ("spark-master",)), ("spark-connect", ("spark-master",))]


def test_local_mode_runs_only_connect_when_no_cluster_is_running(tmp_path: Path) -> None:
    parts = spark_components(layout_for(tmp_path, "local"), include_idle_cluster=False)
    assert [(p.name, p.needs) for p in parts] == [("spark-connect", ())]


@pytest.mark.parametrize(
    ("env", "message"),
    [
        pytest.param({"CBT_DEV_SPARK_EXECUTOR_MEMORY": "6g"}, "does not fit the worker's 4g", id="executor-too-big"),
        pytest.param({"CBT_DEV_SPARK_EXECUTOR_CORES": "3"}, "expected 1..2", id="more-cores-than-the-worker"),
        pytest.param({"CBT_DEV_SPARK_WORKER_MEMORY": "4 GB"}, "expected a size like 512m or 2g", id="bad-size"),
        pytest.param({"CBT_DEV_SPARK_MASTER_PORT": "x"}, "CBT_DEV_SPARK_MASTER_PORT: expected a number",
                     id="bad-port"),
    ],
)
def test_cluster_settings_that_could_never_run_an_executor_are_refused(env: dict[str, str], message: str) -> None:
    with pytest.raises(InfraError, match=message):
        SparkCluster.from_env(env)


def test_the_option_wins_over_the_environment_and_a_wrong_mode_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CBT_DEV_SPARK_MODE", "local")
    assert Layout.from_env(spark_mode="cluster").spark_master == "spark://127.0.0.1:7077"
    assert Layout.from_env().is_spark_mode_chosen
    monkeypatch.setenv("CBT_DEV_SPARK_MODE", "yarn")
    with pytest.raises(InfraError, match="CBT_DEV_SPARK_MODE: expected one of local, cluster, got 'yarn'"):
        Layout.from_env()
    monkeypatch.delenv("CBT_DEV_SPARK_MODE")
    assert (Layout.from_env().spark_master, Layout.from_env().is_spark_mode_chosen) == ("local[*]", False)


@dataclass
class FakeProcess:
    """A process that is running once started (no OS process: the order of starts is what is tested)."""

    is_running: bool = False
    log_file: Path = Path("/dev/null")

    def pid(self) -> int | None:
        return 1 if self.is_running else None

    def rss_mib(self) -> float | None:
        return None

    def log_tail(self) -> str:
        return ""


@dataclass
class FakePart:
    name: str
    needs: tuple[str, ...]
    starts: list[str]
    process: FakeProcess = field(default_factory=FakeProcess)
    port_env: str = "UNUSED"
    port: int = 1  # nothing listens on port 1
    endpoint: str = ""
    detail: str = ""

    def install(self) -> None:
        return None

    def start(self) -> None:
        self.starts.append(self.name)
        self.process.is_running = True

    def is_ready(self) -> bool:
        return self.process.is_running

    def after_ready(self) -> None:
        return None


def test_a_component_starts_once_what_it_needs_answers_and_a_need_outside_the_list_was_started_before() -> None:
    starts: list[str] = []
    master, worker = FakePart("spark-master", (), starts), FakePart("spark-worker", ("spark-master",), starts)
    connect = FakePart("spark-connect", ("spark-master",), starts)
    stack.start(cast("list[stack.Component]", [connect, worker, master]))
    assert starts[0] == "spark-master" and sorted(starts[1:]) == ["spark-connect", "spark-worker"]

    worker.process.is_running = False  # crashed; restarted alone, its master still up
    stack.start(cast("list[stack.Component]", [worker]))
    assert starts[-1] == "spark-worker"


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        pytest.param(["java", "SparkSubmit", "--master", "spark://127.0.0.1:7077", "--class", "X"],
                     "spark://127.0.0.1:7077", id="option"),
        pytest.param(["java", "SparkSubmit", "--conf", "spark.master=local[*]", "--class", "X"], "local[*]",
                     id="conf"),
        pytest.param(["java", "SparkSubmit", "--class", "X", "spark-internal"], None, id="none"),
    ],
)
def test_the_running_servers_master_is_read_from_its_command_line(argv: list[str], expected: str | None) -> None:
    assert master_in(argv) == expected


def test_the_master_read_back_is_the_one_submitted(tmp_path: Path) -> None:
    for mode in ("local", "cluster"):
        lay = layout_for(tmp_path, mode)
        assert master_in(SparkConnectServer(lay).argv(HOME)) == lay.spark_master
