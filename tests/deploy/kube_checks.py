"""The offline checks of the rendered Kubernetes manifests. Each takes rendered objects and returns the problems
found (empty when right), so a test can also feed it a broken copy and see the problem named.

Schema checks: every object against the Kubernetes OpenAPI schemas (kubernetes-validate, strict), KEDA's
ScaledObject against the openAPIV3Schema of KEDA's own CRD. Project checks: what the pods would load and listen on,
derived from the project's own code (config loader, model loader, the worker's subscriptions, port offsets)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import jsonschema
import kubernetes_validate
import yaml

from cbt.adapters.kafka_bus import make_broker
from cbt.cli.run_cmd import PORT_OFFSET, SHUTDOWN_SLACK_S, _offset_addr
from cbt.config.settings import Config, ConfigProblems, load_config
from cbt.models.dag import ModelSet
from cbt.models.loader import ModelProblems, load_models
from cbt.models.render import exec_argv
from cbt.worker.app import consumed_pools, subscribe
from cbt.worker.consumer import PipelinedConsumer
from tests.deploy.kube import (
    REPO,
    SERVICES,
    Doc,
    containers,
    find,
    materialize,
    one,
    plain_env,
    pod_spec,
    run_args,
    service_container,
    service_deployments,
    workloads,
)

KUBERNETES_VERSION = "1.33.0"
"""The Kubernetes release whose schemas the objects must satisfy (one kubernetes-validate ships)."""
IMAGE_TAG = "0.1.0"
IMAGES = ("coordinator", "worker", "bounds-cache", "invalidator", "api", "spark", "kafka", "redis")
"""The images deploy/docker builds, as cbt/<name>:<tag>."""
GRACE_MARGIN_S = 10
"""Beyond the worker's shutdown timeout and the slack before a service forces its own exit: time to exit."""
MODEL_FOLDERS = ("external", "transformations", "scripts")
ANY_HOST = ("0.0.0.0", "", "::", "[::]")


@dataclass(frozen=True)
class PodView:
    """What one service container reads at start: its config and models, or the problems that stop it."""

    config: Config | None
    models: ModelSet | None
    problems: list[str]


def pod_view(docs: list[Doc], deployment: Doc, root: Path, with_models: bool) -> PodView:
    """Load config.yaml and the models from the container's mounts, with its environment, as ``cbt validate`` in
    the pod would. ``with_models``: the render holds the models' ConfigMaps (an overlay, not the base). Pods that
    mount the same files with the same environment and options are loaded once."""
    container = service_container(deployment)
    problems = [p for p in materialize(docs, deployment, container, root)
                if with_models or "cbt-models-" not in p]
    key = (_tree(root), tuple(sorted(plain_env(container).items())), run_args(container), with_models)
    if key not in _LOADED:
        loaded = _load(container, root, with_models)  # problems name files as the pod sees them: /app/config.yaml
        _LOADED[key] = PodView(loaded.config, loaded.models, [p.replace(str(root), "") for p in loaded.problems])
    loaded = _LOADED[key]
    return PodView(loaded.config, loaded.models, problems + loaded.problems)


_LOADED: dict[tuple[object, ...], PodView] = {}


def _tree(root: Path) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((str(p.relative_to(root)), p.read_text() if p.is_file() else "/") for p in root.rglob("*")))


def _load(container: Doc, root: Path, with_models: bool) -> PodView:
    env = plain_env(container)
    path = run_args(container).config or env.get("CBT_CONFIG")
    if path is None:
        return PodView(None, None, ["no --config and no CBT_CONFIG: the service reads ./config.yaml"])
    try:
        config = load_config(root / path.lstrip("/"), env)
    except ConfigProblems as e:
        return PodView(None, None, [f"config: {e}"])
    if not with_models:
        return PodView(config, None, [])
    try:
        models = load_models(config)
    except ModelProblems as e:
        return PodView(config, None, [f"models: {e}"])
    return PodView(config, models, _missing_scripts(config, models))


