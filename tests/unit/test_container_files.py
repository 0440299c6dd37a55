"""The container files say what the images and the compose stack promise, checked without an engine: hadolint on
every Dockerfile, one image per service distribution (non-root, no JVM, its own command), base images as build
arguments defaulting to the official ones, versions shared with the local launcher, and a compose file that
publishes on loopback only, lets the worker scale and runs the project's configuration with the containers' host
names. (tests/containers builds and runs them.)"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from cbt.config.settings import load_config
from cbt.dev.spark import DELTA_PACKAGE

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "deploy" / "docker"
COMPOSE = ROOT / "deploy" / "compose"
SERVICES = sorted(p.name for p in (ROOT / "services").iterdir() if (p / "pyproject.toml").is_file())
INFRA = ["spark", "kafka", "redis"]
COMPOSE_ENV = {"CBT_REDIS_PASSWORD": "pw", "CBT_KAFKA_PASSWORD": "kafka-pw", "CBT_SPARK_CONNECT_TOKEN": "spark-token"}
"""The variables compose requires, as deploy/compose/config.yaml reads them."""
OFFICIAL_BASES = {"PYTHON_BASE": "python:3.11-slim-bookworm", "JRE_BASE": "eclipse-temurin:17-jre",
                  "DEBIAN_BASE": "debian:bookworm-slim"}


def dockerfiles() -> list[Path]:
    return sorted([*DOCKER.glob("*.Dockerfile"), *DOCKER.glob("base/*.Dockerfile")])


def instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n", " ", "\n".join(line for line in path.read_text().splitlines()
                                            if not line.lstrip().startswith("#")))
    return [(words[0].upper(), words[1].strip() if len(words) > 1 else "")
            for line in joined.splitlines() if (words := line.strip().split(None, 1))]


def final_stage(path: Path) -> list[tuple[str, str]]:
    steps = instructions(path)
    last_from = max(i for i, (op, _) in enumerate(steps) if op == "FROM")
    return steps[last_from:]


def test_hadolint_passes_on_every_dockerfile() -> None:
    hadolint = Path(sys.executable).parent / "hadolint"
    files = dockerfiles()
    assert len(files) == len(SERVICES) + len(INFRA) + 2
    result = subprocess.run([str(hadolint), "--no-color", *map(str, files)], capture_output=True, text=True,
                            check=False)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("service", SERVICES)
def test_each_service_image_installs_its_own_distribution_and_runs_it_as_a_non_root_user(service: str) -> None:
    path = DOCKER / f"{service}.Dockerfile"
    steps = instructions(path)
    assert ("ARG", f"PYTHON_BASE={OFFICIAL_BASES['PYTHON_BASE']}") in steps
    assert [args for op, args in steps if op == "FROM"] == ["${PYTHON_BASE} AS builder", "${PYTHON_BASE}"]
    copies = " ".join(args for op, args in steps if op == "COPY")
    assert f"services/{service} " in copies and "shared " in copies
    assert f"requirements/{service}.txt" in copies, "its dependencies are those uv.lock pins for it"
    final = final_stage(path)
    user = [args for op, args in final if op == "USER"]
    assert user and user[-1].split(":")[0] not in ("0", "root")
    assert ("ENTRYPOINT", f'["cbt-{service}"]') in final
    assert not re.search(r"java|jdk|jre|gcc|build-essential", " ".join(a for _, a in final), re.I)
    assert ("COPY", "--from=builder /opt/cbt /opt/cbt") in final, "only the built environment leaves the builder"


@pytest.mark.parametrize("image", INFRA)
def test_infrastructure_images_take_their_base_as_a_build_argument_and_run_as_non_root(image: str) -> None:
    steps = instructions(DOCKER / f"{image}.Dockerfile")
    base = "DEBIAN_BASE" if image == "redis" else "JRE_BASE"
    assert ("ARG", f"{base}={OFFICIAL_BASES[base]}") in steps
    assert ("FROM", f"${{{base}}}") in steps
    user = [args for op, args in steps if op == "USER"]
    assert user and user[-1].split(":")[0] not in ("0", "root")
    assert any(op == "HEALTHCHECK" for op, _ in steps)


def test_the_spark_image_carries_the_delta_release_the_local_launcher_resolves() -> None:
    pom = (DOCKER / "spark" / "delta-pom.xml").read_text()
    version = re.search(r"<delta.version>([^<]+)</delta.version>", pom)
    assert version and f"io.delta:delta-spark_2.13:{version.group(1)}" == DELTA_PACKAGE


def compose_file() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((COMPOSE / "docker-compose.yml").read_text())
    return loaded


def test_compose_runs_every_service_and_the_infrastructure_from_the_projects_images() -> None:
    compose = compose_file()
    assert compose["version"] == "2.4", "the last format with depends_on conditions that v1.29 and v2 both read"
    services = compose["services"]
    expected = {*SERVICES, "kafka", "redis", "spark-master", "spark-worker", "spark-connect"}
    assert set(services) == expected
    for name, service in services.items():
        image = name if name in SERVICES else name.split("-")[0]
        assert service["image"] == f"cbt/{image}:${{CBT_VERSION:-0.1.0}}"


def test_compose_publishes_on_loopback_only_and_lets_the_worker_scale() -> None:
    services = compose_file()["services"]
    for name, service in services.items():
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port} beyond loopback"
    worker = services["worker"]
    assert "container_name" not in worker and "ports" not in worker, "--scale worker=N needs neither"


def test_compose_services_mount_config_and_models_read_only_and_wait_for_healthy_dependencies() -> None:
    services = compose_file()["services"]
    for name in SERVICES:
        service = services[name]
        # the api reads the warehouse; the others keep the admin record there as Delta files (spark.warehouse)
        warehouse = "spark-warehouse:/data/warehouse" + (":ro" if name == "api" else "")
        assert set(service["volumes"]) == {"./config.yaml:/app/config.yaml:ro", "../../models:/app/models:ro",
                                           warehouse}
        assert service["depends_on"] == {dep: {"condition": "service_healthy"}
                                         for dep in ("kafka", "redis", "spark-connect")}


def test_compose_redis_admits_only_its_users_each_service_with_its_own_password() -> None:
    """Redis refuses clients without credentials (the image's default user is off; the container suite shows the
    refusal); each service logs in as its own user with a password from a variable of its own, which compose
    requires and gives to that service alone."""
    services = compose_file()["services"]
    assert services["redis"]["environment"]["REDIS_PASSWORD"].startswith("${CBT_REDIS_PASSWORD:?")
    for name in SERVICES:
        var = f"CBT_REDIS_PASSWORD_{name.upper().replace('-', '_')}"
        assert services["redis"]["environment"][f"REDIS_PASSWORD_{name.upper().replace('-', '_')}"].startswith(
            f"${{{var}:?")
        env = services[name]["environment"]
        assert env["CBT_REDIS_USER"] == f"cbt-{name}" and env["CBT_REDIS_PASSWORD"].startswith(f"${{{var}:?")
        assert not [v for k, v in env.items() if "PASSWORD" in k and var not in str(v) and "KAFKA" not in k]
    conf = (ROOT / "deploy" / "docker" / "redis" / "redis.conf").read_text()
    assert "protected-mode yes" in conf and "protected-mode no" not in conf
    entrypoint = (ROOT / "deploy" / "docker" / "redis" / "entrypoint.sh").read_text()
    assert "user default off" in entrypoint and "-@dangerous" in entrypoint


def test_compose_kafka_admits_only_its_users_each_service_with_its_own_password() -> None:
    """Every Kafka listener but the loopback controller asks for SASL credentials (the image refuses a listener
    without; the container suite shows the refusals); each service logs in as its own user with a password from a
    variable of its own, which compose requires; the super user's password goes to the broker alone."""
    services = compose_file()["services"]
    env = services["kafka"]["environment"]
    assert env["KAFKA_PASSWORD"].startswith("${CBT_KAFKA_PASSWORD:?")
    for name in SERVICES:
        var = f"CBT_KAFKA_PASSWORD_{name.upper().replace('-', '_')}"
        assert env[f"KAFKA_PASSWORD_{name.upper().replace('-', '_')}"].startswith(f"${{{var}:?")
        mine = services[name]["environment"]
        assert mine["CBT_KAFKA_USER"] == f"cbt-{name}" and mine["CBT_KAFKA_PASSWORD"].startswith(f"${{{var}:?")
        assert "CBT_KAFKA_PASSWORD:?" not in str(mine), "the super user's password goes to no service"
    protocols = dict(entry.split(":") for entry in env["KAFKA_CFG_LISTENER_SECURITY_PROTOCOL_MAP"].split(","))
    listeners = dict(entry.split("://") for entry in env["KAFKA_CFG_LISTENERS"].split(","))
    assert listeners.pop("CONTROLLER").startswith("127.0.0.1:")
    assert {protocols[name] for name in listeners} == {"SASL_PLAINTEXT"}


