"""Spark's own authentication in a render, checked offline: the standalone cluster authenticates its members with
one shared secret (``spark.authenticate``) and the Connect server its clients with a token, both only from Secrets.

The cbt/spark image turns ``spark.authenticate`` on from ``SPARK_AUTH_SECRET`` and Spark Connect's token check from
``SPARK_CONNECT_AUTHENTICATE_TOKEN`` (deploy/docker/spark/entrypoint.sh); a service presents the token in
``spark.remote`` (``sc://host:15002/;authorization=Bearer%20<token>``)."""

from __future__ import annotations

import re
from urllib.parse import unquote

from cbt.config.settings import Config
from tests.deploy.kube import Doc, configmap, containers, plain_env, pod_spec, workloads

COMPONENT = "app.kubernetes.io/component"
SPARK = ("spark-master", "spark-worker", "spark-connect")
AUTH_SECRET = "SPARK_AUTH_SECRET"
CONNECT_TOKEN = "SPARK_CONNECT_AUTHENTICATE_TOKEN"
INLINE_SETTING = re.compile(r"spark\.authenticate\.secret|spark\.connect\.authenticate\.token")
"""Settings that would put a secret into a ConfigMap, a command line or a Spark setting clients can read back."""
AUTH_OFF = re.compile(r"spark\.authenticate\s*[=:\s]\s*false\b", re.IGNORECASE)
BEARER = re.compile(r";authorization=Bearer(?:%20|\s)+([^;\s]+)", re.IGNORECASE)


def spark_pods(docs: list[Doc]) -> list[tuple[str, Doc]]:
    """(component, workload) of every Spark master, worker and Connect server of the render."""
    found = []
    for workload in workloads(docs):
        component = workload["spec"]["template"]["metadata"]["labels"].get(COMPONENT)
        if component in SPARK:
            found.append((component, workload))
    return found


def _secret_ref(container: Doc, name: str) -> tuple[str, str] | None:
    """(Secret, key) the variable ``name`` comes from, when it comes from a (required) Secret."""
    for entry in container.get("env", []):
        ref = entry.get("valueFrom", {}).get("secretKeyRef")
        if entry["name"] == name and ref is not None and not ref.get("optional"):
            return ref["name"], ref["key"]
    return None


def _texts(docs: list[Doc], workload: Doc, container: Doc) -> list[tuple[str, str]]:
    """(where, text) of everything that configures Spark in the container: its command line, its literal
    environment and the files of the ConfigMaps it mounts."""
    texts = [("args", " ".join([*container.get("command", []), *container.get("args", [])]))]
    texts += [(f"env {e['name']}", str(e["value"])) for e in container.get("env", []) if "value" in e]
    mounted = {m["name"] for m in container.get("volumeMounts", [])}
    for volume in pod_spec(workload).get("volumes", []):
        cm = configmap(docs, volume["configMap"]["name"]) if "configMap" in volume and volume["name"] in mounted \
            else None
        texts += [(f"ConfigMap {volume['configMap']['name']}/{key}", text)
                  for key, text in (cm or {}).get("data", {}).items()]
    return texts


def spark_auth_problems(docs: list[Doc]) -> list[str]:
    """Every Spark pod holds the cluster's secret from one Secret key, the Connect server its token from a Secret;
    nothing turns ``spark.authenticate`` off or carries either secret inline."""
    problems, secrets = [], {}
    for component, workload in spark_pods(docs):
        name = workload["metadata"]["name"]
        for container in containers(workload):
            ref = _secret_ref(container, AUTH_SECRET)
            if ref is None:
                problems.append(f"{name}/{container['name']}: no {AUTH_SECRET} from a Secret: spark.authenticate is "
                                "off (the image refuses to start)")
            else:
                secrets[name] = ref
            if component == "spark-connect" and _secret_ref(container, CONNECT_TOKEN) is None:
                problems.append(f"{name}/{container['name']}: no {CONNECT_TOKEN} from a Secret: Spark Connect "
                                "admits any client")
            for where, text in _texts(docs, workload, container):
                if INLINE_SETTING.search(text) or (where.startswith("env ") and where[4:] in (AUTH_SECRET,
                                                                                               CONNECT_TOKEN)):
                    problems.append(f"{name}/{container['name']}: {where}: a Spark secret inline (only from a "
                                    "Secret, by secretKeyRef)")
                if AUTH_OFF.search(text):
                    problems.append(f"{name}/{container['name']}: {where}: turns spark.authenticate off")
    if len(set(secrets.values())) > 1:
        problems.append(f"the Spark pods do not share one secret: {sorted(secrets.items())}")
    return problems


def connect_token_problems(service: str, config: Config, docs: list[Doc]) -> list[str]:
    """The service presents the Connect server's own token (the same Secret key) in ``spark.remote``."""
    remote = config.spark.remote
    if remote is None:
        return []
    servers = [c for component, w in spark_pods(docs) if component == "spark-connect" for c in containers(w)]
    expected = {plain_env(c).get(CONNECT_TOKEN) for c in servers} - {None}
    found = BEARER.search(remote)
    if found is None:
        return [f"{service}: spark.remote presents no token (;authorization=Bearer%20${{…}}): Spark Connect refuses it"]
    if unquote(found.group(1)) not in expected:
        return [f"{service}: spark.remote's token is not the Connect server's (it reads {sorted(map(str, expected))})"]
    return []