def _missing_scripts(config: Config, models: ModelSet) -> list[str]:
    """Exec models run from config.yaml's folder: each relative file their command names must be mounted."""
    problems = []
    for model in models.models.values():
        command = getattr(model, "exec", None)
        for word in exec_argv(command)[1:] if command else []:
            if "/" in word and not word.startswith(("-", "/")) and not (config.base_dir / word).is_file():
                problems.append(f"{model.id}: exec needs {word}, not mounted beside config.yaml")
    return problems


def schema_problems(docs: list[Doc]) -> list[str]:
    """Every object except KEDA's against the Kubernetes schemas, unknown fields rejected."""
    problems = []
    for doc in docs:
        if doc["apiVersion"].startswith("keda.sh/"):
            continue
        where = f"{doc['kind']}/{doc['metadata'].get('name')}"
        try:
            kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as e:
            problems.append(f"{where}: {'.'.join(str(p) for p in e.path)}: {e.message}")
        except kubernetes_validate.SchemaNotFoundError as e:
            problems.append(f"{where}: {e.message}")
    return problems


def crd_schema(crd_path: Path, api_version: str) -> dict[str, Any]:
    """The CRD's openAPIV3Schema for ``api_version``, made strict: objects with listed properties take no others
    (the API server prunes unknown fields silently; a typo must not pass here)."""
    crd = yaml.safe_load(crd_path.read_text())
    version = api_version.rpartition("/")[2]
    served = next(v for v in crd["spec"]["versions"] if v["name"] == version and v["served"])
    schema = cast(dict[str, Any], served["schema"]["openAPIV3Schema"])
    _close_objects(schema)
    return schema


def _close_objects(schema: Any) -> None:
    if isinstance(schema, dict):
        if ("properties" in schema and "additionalProperties" not in schema
                and not schema.get("x-kubernetes-preserve-unknown-fields")):
            schema["additionalProperties"] = False
        for value in schema.values():
            _close_objects(value)
    elif isinstance(schema, list):
        for item in schema:
            _close_objects(item)


def keda_problems(docs: list[Doc], crd_path: Path) -> list[str]:
    scaled = find(docs, "ScaledObject")
    if not scaled:
        return []
    validator = jsonschema.Draft202012Validator(crd_schema(crd_path, scaled[0]["apiVersion"]))
    return [f"ScaledObject/{doc['metadata']['name']}: {'.'.join(str(p) for p in e.path)}: {e.message}"
            for doc in scaled for e in validator.iter_errors(doc)]


def worker_subscriptions(config: Config) -> set[tuple[str, str]]:
    """(consumer group, topic) of every subscription the worker makes with this config (its own ``subscribe``)."""
    broker = make_broker(config.kafka, "kubernetes-check")
    subscribers = [subscribe(broker, config, pool, cast(PipelinedConsumer, None)) for pool in consumed_pools(config)]
    return {(s.group_id, topic) for s in subscribers for topic in s.topics}


def keda_scaling_problems(docs: list[Doc], worker: Config) -> list[str]:
    """The ScaledObject scales the worker Deployment on exactly the groups and topics the workers consume, reads
    the brokers they use, and never asks for pods that would get no partition."""
    problems = []
    for scaled in find(docs, "ScaledObject"):
        spec = scaled["spec"]
        if spec["scaleTargetRef"].get("kind", "Deployment") != "Deployment" or spec["scaleTargetRef"]["name"] != \
                "cbt-worker":
            problems.append(f"scales {spec['scaleTargetRef']}, not the Deployment cbt-worker")
        kafka = [t["metadata"] for t in spec["triggers"] if t["type"] == "kafka"]
        read = {(t.get("consumerGroup"), t.get("topic")) for t in kafka}
        if read != worker_subscriptions(worker):
            problems.append(f"triggers read {sorted(read)}, the workers consume {sorted(worker_subscriptions(worker))}")
        problems += [f"trigger reads brokers {t.get('bootstrapServers')}, the workers "
                     f"{worker.kafka.bootstrap_servers}" for t in kafka
                     if t.get("bootstrapServers") != worker.kafka.bootstrap_servers]
        problems += [f"trigger {t.get('topic')}: offsetResetPolicy {t.get('offsetResetPolicy')}, the workers' "
                     "consumers start at earliest" for t in kafka if t.get("offsetResetPolicy") != "earliest"]
        problems += replica_cap_problems(spec.get("maxReplicaCount", 100), worker)
    return problems