def test_compose_spark_authenticates_its_members_and_its_clients_with_required_secrets() -> None:
    """The master, worker and Connect server share the cluster's secret (spark.authenticate; the image refuses to
    start without it), the Connect server admits only clients with its token, which every service gets: both from
    variables compose requires, never written in the file."""
    services = compose_file()["services"]
    secret, token = "${CBT_SPARK_SECRET:?", "${CBT_SPARK_CONNECT_TOKEN:?"
    assert all(services[name]["environment"]["SPARK_AUTH_SECRET"].startswith(secret)
               for name in ("spark-master", "spark-worker", "spark-connect"))
    assert services["spark-connect"]["environment"]["SPARK_CONNECT_AUTHENTICATE_TOKEN"].startswith(token)
    assert all(services[name]["environment"]["CBT_SPARK_CONNECT_TOKEN"].startswith(token) for name in SERVICES)
    assert all("SPARK_AUTH_SECRET" not in services[name]["environment"] for name in SERVICES)
    assert services["spark-connect"]["ports"] == ["127.0.0.1:${CBT_COMPOSE_SPARK_PORT:-25002}:15002"]
    entrypoint = (DOCKER / "spark" / "entrypoint.sh").read_text()
    assert "spark.authenticate true" in entrypoint and "--properties-file" in entrypoint


