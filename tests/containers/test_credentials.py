"""The compose stack's trust boundary, seen from a client on the host (and, for Kafka, from a container on the
stack's network): Redis refuses a client without the user cbt's password (and one with a wrong one), Kafka refuses a
client without SASL credentials and one with a wrong password — the broker logs each refusal as an authentication
failure — and both serve the services' credentials."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

import pytest
from redis import Redis
from redis.exceptions import AuthenticationError

from tests.containers.compose import DOCKER, ComposeStack
from tests.containers.conftest import VERSION, skip_unless_enabled

pytestmark = [pytest.mark.containers, skip_unless_enabled(), pytest.mark.timeout(600)]

KAFKA_PROBE = """
import json, sys, time
from confluent_kafka import KafkaException, Producer
errors = []
producer = Producer({**json.loads(sys.argv[1]), "error_cb": lambda e: errors.append([e.name(), e.str()]),
                     "log_level": 0})
try:
    topics = sorted(producer.list_topics(timeout=10).topics)
except KafkaException as e:
    topics = None
    deadline = time.monotonic() + 10
    while not errors and time.monotonic() < deadline:
        producer.poll(0.5)
print(json.dumps({"topics": topics, "errors": errors}))
"""
"""Asks the brokers for their topics with the given client settings; prints the topics (``None`` if refused) and
the errors librdkafka reported. Run by the host's Python or the worker image's, so the same client code probes both
of Kafka's listeners."""

NO_HANDSHAKE = "Unexpected Kafka request of type METADATA during SASL handshake"
WRONG_PASSWORD = "Authentication failed during authentication due to invalid credentials with SASL mechanism"


def probe_from_host(settings: dict[str, Any]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", KAFKA_PROBE, json.dumps(settings)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def probe_in_network(stack: ComposeStack, settings: dict[str, Any]) -> dict[str, Any]:
    """The probe in a throwaway container of the worker image on the compose network (Kafka's listener CLIENT,
    kafka:9092, the one the services use)."""
    done = subprocess.run(
        [
            DOCKER,
            "run",
            "--rm",
            "--network",
            f"{stack.project}_default",
            "--entrypoint",
            "python3",
            f"cbt/worker:{VERSION}",
            "-c",
            KAFKA_PROBE,
            json.dumps(settings),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def broker_log_since(stack: ComposeStack, since: float) -> str:
    (kafka,) = stack.container_ids("kafka")
    done = subprocess.run(
        [DOCKER, "logs", "--since", f"{since:.3f}", kafka], capture_output=True, text=True, check=True
    )
    return done.stdout + done.stderr


def test_redis_refuses_a_client_without_credentials_and_serves_the_services_ones(stack: ComposeStack) -> None:
    port = stack.ports["REDIS"]
    with pytest.raises(AuthenticationError, match="Authentication required"):
        Redis(host="127.0.0.1", port=port).set("cbt:probe", "x")
    with pytest.raises(AuthenticationError):
        Redis(host="127.0.0.1", port=port, username="cbt", password="not-the-password").ping()
    with pytest.raises(AuthenticationError):
        Redis(host="127.0.0.1", port=port, username="default", password="").ping()
    assert Redis.from_url(stack.redis_url).ping()


def test_kafka_refuses_a_client_without_credentials_or_with_a_wrong_password_on_the_published_port(
    stack: ComposeStack,
) -> None:
    host = {"bootstrap.servers": stack.kafka_bootstrap}
    since = time.time() - 1
    anonymous = probe_from_host(host)
    assert anonymous["topics"] is None, anonymous
    wrong = probe_from_host({**host, **stack.kafka_client, "sasl.password": "not-the-password"})
    assert wrong["topics"] is None, wrong
    assert any(name == "_AUTHENTICATION" and WRONG_PASSWORD in text for name, text in wrong["errors"]), wrong
    unknown = probe_from_host({**host, **stack.kafka_client, "sasl.username": "admin"})
    assert unknown["topics"] is None and any(name == "_AUTHENTICATION" for name, _ in unknown["errors"]), unknown
    log = broker_log_since(stack, since)
    assert NO_HANDSHAKE in log, "the broker names the client without SASL as refused during the handshake"
    assert log.count("Failed authentication with") >= 2, "the broker logs both wrong credentials"
    assert stack.kafka_password not in log
    served = probe_from_host({**host, **stack.kafka_client})
    assert served["topics"] is not None, served


def test_kafka_refuses_a_client_without_credentials_inside_the_compose_network_and_serves_the_services_ones(
    stack: ComposeStack,
) -> None:
    inside = {"bootstrap.servers": "kafka:9092"}
    since = time.time() - 1
    anonymous = probe_in_network(stack, inside)
    assert anonymous["topics"] is None, anonymous
    wrong = probe_in_network(stack, {**inside, **stack.kafka_client, "sasl.password": "not-the-password"})
    assert any(name == "_AUTHENTICATION" and WRONG_PASSWORD in text for name, text in wrong["errors"]), wrong
    assert NO_HANDSHAKE in broker_log_since(stack, since)
    served = probe_in_network(stack, {**inside, **stack.kafka_client})
    assert served["topics"] is not None, served


def test_no_container_of_the_stack_logs_the_kafka_or_redis_password(stack: ComposeStack) -> None:
    logs = stack.save_logs().read_text()
    assert "kafka" in logs and "redis" in logs, "the logs of the stack's containers were read"
    assert stack.kafka_password not in logs
    assert stack.redis_password not in logs


def test_the_broker_keeps_its_password_out_of_its_environment_and_command_lines(stack: ComposeStack) -> None:
    """The broker reads the password from its config file only: not in its process's environment or command line,
    and the argument file that carried it to the storage format is gone."""
    broker = stack.container_ids("kafka")[0]
    script = ("for d in /proc/[0-9]*; do if grep -q 'kafka[.]Kafka' $d/cmdline 2>/dev/null; then "
              "tr '\\0' ' ' <$d/environ; echo; tr '\\0' ' ' <$d/cmdline; echo; fi; done; ls /tmp")
    seen = subprocess.run([DOCKER, "exec", broker, "sh", "-c", script], capture_output=True, text=True, timeout=60,
                          check=True).stdout
    assert "PATH=" in seen and "kafka.Kafka /tmp/" in seen, f"the broker's environment and command line: {seen}"
    assert stack.kafka_password not in seen
    assert "format-args" not in seen