def hpa_scaling_problems(docs: list[Doc], worker: Config) -> list[str]:
    """The HPA alternative: the lag metric of every pool the workers consume, and the same replica cap."""
    problems = []
    for hpa in find(docs, "HorizontalPodAutoscaler"):
        spec = hpa["spec"]
        if spec["scaleTargetRef"] != {"apiVersion": "apps/v1", "kind": "Deployment", "name": "cbt-worker"}:
            problems.append(f"scales {spec['scaleTargetRef']}, not the Deployment cbt-worker")
        external = [m["external"]["metric"] for m in spec.get("metrics", []) if m["type"] == "External"]
        pools = {m.get("selector", {}).get("matchLabels", {}).get("pool") for m in external
                 if m["name"] == "cbt_consumer_lag_messages"}
        if pools != set(consumed_pools(worker)):
            problems.append(f"lag metrics of pools {sorted(map(str, pools))}, the workers consume "
                            f"{sorted(consumed_pools(worker))}")
        problems += replica_cap_problems(spec["maxReplicas"], worker)
    return problems


def replica_cap_problems(max_replicas: int, worker: Config) -> list[str]:
    """Each worker pod runs worker.concurrency consumers per pool in the pool's group; a group's consumers beyond
    the task topic's partitions get none, and consumers are ordered by client id, i.e. by pod."""
    partitions, per_pod = worker.kafka.task_topic_partitions, worker.worker.concurrency
    if max_replicas > partitions:
        return [f"max replicas {max_replicas} > {partitions} task topic partitions"]
    if max_replicas * per_pod > partitions:
        return [f"max replicas {max_replicas} x worker.concurrency {per_pod} consumers > {partitions} task topic "
                "partitions: the last pods would get no partition"]
    return []


def port_problems(service: str, deployment: Doc, config: Config) -> list[str]:
    """The probes, the scrape annotations and the api's port name ports the service really listens on (config's
    addresses plus the service's offset, or its command-line options), on every interface."""
    container = service_container(deployment)
    args = run_args(container)
    ports = {p.get("name"): p["containerPort"] for p in container.get("ports", [])}
    offset = PORT_OFFSET.get(service)
    if offset is None:
        return [f"{service}: no port offset in cbt.cli.run_cmd.PORT_OFFSET"]
    health = args.health_addr or _offset_addr(config.health_addr, offset)
    metrics = args.metrics_addr or _offset_addr(config.metrics_addr, offset)
    problems = _reachable(service, "health", health) + _reachable(service, "metrics", metrics)
    for kind, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz"), ("startupProbe", "/healthz")):
        probe = container.get(kind)
        if probe is None:
            problems += [f"{service}: no {kind}"] if kind != "startupProbe" else []
            continue
        get = probe.get("httpGet", {})
        port = ports.get(get.get("port"), get.get("port"))
        if (get.get("path"), str(port)) != (path, health.rpartition(":")[2]):
            problems.append(f"{service}: {kind} GET {get.get('path')} on {port}, it serves {path} on {health}")
    annotations = deployment["spec"]["template"]["metadata"].get("annotations", {})
    scraped = annotations.get("prometheus.io/port")
    if (annotations.get("prometheus.io/scrape") != "true" or scraped != metrics.rpartition(":")[2]
            or str(ports.get("metrics")) != scraped):
        problems.append(f"{service}: scraped on {scraped} (port 'metrics' {ports.get('metrics')}), it serves "
                        f"/metrics on {metrics}")
    if service == "api":
        problems += _reachable(service, "api", config.api.addr)
        if str(ports.get("http")) != config.api.addr.rpartition(":")[2]:
            problems.append(f"api: port 'http' is {ports.get('http')}, the API listens on {config.api.addr}")
    return problems


