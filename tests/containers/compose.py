"""The compose stack (deploy/compose/docker-compose.yml) driven from the tests: one project per run, its own
loopback ports, its containers inspected, killed and stopped through the Docker CLI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from cbt.dev.pipeline import free_port

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "deploy" / "compose" / "docker-compose.yml"
DOCKER = "/usr/bin/docker" if Path("/usr/bin/docker").exists() else "docker"
SERVICES = ("coordinator", "worker", "bounds-cache", "invalidator", "api")
INFRA = ("kafka", "redis", "spark-master", "spark-worker", "spark-connect")


def compose_command() -> list[str]:
    """docker-compose (v1.29, Debian's) when installed, else the v2 plugin."""
    return ["docker-compose"] if shutil.which("docker-compose") else [DOCKER, "compose"]


@dataclass
class ComposeStack:
    """One compose project: a unique name, free loopback ports, logs saved under ``log_dir`` when it goes down."""

    log_dir: Path
    project: str = field(default_factory=lambda: f"cbtt{uuid.uuid4().hex[:8]}")
    ports: dict[str, int] = field(default_factory=lambda: {
        name: free_port() for name in ("KAFKA", "REDIS", "SPARK", "API")})
    redis_password: str = field(default_factory=lambda: uuid.uuid4().hex)
    kafka_password: str = field(default_factory=lambda: uuid.uuid4().hex)
    spark_secret: str = field(default_factory=lambda: uuid.uuid4().hex)
    spark_connect_token: str = field(default_factory=lambda: uuid.uuid4().hex)
    service_passwords: dict[str, str] = field(default_factory=lambda: {
        f"CBT_{store}_PASSWORD_{service}": uuid.uuid4().hex for store in ("KAFKA", "REDIS")
        for service in ("COORDINATOR", "WORKER", "BOUNDS_CACHE", "INVALIDATOR", "API")})
    """Each service's own Kafka and Redis password (deploy/compose/make-env.sh's variables)."""

    @property
    def kafka_bootstrap(self) -> str:
        return f"127.0.0.1:{self.ports['KAFKA']}"

    @property
    def kafka_client(self) -> dict[str, str]:
        """The services' Kafka credentials (deploy/compose/config.yaml's ``kafka.client``)."""
        return {"security.protocol": "sasl_plaintext", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "cbt",
                "sasl.password": self.kafka_password}

    @property
    def redis_url(self) -> str:
        return f"redis://cbt:{self.redis_password}@127.0.0.1:{self.ports['REDIS']}/0"

    @property
    def spark_remote(self) -> str:
        """With the Connect server's token (deploy/compose/config.yaml's ``spark.remote``)."""
        return f"sc://127.0.0.1:{self.ports['SPARK']}/;authorization=Bearer%20{self.spark_connect_token}"

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['API']}"

    def env(self) -> dict[str, str]:
        return {**os.environ, **{f"CBT_COMPOSE_{name}_PORT": str(port) for name, port in self.ports.items()},
                "CBT_REDIS_PASSWORD": self.redis_password, "CBT_KAFKA_PASSWORD": self.kafka_password,
                "CBT_SPARK_SECRET": self.spark_secret, "CBT_SPARK_CONNECT_TOKEN": self.spark_connect_token,
                **self.service_passwords}

    def compose(self, *args: str, timeout_s: float = 600) -> str:
        argv = [*compose_command(), "-p", self.project, "-f", str(COMPOSE_FILE), *args]
        done = subprocess.run(argv, env=self.env(), capture_output=True, text=True, timeout=timeout_s, check=False)
        if done.returncode != 0:
            raise AssertionError(f"{' '.join(argv[3:])} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
        return done.stdout

    def up(self, *services: str, scale_workers: int | None = None) -> None:
        scale = ["--scale", f"worker={scale_workers}"] if scale_workers is not None else []
        self.compose("up", "-d", "--no-recreate", *scale, *services)

    def container_ids(self, service: str) -> list[str]:
        return self.compose("ps", "-q", service).split()

    def inspect(self, container: str) -> dict[str, object]:
        out = subprocess.run([DOCKER, "inspect", container], capture_output=True, text=True, check=True).stdout
        state: dict[str, object] = json.loads(out)[0]["State"]
        return state

    def health(self, container: str) -> str:
        """``healthy``, ``unhealthy``, ``starting``, or the state (``exited``…) when it is not running."""
        state = self.inspect(container)
        if state.get("Status") != "running":
            return str(state.get("Status"))
        health = state.get("Health")
        return str(health.get("Status")) if isinstance(health, dict) else "running"

    def wait_healthy(self, services: tuple[str, ...], timeout_s: float = 600) -> float:
        """Until every container of ``services`` reports healthy; returns the seconds it took."""
        started = time.monotonic()
        while True:
            states = {f"{svc}/{cid[:12]}": self.health(cid) for svc in services for cid in self.container_ids(svc)}
            if states and all(s == "healthy" for s in states.values()):
                return time.monotonic() - started
            broken = {k: s for k, s in states.items() if s in ("exited", "dead", "unhealthy")}
            if broken or time.monotonic() - started > timeout_s:
                raise AssertionError(f"not healthy: {broken or states}; logs in {self.save_logs()}")
            time.sleep(2)

    def exited(self, services: tuple[str, ...] = SERVICES) -> dict[str, str]:
        """Containers of ``services`` that are not running (crashed), by service/id."""
        return {f"{svc}/{cid[:12]}": state for svc in services for cid in self.container_ids(svc)
                if (state := str(self.inspect(cid).get("Status"))) != "running"}

    def kill(self, container: str) -> None:
        subprocess.run([DOCKER, "kill", container], capture_output=True, check=True)

    def stop(self, container: str, timeout_s: int = 90) -> None:
        subprocess.run([DOCKER, "stop", "--time", str(timeout_s), container], capture_output=True, check=True,
                       timeout=timeout_s + 30)

    def save_logs(self) -> Path:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        out = self.log_dir / f"{self.project}.log"
        argv = [*compose_command(), "-p", self.project, "-f", str(COMPOSE_FILE), "logs", "--no-color"]
        with out.open("w") as sink:
            subprocess.run(argv, env=self.env(), stdout=sink, stderr=subprocess.STDOUT, timeout=120, check=False)
        return out

    def down(self) -> None:
        self.save_logs()
        self.compose("down", "-v", "--remove-orphans", "--timeout", "20")