def test_compose_config_is_the_projects_config_with_the_containers_addresses() -> None:
    ours = load_config(ROOT / "config.yaml", {}).model_dump()
    theirs = load_config(COMPOSE / "config.yaml", COMPOSE_ENV).model_dump()
    assert (theirs["kafka"]["bootstrap_servers"], theirs["redis"]["url"], theirs["spark"]["remote"]) == (
        "kafka:9092", "redis://cbt:pw@redis:6379/0", "sc://spark-connect:15002/;authorization=Bearer%20spark-token")
    assert theirs["kafka"]["client"] == {"security.protocol": "sasl_plaintext", "sasl.mechanism": "SCRAM-SHA-512",
                                         "sasl.username": "cbt", "sasl.password": "kafka-pw"}
    assert theirs["health_addr"].startswith("0.0.0.0:") and theirs["api"]["addr"].startswith("0.0.0.0:")
    assert theirs["api"]["tables"]["warehouse"] == "/data/warehouse", "the read API reads the warehouse volume"
    assert theirs["spark"]["warehouse"] == "/data/warehouse", "the admin record's files are on the warehouse volume"
    assert without_addresses(ours, ROOT) == without_addresses(theirs, COMPOSE)


def without_addresses(config: dict[str, Any], base: Path) -> dict[str, Any]:
    """The configuration less where things are (endpoints, bind addresses, model paths made relative) and the task
    topics' partitions, which the compose stack sizes for its scaled workers; and Kafka's credentials."""
    config["kafka"].pop("bootstrap_servers"), config["redis"].pop("url"), config["spark"].pop("remote")
    config["spark"].pop("warehouse")
    config["kafka"].pop("client")
    config["api"].pop("addr"), config["api"]["tables"].pop("warehouse"), config.pop("health_addr")
    config.pop("metrics_addr")
    config["kafka"].pop("task_topic_partitions")
    for kind in ("external", "transformations"):
        config["models"][kind]["paths"] = [Path(p).relative_to(base) for p in config["models"][kind]["paths"]]
    return config


def test_task_topics_have_a_partition_for_each_consumer_of_three_scaled_workers() -> None:
    """A worker runs ``worker.concurrency`` consumers per pool; a group's consumers beyond the partitions get none."""
    config = load_config(COMPOSE / "config.yaml", COMPOSE_ENV)
    assert config.kafka.task_topic_partitions >= 3 * config.worker.concurrency