def _reachable(service: str, what: str, addr: str) -> list[str]:
    if addr == "off":
        return [f"{service}: {what} address is off"]
    host = addr.rpartition(":")[0]
    return [] if host in ANY_HOST else [f"{service}: {what} binds {addr}: unreachable from outside the pod"]


def grace_problems(service: str, deployment: Doc, config: Config) -> list[str]:
    """Kubernetes must not kill a stopping service before it has ended its tasks or forced its own exit."""
    needed = config.worker.shutdown_timeout_s + SHUTDOWN_SLACK_S + GRACE_MARGIN_S
    grace = pod_spec(deployment).get("terminationGracePeriodSeconds", 30)
    return [] if grace >= needed else [f"{service}: terminationGracePeriodSeconds {grace} < {needed:.0f} "
                                       f"(worker.shutdown_timeout_s + {SHUTDOWN_SLACK_S:.0f} + {GRACE_MARGIN_S})"]


DIGEST = re.compile(r"@sha256:[0-9a-f]{64}")
IMAGE = re.compile(rf"(?:(?P<registry>[^/]+)/(?:[^@:]+/)?)?cbt/(?P<name>{'|'.join(map(re.escape, IMAGES))})"
                   rf"(?::(?P<tag>[\w.-]+))?(?P<digest>{DIGEST.pattern})?")
"""cbt/<name>:<tag> as deploy/docker builds it, or the same pushed to a registry
(``registry.example/team/cbt/<name>``)."""


def image_problems(docs: list[Doc]) -> list[str]:
    """Only the images deploy/docker builds, and each service Deployment runs its own: as built (cbt/<name>:<tag>,
    loaded onto the nodes), or from a registry pinned by digest (kustomize ``images: [{name: cbt/<name>, newName:
    registry.example/cbt/<name>, digest: sha256:…}]``), never by a tag alone that the registry can move."""
    problems = []
    for workload in workloads(docs):
        for container in containers(workload):
            image, where = container["image"], f"{workload['kind']}/{workload['metadata']['name']}"
            found = IMAGE.fullmatch(image)
            if found is None or (not found["registry"] and not found["digest"] and found["tag"] != IMAGE_TAG):
                problems.append(f"{where}: image {image} is not one of cbt/{{{','.join(IMAGES)}}}:{IMAGE_TAG}")
            elif found["registry"] and not found["digest"]:
                problems.append(f"{where}: image {image} names a registry but no digest: pin it by digest "
                                "(kustomize images: digest: sha256:…), a tag can be moved")
    for service, deployment in service_deployments(docs):
        image = service_container(deployment)["image"]
        found = IMAGE.fullmatch(image)
        if found is None or found["name"] != service:
            problems.append(f"cbt-{service} runs {image}")
    return problems


def security_problems(docs: list[Doc]) -> list[str]:
    """Non-root, no privilege escalation, no capabilities, read-only root file system, resource requests and a
    memory limit: in every container."""
    problems = []
    for workload in workloads(docs):
        name, pod = workload["metadata"]["name"], pod_spec(workload).get("securityContext", {})
        if pod.get("runAsNonRoot") is not True:
            problems.append(f"{name}: pod may run as root")
        for c in containers(workload):
            sc, resources = c.get("securityContext", {}), c.get("resources", {})
            if sc.get("allowPrivilegeEscalation") is not False or sc.get("capabilities", {}).get("drop") != ["ALL"]:
                problems.append(f"{name}/{c['name']}: privilege escalation or capabilities not dropped")
            if sc.get("readOnlyRootFilesystem") is not True:
                problems.append(f"{name}/{c['name']}: root file system is writable")
            if "cpu" not in resources.get("requests", {}) or "memory" not in resources.get("limits", {}):
                problems.append(f"{name}/{c['name']}: no cpu request or memory limit")
    return problems


