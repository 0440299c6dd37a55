"""Kafka, Redis and Spark Connect for the test fixtures from the project's own images, started with testcontainers
(``CBT_TEST_CONTAINERS=1``: tests/conftest.py's ``endpoints``), so the integration tests run wherever a Docker engine
is, and on the process launcher where none is. Every port is published on 127.0.0.1 only; Kafka's host port equals
its container port so the address it advertises is the one the tests reach."""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

# Read by testcontainers when it is imported: no reaper container (the fixture removes what it starts), and this
# machine's /.dockerenv must not make it look for containers at the bridge address.
for _name, _value in (("TESTCONTAINERS_RYUK_DISABLED", "true"), ("TESTCONTAINERS_CONNECTION_MODE", "docker_host"),
                      ("TC_HOST", "127.0.0.1")):
    os.environ.setdefault(_name, _value)

import redis  # noqa: E402
from testcontainers.core.container import DockerContainer  # noqa: E402

from cbt.adapters.kafka_admin import is_reachable  # noqa: E402
from cbt.dev.pipeline import free_port  # noqa: E402

VERSION = "0.1.0"
REPORT_ENV = "CBT_TEST_CONTAINERS_REPORT"
"""When set, the file the fixture writes its endpoints and containers to (the container suite checks it)."""


def on_loopback(container: DockerContainer, container_port: int, host_port: int) -> DockerContainer:
    """Publish ``container_port`` at 127.0.0.1:``host_port`` (testcontainers' own binding takes every interface)."""
    ports: dict[str, object] = container.ports  # type: ignore[assignment]
    ports[f"{container_port}/tcp"] = ("127.0.0.1", host_port)
    return container


def kafka(port: int) -> DockerContainer:
    """The cbt/kafka image with its client listener unauthenticated, as the integration tests' clients carry no
    credentials (as on the dev stack's Kafka); published on loopback only. The image's own SASL listener is proven
    by the compose stack (test_credentials.py)."""
    return (DockerContainer(f"cbt/kafka:{VERSION}")
            .with_env("KAFKA_ALLOW_UNAUTHENTICATED", "yes")
            .with_env("KAFKA_CFG_LISTENER_SECURITY_PROTOCOL_MAP", "CONTROLLER:PLAINTEXT,CLIENT:PLAINTEXT")
            .with_env("KAFKA_CFG_LISTENERS", f"CLIENT://0.0.0.0:{port},CONTROLLER://127.0.0.1:9093")
            .with_env("KAFKA_CFG_ADVERTISED_LISTENERS", f"CLIENT://127.0.0.1:{port}"))


def spark_connect(token: str) -> DockerContainer:
    """The cbt/spark image's Connect server in local mode: it admits clients presenting ``token``; its cluster
    secret (spark.authenticate) is required even with no cluster to join."""
    return (DockerContainer(f"cbt/spark:{VERSION}").with_command("connect")
            .with_env("SPARK_CONNECT_AUTHENTICATE_TOKEN", token).with_env("SPARK_AUTH_SECRET", uuid.uuid4().hex))


def wait_until(check: Callable[[], bool], what: str, timeout_s: float = 240) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} did not answer within {timeout_s:.0f}s")
        time.sleep(1)


@contextmanager
def project_containers() -> Iterator[tuple[str, str, str]]:
    """(Kafka bootstrap, Redis URL, Spark Connect remote) of fresh containers, removed on exit."""
    kafka_port, redis_port, spark_port = free_port(), free_port(), free_port()
    password = uuid.uuid4().hex  # the cbt/redis image admits only its user cbt, with this password
    spark_token = uuid.uuid4().hex  # the cbt/spark image's Connect server admits clients presenting it
    endpoints = (f"127.0.0.1:{kafka_port}", f"redis://cbt:{password}@127.0.0.1:{redis_port}/0",
                 f"sc://127.0.0.1:{spark_port}/;authorization=Bearer%20{spark_token}")
    containers = [on_loopback(kafka(kafka_port), kafka_port, kafka_port),
                  on_loopback(DockerContainer(f"cbt/redis:{VERSION}").with_env("REDIS_PASSWORD", password), 6379,
                              redis_port),
                  on_loopback(spark_connect(spark_token), 15002, spark_port)]
    with ExitStack() as stack:
        for container in containers:
            stack.enter_context(container)
        wait_until(lambda: is_reachable(endpoints[0], timeout_s=2), "kafka")
        wait_until(lambda: _answers_ping(endpoints[1]), "redis")
        wait_until(lambda: _answers_sql(endpoints[2]), "spark connect")
        _report(endpoints, containers)
        yield endpoints


def _answers_ping(url: str) -> bool:
    try:
        return bool(redis.Redis.from_url(url, socket_timeout=2).ping())
    except redis.RedisError:
        return False


def _answers_sql(remote: str) -> bool:
    from cbt.adapters.spark import connect

    try:
        session = connect(remote)
        session.sql("SELECT 1").collect()
        session.stop()
    except Exception:
        return False
    return True


def _report(endpoints: tuple[str, str, str], containers: list[DockerContainer]) -> None:
    path = os.environ.get(REPORT_ENV)
    if not path:
        return
    started = [{"image": c.image, "id": c.get_wrapped_container().id} for c in containers]
    Path(path).write_text(json.dumps({"endpoints": list(endpoints), "containers": started}))
