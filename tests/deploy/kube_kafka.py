"""Kafka's trust boundary in a render, offline: the cbt/kafka broker authenticates every listener another pod can
reach (SASL_PLAINTEXT or SASL_SSL; PLAINTEXT and SSL only on the pod's loopback), its credentials and the services'
come from Secrets (never from a manifest or the ConfigMap), the services log in with the protocol the broker speaks
and trust its certificate from a Secret, and KEDA's triggers log in as the services do."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from cbt.config.settings import Config
from tests.deploy.kube import Doc, containers, find, pod_spec, service_container, workloads

IMAGE = "cbt/kafka:"
DEFAULTS = {
    "KAFKA_CFG_LISTENERS": "CLIENT://0.0.0.0:9092,CONTROLLER://127.0.0.1:9093",
    "KAFKA_CFG_LISTENER_SECURITY_PROTOCOL_MAP": "CONTROLLER:PLAINTEXT,CLIENT:SASL_PLAINTEXT",
}
"""The image's own defaults (deploy/docker/kafka/entrypoint.sh) where the manifest sets nothing."""
AUTHENTICATED = ("SASL_PLAINTEXT", "SASL_SSL")
LOOPBACK = ("127.0.0.1", "localhost")
SECRET_NAME = re.compile(r"PASSWORD|SECRET|TOKEN", re.IGNORECASE)
KEDA_SASL = {"SCRAM-SHA-512": "scram_sha512", "SCRAM-SHA-256": "scram_sha256", "PLAIN": "plaintext"}


def listeners(container: Doc) -> dict[str, tuple[str, int, str]]:
    """Listener name -> (bound host, port, security protocol) of a cbt/kafka container, as its entrypoint reads
    them."""
    env = {**DEFAULTS, **{e["name"]: str(e["value"]) for e in container.get("env", []) if "value" in e}}
    protocol_of = dict(entry.split(":", 1) for entry in env["KAFKA_CFG_LISTENER_SECURITY_PROTOCOL_MAP"].split(","))
    found = {}
    for listener in env["KAFKA_CFG_LISTENERS"].split(","):
        name, _, address = listener.partition("://")
        host, _, port = address.rpartition(":")
        found[name] = (host, int(port), protocol_of.get(name, name))
    return found


def brokers(docs: list[Doc]) -> list[tuple[Doc, Doc]]:
    """(workload, container) of every cbt/kafka container in the render."""
    return [(w, c) for w in workloads(docs) for c in containers(w) if c.get("image", "").startswith(IMAGE)]


def inline_secret_problems(docs: list[Doc]) -> list[str]:
    """No container has a password, secret or token written in its manifest: such values come by ``secretKeyRef``."""
    return [
        f"{w['metadata']['name']}/{c['name']}: {e['name']} is written in the manifest (take it from a Secret "
        "by secretKeyRef)"
        for w in workloads(docs)
        for c in containers(w)
        for e in c.get("env", [])
        if SECRET_NAME.search(e["name"]) and "value" in e
    ]


def broker_problems(docs: list[Doc]) -> list[str]:
    """Every listener of a cbt/kafka broker that another pod can reach asks for SASL credentials, which come from a
    Secret; TLS listeners serve a certificate mounted from a Secret."""
    problems = []
    for workload, container in brokers(docs):
        where = workload["metadata"]["name"]
        env = {e["name"]: e for e in container.get("env", [])}
        if env.get("KAFKA_ALLOW_UNAUTHENTICATED", {}).get("value") == "yes":
            problems.append(f"{where}: KAFKA_ALLOW_UNAUTHENTICATED=yes lets clients in without credentials")
        for name, (host, port, protocol) in listeners(container).items():
            if protocol not in AUTHENTICATED and host not in LOOPBACK:
                problems.append(f"{where}: listener {name} ({host}:{port}) is {protocol}: clients need no credentials")
            if protocol.endswith("SSL") and not _secret_mount(
                workload, container, env.get("KAFKA_TLS_DIR", {}).get("value", "") + "/tls.crt"
            ):
                problems.append(
                    f"{where}: listener {name} is {protocol} without a certificate from a Secret (KAFKA_TLS_DIR)"
                )
        if "secretKeyRef" not in env.get("KAFKA_PASSWORD", {}).get("valueFrom", {}):
            problems.append(f"{where}: KAFKA_PASSWORD is not from a Secret")
    return problems