def read_api_problems(docs: list[Doc], api: Config) -> list[str]:
    """The read API reads the exposed tables' Delta files where ``api.tables.warehouse`` says: a local folder must be
    mounted in the api pod, read-only, from the volume the Spark Connect server writes its warehouse to."""
    warehouse = api.api.tables.warehouse
    if warehouse is None or "://" in warehouse:
        return []
    api_pod = pod_spec(one(docs, "Deployment", "cbt-api"))
    mount = next((m for m in service_container(one(docs, "Deployment", "cbt-api")).get("volumeMounts", [])
                  if Path(warehouse).is_relative_to(m["mountPath"])), None)
    if mount is None:
        return [f"api: api.tables.warehouse {warehouse} is not mounted in the pod"]
    problems = [] if mount.get("readOnly") is True else [f"api: {mount['mountPath']} is mounted writable"]
    claim = _claim(api_pod, mount["name"])
    connect = pod_spec(one(docs, "Deployment", "cbt-spark-connect"))
    written = {_claim(connect, m["name"]) for c in connect["containers"] for m in c.get("volumeMounts", [])}
    if claim is None or claim not in written:
        problems.append(f"api: {mount['mountPath']} is volume {mount['name']} (claim {claim}), not the Spark "
                        f"Connect server's warehouse ({', '.join(sorted(c for c in written if c))})")
    return problems


def bookkeeping_problems(docs: list[Doc], service: str, config: Config) -> list[str]:
    """A service that keeps the admin record as files (``spark.warehouse`` a local folder) mounts that folder
    writable, from the volume the Spark Connect server writes its warehouse to."""
    warehouse = config.spark.warehouse
    if warehouse is None or "://" in warehouse or service == "api":
        return []
    deployment = one(docs, "Deployment", f"cbt-{service}")
    mount = next((m for m in service_container(deployment).get("volumeMounts", [])
                  if Path(warehouse).is_relative_to(m["mountPath"])), None)
    if mount is None:
        return [f"{service}: spark.warehouse {warehouse} is not mounted in the pod"]
    problems = [f"{service}: {mount['mountPath']} is mounted read-only"] if mount.get("readOnly") else []
    connect = pod_spec(one(docs, "Deployment", "cbt-spark-connect"))
    written = {_claim(connect, m["name"]) for c in connect["containers"] for m in c.get("volumeMounts", [])}
    if _claim(pod_spec(deployment), mount["name"]) not in written - {None}:
        problems.append(f"{service}: {mount['mountPath']} is not the Spark Connect server's warehouse")
    return problems


def _claim(pod: Doc, volume: str) -> str | None:
    found = next((v for v in pod.get("volumes", []) if v["name"] == volume), {})
    return found.get("persistentVolumeClaim", {}).get("claimName")


def disruption_problems(docs: list[Doc]) -> list[str]:
    """The worker and the api have a PodDisruptionBudget that selects their pods."""
    problems = []
    for name in ("cbt-worker", "cbt-api"):
        labels = one(docs, "Deployment", name)["spec"]["template"]["metadata"]["labels"]
        budgets = [b for b in find(docs, "PodDisruptionBudget") if _selects(b["spec"]["selector"], labels)]
        if not budgets:
            problems.append(f"no PodDisruptionBudget selects {name}'s pods")
    return problems


def _selects(selector: Doc, labels: dict[str, str]) -> bool:
    return bool(selector.get("matchLabels")) and all(labels.get(k) == v for k, v in selector["matchLabels"].items())


