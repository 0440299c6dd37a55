"""One Spark Connect server from the pip pyspark jars, with Delta Lake and a persistent Hive catalog (Derby)."""

from __future__ import annotations

import os
from pathlib import Path

import pyspark

from cbt.dev.layout import HOST, Layout
from cbt.dev.process import ManagedProcess

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

    @property
    def endpoint(self) -> str:
        return self.layout.spark_remote

    @property
    def port(self) -> int:
        return self.layout.spark_port

    def install(self) -> None:
        """Nothing to fetch ahead: the jars come with pyspark, Delta's through ``spark.jars.packages`` at start."""

    def start(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        spark_home = Path(pyspark.__file__).parent
        argv = [str(spark_home / "bin" / "spark-submit"), "--class", CONNECT_SERVER_CLASS,
                "--name", "cbt-spark-connect", "--driver-memory", DRIVER_MEMORY]
        for key, value in self.server_conf().items():
            argv += ["--conf", f"{key}={value}"]
        argv.append("spark-internal")
        env = {**os.environ, "SPARK_HOME": str(spark_home), "SPARK_LOCAL_IP": HOST, "PYSPARK_PYTHON": "python3"}
        # The embedded Derby metastore (metastore_db/) and derby.log land in the working directory.
        self.process.start(argv, cwd=self.home, env=env)

    def server_conf(self) -> dict[str, str]:
        warehouse = self.home / "warehouse"
        return {
            "spark.master": "local[*]",
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