def client_problems(docs: list[Doc], configs: dict[str, Config | None]) -> list[str]:
    """Each service logs in to the render's broker with the protocol of the listener its bootstrap address reaches,
    its password from a Secret (``${VAR}`` fed by ``secretKeyRef``: the render's stand-in ``secret-…``), and on TLS
    trusts a certificate mounted from a Secret."""
    found = brokers(docs)
    if not found:
        return []  # the base: Kafka is outside the render
    ports = {port: (name, protocol) for _, c in found for name, (_, port, protocol) in listeners(c).items()}
    deployments = {d["metadata"]["name"]: d for d in find(docs, "Deployment")}
    problems = []
    for service, config in configs.items():
        if config is None:
            continue
        client = {k: str(v) for k, v in config.kafka.client.items()}
        port = int(config.kafka.bootstrap_servers.split(",")[0].rpartition(":")[2])
        listener, protocol = ports.get(port, ("?", "?"))
        if client.get("security.protocol", "PLAINTEXT").upper() != protocol:
            problems.append(
                f"{service}: kafka.client security.protocol {client.get('security.protocol', 'PLAINTEXT')}"
                f", the broker's listener {listener} is {protocol}"
            )
        if protocol in AUTHENTICATED and not client.get("sasl.password", "").startswith("secret-"):
            problems.append(
                f"{service}: kafka.client sasl.password is not from a Secret (write ${{VAR}} in "
                "config.yaml and set VAR by secretKeyRef)"
            )
        deployment = deployments[f"cbt-{service}"]
        ca = client.get("ssl.ca.location")
        if protocol == "SASL_SSL" and not (ca and _secret_mount(deployment, service_container(deployment), ca)):
            problems.append(f"{service}: kafka.client ssl.ca.location {ca} is not mounted from a Secret")
    return problems


def keda_problems(docs: list[Doc], worker: Config) -> list[str]:
    """Each kafka trigger of a ScaledObject logs in as the workers do: their SASL mechanism and TLS, and a
    TriggerAuthentication of the render whose user and password (and CA, on TLS) come from Secrets."""
    client = {k: str(v) for k, v in worker.kafka.client.items()}
    protocol = client.get("security.protocol", "PLAINTEXT").upper()
    if protocol not in AUTHENTICATED:
        return []
    auths = {a["metadata"]["name"]: a for a in find(docs, "TriggerAuthentication")}
    problems = []
    for scaled in find(docs, "ScaledObject"):
        for trigger in (t for t in scaled["spec"]["triggers"] if t["type"] == "kafka"):
            topic, meta = trigger["metadata"].get("topic"), trigger["metadata"]
            sasl = KEDA_SASL.get(client.get("sasl.mechanism", "").upper())
            if meta.get("sasl") != sasl:
                problems.append(f"trigger {topic}: sasl {meta.get('sasl')}, the workers log in with {sasl}")
            if (meta.get("tls") == "enable") != (protocol == "SASL_SSL"):
                problems.append(f"trigger {topic}: tls {meta.get('tls')}, the workers use {protocol}")
            auth = auths.get(trigger.get("authenticationRef", {}).get("name", ""))
            if auth is None:
                problems.append(f"trigger {topic}: no TriggerAuthentication of the render")
                continue
            given = {r["parameter"] for r in auth["spec"].get("secretTargetRef", [])}
            needed = {"username", "password", *(("ca",) if protocol == "SASL_SSL" else ())}
            if needed - given:
                problems.append(
                    f"trigger {topic}: TriggerAuthentication {auth['metadata']['name']} takes no "
                    f"{sorted(needed - given)} from a Secret"
                )
    return problems


def _secret_mount(workload: Doc, container: Doc, path: str) -> bool:
    """Whether the file ``path`` is in the container's mount of a Secret volume."""
    volumes = {v["name"]: v for v in pod_spec(workload).get("volumes", [])}
    file = PurePosixPath(path)
    for mount in container.get("volumeMounts", []):
        secret = volumes.get(mount["name"], {}).get("secret")
        if secret is None or not file.is_relative_to(mount["mountPath"]):
            continue
        inside = str(file.relative_to(mount["mountPath"]))
        if "items" not in secret or inside in {i["path"] for i in secret["items"]}:
            return True
    return False


def kafka_problems(docs: list[Doc], configs: dict[str, Config | None]) -> list[str]:
    """Every Kafka check of one render."""
    worker = configs.get("worker")
    return (
        inline_secret_problems(docs)
        + broker_problems(docs)
        + client_problems(docs, configs)
        + (keda_problems(docs, worker) if worker is not None else [])
    )