def endpoint_problems(docs: list[Doc], host_port: str) -> list[str]:
    """``host:port`` is a Service of the render, and that port leads to a container port of a pod it selects."""
    host, _, port = host_port.rpartition(":")
    services = find(docs, "Service", host)
    if not services:
        return [f"{host_port}: no Service {host}"]
    service = services[0]
    spec_port = next((p for p in service["spec"]["ports"] if str(p["port"]) == port), None)
    if spec_port is None:
        return [f"{host_port}: Service {host} has no port {port}"]
    target = spec_port.get("targetPort", spec_port["port"])
    for workload in workloads(docs):
        if _selects({"matchLabels": service["spec"]["selector"]}, workload["spec"]["template"]["metadata"]["labels"]):
            ports = [p for c in containers(workload) for p in c.get("ports", [])]
            if any(target in (p.get("name"), p["containerPort"]) for p in ports):
                return []
    return [f"{host_port}: Service {host} port {port} leads to no container port {target}"]


def ingress_problems(docs: list[Doc]) -> list[str]:
    """Each Ingress backend is a Service port of the render."""
    problems = []
    for ingress in find(docs, "Ingress"):
        for backend in _backends(ingress):
            service = find(docs, "Service", backend["name"])
            ports = {p.get("name") for p in service[0]["spec"]["ports"]} | {
                p["port"] for p in service[0]["spec"]["ports"]} if service else set()
            if backend["port"].get("name", backend["port"].get("number")) not in ports:
                problems.append(f"Ingress {ingress['metadata']['name']}: no Service port {backend}")
    return problems


def _backends(ingress: Doc) -> Iterator[Doc]:
    for rule in ingress["spec"].get("rules", []):
        for path in rule.get("http", {}).get("paths", []):
            yield path["backend"]["service"]


def models_configmap_problems(docs: list[Doc]) -> list[str]:
    """The models' ConfigMaps hold every file of the repository's models/ folders (deploy/kubernetes/components/example
    lists them by hand)."""
    problems = []
    for folder in MODEL_FOLDERS:
        cm = next((d for d in find(docs, "ConfigMap") if d["metadata"]["name"].startswith(f"cbt-models-{folder}-")),
                  None)
        keys = set(cm.get("data", {})) if cm else set()
        files = {p.name for p in (REPO / "models" / folder).iterdir() if p.is_file()}
        if keys != files:
            problems.append(f"ConfigMap cbt-models-{folder}: missing {sorted(files - keys)}, "
                            f"extra {sorted(keys - files)}")
    return problems


STORE_SECRETS = ("cbt-kafka", "cbt-redis")
"""The Secrets holding one password per service (key: the service's name) and the stores' own (key: password)."""


def secret_scope_problems(docs: list[Doc]) -> list[str]:
    """Each service receives only the secrets it uses: of the stores' Secrets its own key alone (never another
    service's, never the super user's ``password``), and the api token Secret only the api; the stores' own
    passwords go only to the stores' pods."""
    problems = []
    for workload in workloads(docs):
        name = workload["metadata"]["name"]
        service = name.removeprefix("cbt-")
        for container in containers(workload):
            for env in container.get("env", []):
                ref = env.get("valueFrom", {}).get("secretKeyRef")
                if ref is None:
                    continue
                secret, key = ref["name"], ref["key"]
                is_service = service in SERVICES
                if is_service and secret in STORE_SECRETS and key != service:
                    problems.append(f"{name}: receives {secret}/{key} ({env['name']}): not its own credentials")
                if secret == "cbt-api" and service != "api":
                    problems.append(f"{name}: receives {secret}/{key} ({env['name']}): only the api uses it")
                if not is_service and secret in STORE_SECRETS and key in SERVICES and \
                        secret.removeprefix("cbt-") != service:
                    problems.append(f"{name}: receives {secret}/{key} ({env['name']})")
    return problems
