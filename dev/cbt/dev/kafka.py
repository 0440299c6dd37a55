"""Apache Kafka 4 in KRaft mode from Maven Central jars: one combined broker/controller on loopback."""

from __future__ import annotations

import base64
import shutil
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path

from cbt.adapters.kafka_admin import ensure_topics, is_reachable
from cbt.base.errors import InfraError
from cbt.contract.topics import Topics
from cbt.dev.layout import HOST, Layout
from cbt.dev.process import ManagedProcess

HEAP = "-Xmx768m"


class KafkaBroker:
    name = "kafka"
    port_env = "CBT_DEV_KAFKA_PORT"
    needs: tuple[str, ...] = ()
    detail = ""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.home = layout.var / "kafka"
        self.process = ManagedProcess(self.name, self.home / "kafka.pid", self.home / "kafka.log")

    @property
    def endpoint(self) -> str:
        return self.layout.kafka_bootstrap

    @property
    def port(self) -> int:
        return self.layout.kafka_port

    def install(self) -> None:
        """Resolve the broker jars with Maven (once; the local repository caches them)."""
        libs = self.home / "libs"
        if any(libs.glob("kafka_2.13-*.jar")):
            return
        if shutil.which("mvn") is None:
            raise InfraError("kafka: Maven (mvn) fetches the broker jars; install it: apt-get install maven")
        pom = self.layout.project / "deploy" / "local" / "kafka-pom.xml"
        cmd = ["mvn", "-q", "-B", "-f", str(pom), "dependency:copy-dependencies",
               f"-DoutputDirectory={libs}", "-DincludeScope=runtime"]
        _run(cmd, "kafka: fetching the broker jars with Maven failed")

    def start(self) -> None:
        config = self._write_config()
        if not (self.home / "data" / "meta.properties").exists():
            cluster_id = kraft_cluster_id()
            _run([*self._java(), "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(config)],
                 "kafka: formatting the KRaft storage failed")
        self.process.start([*self._java(), "kafka.Kafka", str(config)], cwd=self.home)

    def is_ready(self) -> bool:
        return is_reachable(self.endpoint, timeout_s=1.0)

    def after_ready(self) -> None:
        ensure_topics(self.endpoint, Topics().all())

    def _java(self) -> list[str]:
        log_config = self.layout.project / "deploy" / "local" / "kafka-log4j2.properties"
        return ["java", HEAP, "-Xms256m", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-Djava.awt.headless=true",
                f"-Dlog4j2.configurationFile={log_config}", "-cp", str(self.home / "libs" / "*")]

    def _write_config(self) -> Path:
        lay = self.layout
        settings = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@{HOST}:{lay.kafka_controller_port}",
            "listeners": f"PLAINTEXT://{HOST}:{lay.kafka_port},CONTROLLER://{HOST}:{lay.kafka_controller_port}",
            "advertised.listeners": f"PLAINTEXT://{HOST}:{lay.kafka_port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(self.home / "data"),
            "num.partitions": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "4",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            # A new group's first rebalance waits 1 s for its members (Kafka's default: 3 s). At 0, each of a worker's
            # consumers joining after the first was a rebalance of its own, and tasks already started were delivered
            # again to the partitions' new owners.
            "group.initial.rebalance.delay.ms": "1000",
            "auto.create.topics.enable": "false",
            "delete.topic.enable": "true",
            "log.retention.hours": "24",
        }
        path = self.home / "server.properties"
        self.home.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
        return path


def _run(cmd: list[str], failure: str) -> None:
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).splitlines()[-15:])
        raise InfraError(f"{failure}:\n{tail}")


def kraft_cluster_id(random_bytes: Callable[[], bytes] = lambda: uuid.uuid4().bytes) -> str:
    """A KRaft cluster id (16 random bytes, URL-safe base64) that never begins with ``-``: the storage tool would
    read it as an option and fail to format (about one id in 64). Kafka's own ``Uuid.randomUuid`` redraws the same
    way."""
    while (cluster_id := base64.urlsafe_b64encode(random_bytes()).decode().rstrip("=")).startswith("-"):
        pass
    return cluster_id
