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
from redis.exceptions import AuthenticationError, NoPermissionError

from cbt.adapters.kafka_admin import ensure_topics
from cbt.contract.topics import Topics
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


def service_kafka(stack: ComposeStack, service: str) -> dict[str, str]:
    """A service's own Kafka login (its container's CBT_KAFKA_USER / CBT_KAFKA_PASSWORD)."""
    return {**stack.kafka_client, "sasl.username": f"cbt-{service}",
            "sasl.password": stack.service_passwords[f"CBT_KAFKA_PASSWORD_{service.upper().replace('-', '_')}"]}


KAFKA_ATTEMPTS = """
import json, sys
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient
settings, topic, doomed = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
out = {}
producer = Producer({**settings, "message.timeout.ms": 10000, "log_level": 0})
delivered = []
producer.produce(topic, b"{}", on_delivery=lambda err, msg: delivered.append(err.name() if err else "ok"))
producer.flush(15)
out["produce"] = delivered[0] if delivered else "no answer"
admin = AdminClient({**settings, "log_level": 0})
try:
    admin.delete_topics([doomed], operation_timeout=10)[doomed].result(15)
    out["delete"] = "ok"
except KafkaException as e:
    out["delete"] = e.args[0].name()
print(json.dumps(out))
"""


def kafka_attempts(settings: dict[str, str], topic: str, doomed: str) -> dict[str, str]:
    done = subprocess.run([sys.executable, "-c", KAFKA_ATTEMPTS, json.dumps(settings), topic, doomed],
                          capture_output=True, text=True, timeout=120, check=True)
    result: dict[str, str] = json.loads(done.stdout)
    return result


def test_each_service_may_write_only_its_own_topics_and_none_may_delete_a_topic(stack: ComposeStack) -> None:
    """Issue 33: with one Kafka user for all, any service — the api included — could delete every topic. Now each
    has its own, and the broker's authorizer holds it to its topics."""
    host = {"bootstrap.servers": stack.kafka_bootstrap}
    ensure_topics(stack.kafka_bootstrap, Topics("cbt.").all(), extra=stack.kafka_client)  # (as the operators' user)
    api = kafka_attempts({**host, **service_kafka(stack, "api")}, "cbt.interval-completed", "cbt.task-failed")
    assert api == {"produce": "TOPIC_AUTHORIZATION_FAILED", "delete": "TOPIC_AUTHORIZATION_FAILED"}, api
    bounds = kafka_attempts({**host, **service_kafka(stack, "bounds-cache")}, "cbt.bounds-updated",
                            "cbt.interval-completed")
    assert bounds == {"produce": "ok", "delete": "TOPIC_AUTHORIZATION_FAILED"}, bounds
    worker = kafka_attempts({**host, **service_kafka(stack, "worker")}, "cbt.invalidation", "cbt.invalidation")
    assert worker["produce"] == "TOPIC_AUTHORIZATION_FAILED", worker


def test_each_service_has_its_own_redis_user_and_none_may_flush_list_keys_or_reconfigure(stack: ComposeStack) -> None:
    port = stack.ports["REDIS"]
    for service in ("coordinator", "worker", "bounds-cache", "invalidator", "api"):
        password = stack.service_passwords[f"CBT_REDIS_PASSWORD_{service.upper().replace('-', '_')}"]
        client = Redis(host="127.0.0.1", port=port, username=f"cbt-{service}", password=password)
        assert client.set(f"cbt:probe:{service}", "x") and client.get(f"cbt:probe:{service}") == b"x"
        for command in (("FLUSHALL",), ("FLUSHDB",), ("KEYS", "*"), ("CONFIG", "GET", "*")):
            with pytest.raises(NoPermissionError, match="no permissions"):
                client.execute_command(*command)
    with pytest.raises(NoPermissionError, match="no permissions"):
        Redis.from_url(stack.redis_url).flushall()


def test_redis_keeps_only_the_passwords_hashes_and_none_in_its_environment(stack: ComposeStack) -> None:
    (redis,) = stack.container_ids("redis")
    script = ("for d in /proc/[0-9]*; do if grep -q '^redis[-]server' $d/cmdline 2>/dev/null; then "
              "tr '\\0' ' ' <$d/environ; echo; fi; done; cat /tmp/cbt-users.acl")
    seen = subprocess.run([DOCKER, "exec", redis, "sh", "-c", script], capture_output=True, text=True, timeout=60,
                          check=True).stdout
    # (redis-server writes its process title over the environment's memory, so /proc shows little of it either way;
    # what must hold: no password there, and the ACL file with hashes only — before, it held the passwords)
    assert "user cbt-worker on #" in seen and "user default off" in seen, seen
    for password in (stack.redis_password, *stack.service_passwords.values()):
        assert password not in seen


def test_each_service_receives_only_its_own_credentials(stack: ComposeStack) -> None:
    services = ("coordinator", "worker", "bounds-cache", "invalidator", "api")
    stack.compose("up", "--no-start", "--no-deps", "--no-recreate", *services)  # (their containers, as made)
    for service in services:
        container = stack.container_ids(service)[0]
        out = subprocess.run([DOCKER, "inspect", "--format", "{{json .Config.Env}}", container], capture_output=True,
                             text=True, check=True).stdout
        env = dict(item.split("=", 1) for item in json.loads(out))
        suffix = service.upper().replace("-", "_")
        assert env["CBT_KAFKA_USER"] == env["CBT_REDIS_USER"] == f"cbt-{service}"
        assert env["CBT_KAFKA_PASSWORD"] == stack.service_passwords[f"CBT_KAFKA_PASSWORD_{suffix}"]
        others = {v for k, v in stack.service_passwords.items() if not k.endswith(f"_{suffix}")}
        held = set(env.values())
        assert not held & (others | {stack.kafka_password, stack.redis_password, stack.spark_secret}), service
