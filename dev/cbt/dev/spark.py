"""One Spark Connect server from the pip pyspark jars, with Delta Lake and a persistent Hive catalog (Derby): its
work runs in its own JVM (``local[*]``) or on the standalone cluster of ``cbt.dev.spark_cluster``."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

from cbt.base.errors import InfraError
from cbt.dev.layout import HOST, Layout
from cbt.dev.process import ManagedProcess
from cbt.dev.spark_cluster import spark_home

DELTA_PACKAGE = "io.delta:delta-spark_2.13:4.0.1"
"""Delta release built against the pinned pyspark (4.0.x)."""

DRIVER_MEMORY = "1g"
CONNECT_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


class SparkConnectServer:
    name = "spark-connect"
    port_env = "CBT_DEV_SPARK_PORT"

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.home = layout.var / "spark"
        self.process = ManagedProcess(self.name, self.home / "spark-connect.pid", self.home / "spark-connect.log")
        self.needs: tuple[str, ...] = ("spark-master",) if layout.spark_mode == "cluster" else ()

    @property
    def endpoint(self) -> str:
        return self.layout.spark_remote

    @property
    def port(self) -> int:
        return self.layout.spark_port

    @property
    def detail(self) -> str:
        running = self.running_master()
        return f"on {running or self.layout.spark_master}{self._admission()}"

    def _admission(self) -> str:
        """``; admission: limit 2, 1 executing, 0 waiting`` — what every process using this server holds and waits
        for (``spark.max_concurrent_statements``), read from the stack's Redis; empty when Redis does not answer."""
        import redis

        from cbt.adapters.admission import RedisPermitStore
        from cbt.scheduling.admission import cluster_of

        client = redis.Redis.from_url(self.layout.redis_url, socket_timeout=1.0, socket_connect_timeout=1.0)
        try:
            status = RedisPermitStore(client, cluster_of(self.endpoint)).status()
        except redis.RedisError:
            return ""
        finally:
            client.close()
        return f"; admission: {status.describe()}"

    def install(self) -> None:
        """Nothing to fetch ahead: the jars come with pyspark, Delta's through ``spark.jars.packages`` at start."""
        running = self.running_master()
        if running is not None and running != self.layout.spark_master:
            raise InfraError(
                f"spark-connect is already running on {running}, not on {self.layout.spark_master}: stop it "
                f"(cbt dev down) and start it again in the mode you want (cbt dev up --spark "
                f"{self.layout.spark_mode})")

    def start(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        home = spark_home()
        env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": HOST, "PYSPARK_PYTHON": "python3"}
        # The embedded Derby metastore (metastore_db/) and derby.log land in the working directory.
        self.process.start(self.argv(home), cwd=self.home, env=env)

    def argv(self, home: Path) -> list[str]:
        """``spark-submit`` of the Connect server to ``local[*]`` or to the standalone master."""
        argv = [str(home / "bin" / "spark-submit"), "--master", self.layout.spark_master,
                "--class", CONNECT_SERVER_CLASS, "--name", "cbt-spark-connect", "--driver-memory", DRIVER_MEMORY]
        for key, value in self.server_conf().items():
            argv += ["--conf", f"{key}={value}"]
        return [*argv, "spark-internal"]

    def running_master(self) -> str | None:
        """The master the running server was submitted to (from its command line); None when it is not running."""
        pid = self.process.pid()
        if pid is None:
            return None
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            return None
        return master_in(args)

    def server_conf(self) -> dict[str, str]:
        return {**self._common_conf(), **(self._cluster_conf() if self.layout.spark_mode == "cluster" else {})}

    def _cluster_conf(self) -> dict[str, str]:
        """One executor on the worker; the application UI on loopback, for its REST API (executors, tasks)."""
        cluster = self.layout.cluster
        return {
            "spark.executor.cores": str(cluster.executor_cores),
            "spark.executor.memory": cluster.executor_memory,
            "spark.cores.max": str(cluster.executor_cores),
            "spark.ui.enabled": "true",
            "spark.ui.port": str(cluster.driver_ui_port),
            "spark.port.maxRetries": "0",  # the UI on its configured port or not at all (no silent 4041)
        }

    def _common_conf(self) -> dict[str, str]:
        warehouse = self.home / "warehouse"
        return {
            "spark.jars.packages": DELTA_PACKAGE,
            "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
            "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
            "spark.sql.catalogImplementation": "hive",
            "spark.sql.warehouse.dir": str(warehouse),
            "spark.hadoop.javax.jdo.option.ConnectionURL":
                f"jdbc:derby:;databaseName={self.home / 'metastore_db'};create=true",
            # No metastore connection pool: a statement interrupted (timeout, lost lease) inside a catalog call can
            # leave its pooled Derby connection unreturned; with every connection gone, the next catalog call waits
            # for one forever while holding the catalog lock, and every statement hangs (seen in CI).
            "spark.hadoop.datanucleus.connectionPoolingType": "None",
            "spark.driver.extraJavaOptions": f"-Dderby.system.home={self.home}",
            "spark.connect.grpc.binding.address": HOST,
            "spark.connect.grpc.binding.port": str(self.layout.spark_port),
            "spark.driver.host": HOST,
            "spark.driver.bindAddress": HOST,
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            # Small intervals on a small machine: few shuffle partitions, no adaptive re-planning overhead.
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.databricks.delta.snapshotPartitions": "2",
            "spark.databricks.delta.properties.defaults.autoOptimize.optimizeWrite": "false",
            # Interpreted, not generated, code: a statement here reads thousands of rows, and its bounds are literals,
            # so each one compiled new Java classes (a quarter of the server's CPU in a profile of the mixed-pipeline
            # bench); interpreted, a small REPLACE WHERE and a bounds scan cost ~40 % less CPU. A cluster that reads
            # millions of rows per interval wants code generation back: its deployment does not set these.
            "spark.sql.codegen.wholeStage": "false",
            "spark.sql.codegen.factoryMode": "NO_CODEGEN",
        }

    def is_ready(self) -> bool:
        from cbt.dev.process import port_open

        return port_open(HOST, self.layout.spark_port)

    def after_ready(self) -> None:
        from cbt.adapters.spark import connect

        session = connect(self.endpoint)
        try:
            session.sql("SELECT 1").collect()
        finally:
            session.stop()


def master_in(argv: list[str]) -> str | None:
    """The master a ``spark-submit`` command line names: ``--master X`` or ``--conf spark.master=X`` (the last one
    wins, as in spark-submit); None when it names none."""
    found = None
    for option, value in itertools.pairwise(argv):
        if option == "--master":
            found = value
        elif option == "--conf" and value.startswith("spark.master="):
            found = value.removeprefix("spark.master=")
    return found
