"""deploy/kubernetes/, validated offline (there is no cluster here): kustomize renders the base and each overlay,
every object passes the Kubernetes schemas and KEDA's CRD schema, and the project checks hold: the autoscaler reads
the groups and topics the workers consume and never asks for pods without a partition, probes and scrapes hit the
ports the services listen on, the images are the ones deploy/docker builds, and every service pod would load its
config and models (`cbt validate` in the pod). Each check also runs on broken copies and must name the fault."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from cbt.scheduling.admission import cluster_of
from tests.deploy import kube_checks as checks
from tests.deploy.kube import TARGETS, Doc, find, one, pod_spec, render, service_container, service_deployments, tool
from tests.deploy.kube_kafka import kafka_problems
from tests.deploy.kube_network import network_problems, tls_problems
from tests.deploy.kube_spark import connect_token_problems, spark_auth_problems

pytestmark = pytest.mark.timeout(900)  # the first run on a machine builds kustomize (~1.5 min on 2 cores)
OVERLAYS = [t for t in TARGETS if t.startswith("overlays/")]
ENDPOINTS = {"base": ("spark",), "overlays/example": ("spark", "kafka", "redis"),
             "overlays/example-hpa": ("spark", "kafka", "redis")}
"""config.yaml's endpoints that must be Services of the render (the base expects Kafka and Redis outside)."""

Mutation = Callable[[list[Doc]], None]
Check = Callable[[str, list[Doc], Path, Path], list[str]]


@pytest.fixture(scope="module")
def keda_crd() -> Path:
    return tool("keda-crd")


def project_problems(target: str, docs: list[Doc], tmp: Path, _crd: Path | None = None) -> list[str]:
    """Every project check of one render: what the pods load, listen on and run, and what scales them."""
    with_models = target != "base"
    views = {s: checks.pod_view(docs, d, tmp / s, with_models) for s, d in service_deployments(docs)}
    problems = [f"{s}: {p}" for s, view in views.items() for p in view.problems]
    for service, deployment in service_deployments(docs):
        config = views[service].config
        if config is not None:
            problems += checks.port_problems(service, deployment, config)
            problems += checks.grace_problems(service, deployment, config)
            problems += connect_token_problems(service, config, docs)
            problems += checks.bookkeeping_problems(docs, service, config)
    problems += checks.image_problems(docs) + checks.security_problems(docs) + checks.disruption_problems(docs)
    problems += checks.ingress_problems(docs) + network_problems(docs) + tls_problems(docs) + spark_auth_problems(docs)
    problems += checks.secret_scope_problems(docs)
    problems += kafka_problems(docs, {s: view.config for s, view in views.items()})
    api = views["api"].config
    if api is not None:
        problems += checks.read_api_problems(docs, api)
    worker = views["worker"].config
    if worker is not None:
        problems += checks.keda_scaling_problems(docs, worker) + checks.hpa_scaling_problems(docs, worker)
        endpoints = {"spark": cluster_of(worker.spark.remote) if worker.spark.remote else "",
                     "kafka": worker.kafka.bootstrap_servers.split(",")[0],
                     "redis": urlsplit(worker.redis.url).netloc.rpartition("@")[2]}
        problems += [p for name in ENDPOINTS[target] for p in checks.endpoint_problems(docs, endpoints[name])]
    return problems + (checks.models_configmap_problems(docs) if with_models else [])


def schema_check(_target: str, docs: list[Doc], _tmp: Path, _crd: Path) -> list[str]:
    return checks.schema_problems([d for d in docs if d["kind"] in ("Deployment", "Service", "StatefulSet")])


def keda_check(_target: str, docs: list[Doc], _tmp: Path, crd: Path) -> list[str]:
    return checks.keda_problems(docs, crd)


@pytest.mark.parametrize("target", TARGETS)
def test_renders_every_service_spark_and_the_config(target: str) -> None:
    docs = render(target)
    names = {d["metadata"]["name"] for d in find(docs, "Deployment")}
    assert {f"cbt-{s}" for s in ("coordinator", "worker", "bounds-cache", "invalidator", "api")} <= names
    assert {"cbt-spark-master", "cbt-spark-worker", "cbt-spark-connect"} <= names
    assert [d for d in find(docs, "ConfigMap") if d["metadata"]["name"].startswith("cbt-config-")]


@pytest.mark.parametrize("target", TARGETS)
def test_every_object_passes_the_kubernetes_schemas(target: str) -> None:
    assert checks.schema_problems(render(target)) == []


@pytest.mark.parametrize("target", OVERLAYS)
def test_each_overlay_scales_the_workers_and_keda_accepts_its_scaled_object(target: str, keda_crd: Path) -> None:
    docs = render(target)
    scalers = find(docs, "ScaledObject") + find(docs, "HorizontalPodAutoscaler")
    assert len(scalers) == 1, "exactly one worker autoscaler"
    assert checks.keda_problems(docs, keda_crd) == []


@pytest.mark.parametrize("target", TARGETS)
def test_project_checks_hold(target: str, tmp_path: Path) -> None:
    docs = render(target)
    assert project_problems(target, docs, tmp_path) == []


@pytest.mark.parametrize("target", OVERLAYS)
def test_the_pods_load_the_example_pipeline_and_consume_two_pools(target: str, tmp_path: Path) -> None:
    """The positive case is not vacuous: the mounted models load, and there are two pools to scale on."""
    docs = render(target)
    view = checks.pod_view(docs, one(docs, "Deployment", "cbt-worker"), tmp_path, with_models=True)
    assert view.models is not None and len(view.models.models) >= 10, view.problems
    assert view.config is not None
    assert {g for g, _ in checks.worker_subscriptions(view.config)} == {"cbt.worker.default", "cbt.worker.python"}


@pytest.mark.parametrize("target", TARGETS)
def test_images_from_a_registry_pass_when_pinned_by_digest(target: str) -> None:
    """An overlay that pushes the images to a registry pins each by digest (kustomize images: newName, digest)."""
    docs = render(target)
    for workload in find(docs, "Deployment") + find(docs, "StatefulSet"):
        for c in pod_spec(workload)["containers"]:
            c["image"] = f"registry.example.com:5000/team/{c['image'].split(':')[0]}@sha256:{'0123456789abcdef' * 4}"
    assert checks.image_problems(docs) == []


# Broken copies: each mutation below must be reported by its check, with the words given.


def deployment(docs: list[Doc], name: str) -> Doc:
    return one(docs, "Deployment", name)


def container(docs: list[Doc], name: str) -> Doc:
    return service_container(deployment(docs, name))


def bookkeeping_mount(docs: list[Doc], name: str) -> Doc:
    return next(m for m in container(docs, name)["volumeMounts"] if m["mountPath"] == "/data/warehouse")


def warehouse_mount(docs: list[Doc]) -> Doc:
    return next(m for m in container(docs, "cbt-api")["volumeMounts"] if m["mountPath"] == "/data/warehouse")


def edit_config(change: Callable[[Doc], None]) -> Mutation:
    """Edit config.yaml in the cbt-config ConfigMap the pods mount."""

    def mutate(docs: list[Doc]) -> None:
        cm = next(d for d in find(docs, "ConfigMap") if d["metadata"]["name"].startswith("cbt-config-"))
        config = yaml.safe_load(cm["data"]["config.yaml"])
        change(config)
        cm["data"]["config.yaml"] = yaml.safe_dump(config)

    return mutate


def scaled(docs: list[Doc]) -> Doc:
    return one(docs, "ScaledObject", "cbt-worker")["spec"]


def trigger(docs: list[Doc], pool: str) -> Doc:
    meta: Doc = next(t["metadata"] for t in scaled(docs)["triggers"] if t["metadata"]["topic"].endswith(pool))
    return meta


def add_env(name: str, value: str, to: str = "cbt-worker") -> Mutation:
    return lambda docs: container(docs, to)["env"].append({"name": name, "value": value})


def probe_port(kind: str, port: int | str) -> Mutation:
    return lambda docs: container(docs, "cbt-worker")[kind]["httpGet"].update(port=port)


def drop_mount(name: str) -> Mutation:
    def mutate(docs: list[Doc]) -> None:
        mounts = container(docs, "cbt-worker")["volumeMounts"]
        mounts[:] = [m for m in mounts if m["name"] != name]

    return mutate


def kafka_env(name: str, value: str) -> Mutation:
    """Set (or replace) one variable of the example's Kafka broker to a literal value."""

    def mutate(docs: list[Doc]) -> None:
        env = pod_spec(one(docs, "StatefulSet", "cbt-kafka"))["containers"][0]["env"]
        env[:] = [e for e in env if e["name"] != name] + [{"name": name, "value": value}]

    return mutate


def models_cm(docs: list[Doc], folder: str) -> Doc:
    return next(d for d in find(docs, "ConfigMap") if d["metadata"]["name"].startswith(f"cbt-models-{folder}-"))


def remove(kind: str, name: str) -> Mutation:
    return lambda docs: docs.remove(one(docs, kind, name))


def spark_container(docs: list[Doc], name: str) -> Doc:
    spark: Doc = next(c for c in pod_spec(deployment(docs, name))["containers"] if c["name"] == "spark")
    return spark


def drop_spark_env(workload: str, name: str) -> Mutation:
    def mutate(docs: list[Doc]) -> None:
        env = spark_container(docs, workload)["env"]
        env[:] = [e for e in env if e["name"] != name]

    return mutate


def set_spark_env(workload: str, name: str, value: str) -> Mutation:
    def mutate(docs: list[Doc]) -> None:
        drop_spark_env(workload, name)(docs)
        spark_container(docs, workload)["env"].append({"name": name, "value": value})

    return mutate


def spark_conf_line(line: str) -> Mutation:
    """Append ``line`` to the Connect server's spark-defaults.conf (the ConfigMap cbt-spark-conf)."""
    def mutate(docs: list[Doc]) -> None:
        cm = next(d for d in find(docs, "ConfigMap") if d["metadata"]["name"].startswith("cbt-spark-conf-"))
        cm["data"]["spark-defaults.conf"] += f"{line}\n"

    return mutate


EX = "overlays/example"
BROKEN: list[tuple[str, Mutation, Check, str]] = [
    # Kubernetes schemas (strict: unknown fields are errors)
    (EX, lambda d: container(d, "cbt-worker")["livenessProbe"]["httpGet"].update(portt=8082), schema_check,
     "Additional properties are not allowed ('portt'"),
    (EX, lambda d: deployment(d, "cbt-api")["spec"].update(replicas="two"), schema_check, "is not of type 'integer'"),
    (EX, lambda d: one(d, "Service", "cbt-api")["spec"]["ports"][0].pop("port"), schema_check,
     "'port' is a required property"),
    # KEDA's CRD
    (EX, lambda d: scaled(d).update(maxReplicaCount="8"), keda_check, "'8' is not of type 'integer'"),
    (EX, lambda d: scaled(d).update(maxReplicas=8), keda_check, "Additional properties are not allowed ('maxReplicas'"),
    (EX, lambda d: trigger(d, "default").update(lagThreshold=8), keda_check, "8 is not of type 'string'"),
    (EX, lambda d: scaled(d)["triggers"][0].pop("type"), keda_check, "'type' is a required property"),
    # the autoscaler against what the workers consume
    (EX, lambda d: trigger(d, "default").update(consumerGroup="cbt.workers.default"), project_problems,
     "triggers read"),
    (EX, lambda d: scaled(d)["triggers"].pop(), project_problems, "the workers consume"),
    (EX, add_env("CBT__KAFKA__TOPIC_PREFIX", "prod."), project_problems, "triggers read"),
    (EX, lambda d: trigger(d, "python").update(bootstrapServers="kafka:9092"), project_problems,
     "trigger reads brokers kafka:9092"),
    (EX, lambda d: trigger(d, "python").update(offsetResetPolicy="latest"), project_problems, "offsetResetPolicy"),
    (EX, lambda d: scaled(d).update(maxReplicaCount=17), project_problems, "max replicas 17 > 16 task topic"),
    (EX, lambda d: scaled(d).update(maxReplicaCount=9), project_problems, "the last pods would get no partition"),
    (EX, edit_config(lambda c: c["kafka"].update(task_topic_partitions=8)), project_problems,
     "the last pods would get no partition"),
    ("overlays/example-hpa", lambda d: one(d, "HorizontalPodAutoscaler", "cbt-worker")["spec"]["metrics"].pop(),
     project_problems, "lag metrics of pools"),
    ("overlays/example-hpa", lambda d: one(d, "HorizontalPodAutoscaler", "cbt-worker")["spec"].update(maxReplicas=9),
     project_problems, "the last pods would get no partition"),
    # probes, scrapes and the api's port against what the services listen on
    (EX, probe_port("livenessProbe", 8081), project_problems, "worker: livenessProbe GET /healthz on 8081"),
    (EX, lambda d: container(d, "cbt-worker")["readinessProbe"]["httpGet"].update(path="/healthz"), project_problems,
     "readinessProbe GET /healthz"),
    (EX, lambda d: container(d, "cbt-worker")["command"].extend(["--health-addr", "0.0.0.0:9000"]), project_problems,
     "it serves /healthz on 0.0.0.0:9000"),
    (EX, edit_config(lambda c: c.update(health_addr="127.0.0.1:8081")), project_problems,
     "binds 127.0.0.1:8082: unreachable"),
    (EX, lambda d: deployment(d, "cbt-invalidator")["spec"]["template"]["metadata"]["annotations"].update(
        {"prometheus.io/port": "9464"}), project_problems, "invalidator: scraped on 9464"),
    (EX, lambda d: container(d, "cbt-api")["ports"][0].update(containerPort=8000), project_problems,
     "api: port 'http' is 8000"),
    # grace
    (EX, lambda d: pod_spec(deployment(d, "cbt-worker")).update(terminationGracePeriodSeconds=40), project_problems,
     "worker: terminationGracePeriodSeconds 40 < 44"),
    (EX, edit_config(lambda c: c["worker"].update(shutdown_timeout_s=300)), project_problems,
     "terminationGracePeriodSeconds 120 < 314"),
    # what the pods load
    (EX, drop_mount("models-scripts"), project_problems, "exec needs models/scripts/block_gas.py"),
    (EX, lambda d: models_cm(d, "transformations")["data"].update({"broken.sql": "---\ninterval: {max: x}\n---\n"}),
     project_problems, "models: /app/models/transformations/broken.sql:2: type: required field is missing"),
    (EX, edit_config(lambda c: c["worker"].update(concurency=2)), project_problems,
     "worker.concurency: unknown field (did you mean"),
    (EX, lambda d: container(d, "cbt-api")["env"].append({"name": "CBT__API__ADDR", "value": "0.0.0.0:8000"}),
     project_problems, "api: port 'http' is 8080, the API listens on 0.0.0.0:8000"),
    (EX, lambda d: models_cm(d, "external")["data"].pop("beacon_blocks.sql"), project_problems,
     "ConfigMap cbt-models-external: missing ['beacon_blocks.sql']"),
    # images, security, budgets, routes
    (EX, lambda d: container(d, "cbt-worker").update(image="cbt/worker:latest"), project_problems,
     "image cbt/worker:latest is not one of"),
    (EX, lambda d: container(d, "cbt-coordinator").update(image="cbt/worker:0.1.0"), project_problems,
     "cbt-coordinator runs cbt/worker:0.1.0"),
    (EX, lambda d: container(d, "cbt-worker").update(image="registry.example.com/cbt/worker:0.1.0"), project_problems,
     "image registry.example.com/cbt/worker:0.1.0 names a registry but no digest"),
    (EX, lambda d: container(d, "cbt-api").update(image=f"registry.example.com/cbt/worker@sha256:{'a' * 64}"),
     project_problems, "cbt-api runs registry.example.com/cbt/worker@sha256:"),
    (EX, lambda d: pod_spec(deployment(d, "cbt-spark-connect"))["containers"][0].update(image="apache/spark:4.0.1"),
     project_problems, "image apache/spark:4.0.1"),
    (EX, lambda d: container(d, "cbt-worker")["securityContext"].update(readOnlyRootFilesystem=False),
     project_problems, "cbt-worker/cbt: root file system is writable"),
    (EX, lambda d: pod_spec(one(d, "StatefulSet", "cbt-redis"))["securityContext"].pop("runAsNonRoot"),
     project_problems, "cbt-redis: pod may run as root"),
    (EX, lambda d: container(d, "cbt-api")["resources"].pop("limits"), project_problems, "no cpu request or memory"),
    (EX, remove("PodDisruptionBudget", "cbt-worker"), project_problems, "no PodDisruptionBudget selects cbt-worker"),
    (EX, lambda d: one(d, "Ingress", "cbt-api")["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"].update(
        port={"name": "web"}), project_problems, "Ingress cbt-api: no Service port"),
    (EX, lambda d: one(d, "Service", "cbt-spark-connect")["spec"]["ports"][0].update(port=15003), project_problems,
     "cbt-spark-connect:15002: Service cbt-spark-connect has no port 15002"),
    (EX, remove("Service", "cbt-kafka"), project_problems, "cbt-kafka:9092: no Service cbt-kafka"),
    (EX, lambda d: pod_spec(one(d, "StatefulSet", "cbt-redis"))["containers"][0]["ports"][0].update(name="db"),
     project_problems, "cbt-redis:6379: Service cbt-redis port 6379 leads to no container port redis"),
    # the trust model's network policies, credentials and TLS
    (EX, lambda d: one(d, "Ingress", "cbt-api")["spec"].pop("tls"), project_problems,
     "Ingress cbt-api: no TLS certificate"),
    (EX, lambda d: one(d, "Ingress", "cbt-api")["spec"]["tls"][0].update(hosts=["other.example.test"]),
     project_problems, "Ingress cbt-api: hosts ['cbt.example.test'] have no TLS certificate"),
    (EX, lambda d: one(d, "Ingress", "cbt-api")["metadata"]["annotations"].pop(
        "nginx.ingress.kubernetes.io/force-ssl-redirect"), project_problems, "plain HTTP is not redirected"),
    (EX, lambda d: container(d, "cbt-worker")["env"].remove(next(
        e for e in container(d, "cbt-worker")["env"] if e["name"] == "CBT_REDIS_PASSWORD")), project_problems,
     "worker: config: /app/config.yaml:21: redis.url: environment variable CBT_REDIS_PASSWORD is not set"),
    (EX, lambda d: next(e for e in container(d, "cbt-worker")["env"] if e["name"] == "CBT_REDIS_PASSWORD")[
        "valueFrom"]["secretKeyRef"].update(key="api"), project_problems,
     "cbt-worker: receives cbt-redis/api (CBT_REDIS_PASSWORD): not its own credentials"),
    (EX, lambda d: container(d, "cbt-api")["env"].append(
        {"name": "CBT_KAFKA_ADMIN", "valueFrom": {"secretKeyRef": {"name": "cbt-kafka", "key": "password"}}}),
     project_problems, "cbt-api: receives cbt-kafka/password (CBT_KAFKA_ADMIN): not its own credentials"),
    (EX, lambda d: container(d, "cbt-invalidator")["env"].append(
        {"name": "TOKENS", "valueFrom": {"secretKeyRef": {"name": "cbt-api", "key": "tokens"}}}),
     project_problems, "cbt-invalidator: receives cbt-api/tokens (TOKENS): only the api uses it"),
    (EX, remove("NetworkPolicy", "cbt-default-deny"), project_problems, "no default-deny NetworkPolicy"),
    (EX, lambda d: one(d, "NetworkPolicy", "cbt-spark-connect")["spec"]["ingress"][0].pop("from"), project_problems,
     "outside may connect to spark-connect:15002"),
    (EX, remove("NetworkPolicy", "cbt-spark-connect"), project_problems,
     "worker may not connect to spark-connect:15002"),
    (EX, remove("NetworkPolicy", "cbt-redis"), project_problems, "api may not connect to redis:6379"),
    (EX, lambda d: one(d, "NetworkPolicy", "cbt-kafka")["spec"]["ingress"][0]["from"][0]["podSelector"][
        "matchExpressions"][0].update(operator="NotIn"), project_problems, "api may not connect to kafka:9092"),
    (EX, lambda d: one(d, "NetworkPolicy", "cbt-services")["spec"]["egress"].pop(), project_problems,
     "coordinator may not connect to kafka:9092"),
    (EX, lambda d: one(d, "NetworkPolicy", "cbt-api-http")["spec"]["ingress"][0].update(
        **{"from": [{"podSelector": {}}]}), project_problems, "api: port http (8080) is closed"),
    (EX, lambda d: one(d, "NetworkPolicy", "cbt-api-http")["spec"]["ingress"][0].pop("from"), project_problems,
     "api: port http (8080) is open to a pod of another namespace, not only to the Ingress controller"),
    (EX, lambda d: one(d, "NetworkPolicy", "cbt-api-http")["spec"]["ingress"][0]["from"][0].pop("podSelector"),
     project_problems, "api: port http (8080) is open to"),
    # Kafka: every listener authenticated, credentials only from Secrets, the services and KEDA logging in
    (EX, kafka_env("KAFKA_CFG_LISTENER_SECURITY_PROTOCOL_MAP", "CONTROLLER:PLAINTEXT,CLIENT:PLAINTEXT"),
     project_problems, "cbt-kafka: listener CLIENT (0.0.0.0:9092) is PLAINTEXT: clients need no credentials"),
    (EX, kafka_env("KAFKA_CFG_LISTENERS", "CLIENT://0.0.0.0:9092,CONTROLLER://0.0.0.0:9093"), project_problems,
     "cbt-kafka: listener CONTROLLER (0.0.0.0:9093) is PLAINTEXT"),
    (EX, kafka_env("KAFKA_ALLOW_UNAUTHENTICATED", "yes"), project_problems, "KAFKA_ALLOW_UNAUTHENTICATED=yes"),
    (EX, kafka_env("KAFKA_PASSWORD", "hunter2-hunter2"), project_problems,
     "cbt-kafka/kafka: KAFKA_PASSWORD is written in the manifest"),
    (EX, kafka_env("KAFKA_TLS_DIR", "/tmp"), project_problems, "listener CLIENT is SASL_SSL without a certificate"),
    (EX, edit_config(lambda c: c["kafka"]["client"].update({"sasl.password": "hunter2-hunter2"})), project_problems,
     "worker: kafka.client sasl.password is not from a Secret"),
    (EX, lambda d: container(d, "cbt-api")["env"].append({"name": "CBT_KAFKA_PASSWORD", "value": "hunter2"}),
     project_problems, "cbt-api/cbt: CBT_KAFKA_PASSWORD is written in the manifest"),
    (EX, lambda d: container(d, "cbt-worker")["env"].remove(next(
        e for e in container(d, "cbt-worker")["env"] if e["name"] == "CBT_KAFKA_PASSWORD")), project_problems,
     "kafka.client.sasl.password: environment variable CBT_KAFKA_PASSWORD is not set"),
    (EX, edit_config(lambda c: c["kafka"]["client"].update({"security.protocol": "SASL_PLAINTEXT"})),
     project_problems, "kafka.client security.protocol SASL_PLAINTEXT, the broker's listener CLIENT is SASL_SSL"),
    (EX, drop_mount("kafka-ca"), project_problems,
     "worker: kafka.client ssl.ca.location /etc/cbt/kafka-ca/ca.crt is not mounted from a Secret"),
    (EX, lambda d: scaled(d)["triggers"][1].pop("authenticationRef"), project_problems,
     "trigger cbt.task-requested.python: no TriggerAuthentication"),
    (EX, lambda d: trigger(d, "default").pop("tls"), project_problems,
     "trigger cbt.task-requested.default: tls None, the workers use SASL_SSL"),
    (EX, lambda d: one(d, "TriggerAuthentication", "cbt-kafka")["spec"]["secretTargetRef"].pop(), project_problems,
     "TriggerAuthentication cbt-kafka takes no ['ca'] from a Secret"),
    # Spark's own authentication: the cluster's secret and Connect's token, from Secrets only
    (EX, drop_spark_env("cbt-spark-worker", "SPARK_AUTH_SECRET"), project_problems,
     "cbt-spark-worker/spark: no SPARK_AUTH_SECRET from a Secret: spark.authenticate is off"),
    (EX, drop_spark_env("cbt-spark-connect", "SPARK_CONNECT_AUTHENTICATE_TOKEN"), project_problems,
     "cbt-spark-connect/spark: no SPARK_CONNECT_AUTHENTICATE_TOKEN from a Secret"),
    (EX, set_spark_env("cbt-spark-master", "SPARK_AUTH_SECRET", "0123456789abcdef0123456789abcdef"), project_problems,
     "cbt-spark-master/spark: env SPARK_AUTH_SECRET: a Spark secret inline"),
    (EX, spark_conf_line("spark.authenticate.secret 0123456789abcdef0123456789abcdef"), project_problems,
     "cbt-spark-connect/spark: ConfigMap cbt-spark-conf"),
    (EX, spark_conf_line("spark.authenticate false"), project_problems, "turns spark.authenticate off"),
    (EX, set_spark_env("cbt-spark-worker", "SPARK_WORKER_OPTS", "-Dspark.authenticate=false"), project_problems,
     "cbt-spark-worker/spark: env SPARK_WORKER_OPTS: turns spark.authenticate off"),
    (EX, lambda d: spark_container(d, "cbt-spark-master")["env"][0]["valueFrom"]["secretKeyRef"].update(key="other"),
     project_problems, "the Spark pods do not share one secret"),
    (EX, edit_config(lambda c: c["spark"].update(remote="sc://cbt-spark-connect:15002")), project_problems,
     "worker: spark.remote presents no token"),
    (EX, edit_config(lambda c: c["spark"].update(remote="sc://cbt-spark-connect:15002/;authorization=Bearer%20abc")),
     project_problems, "api: spark.remote's token is not the Connect server's"),
    # the read API reads the Spark warehouse's Delta files
    (EX, lambda d: container(d, "cbt-api")["volumeMounts"].remove(warehouse_mount(d)), project_problems,
     "api: api.tables.warehouse /data/warehouse is not mounted in the pod"),
    (EX, lambda d: warehouse_mount(d).pop("readOnly"), project_problems, "api: /data/warehouse is mounted writable"),
    (EX, lambda d: next(v for v in pod_spec(deployment(d, "cbt-api"))["volumes"] if v["name"] == "warehouse")[
        "persistentVolumeClaim"].update(claimName="other"), project_problems,
     "claim other), not the Spark Connect server's warehouse"),
    # the services that keep the admin record write the warehouse's Delta files
    (EX, lambda d: container(d, "cbt-worker")["volumeMounts"].remove(bookkeeping_mount(d, "cbt-worker")),
     project_problems, "worker: spark.warehouse /data/warehouse is not mounted in the pod"),
    (EX, lambda d: bookkeeping_mount(d, "cbt-coordinator").update(readOnly=True), project_problems,
     "coordinator: /data/warehouse is mounted read-only"),
    (EX, lambda d: next(v for v in pod_spec(deployment(d, "cbt-invalidator"))["volumes"] if v["name"] == "warehouse")[
        "persistentVolumeClaim"].update(claimName="other"), project_problems,
     "invalidator: /data/warehouse is not the Spark Connect server's warehouse"),
]


@pytest.mark.parametrize(("target", "mutation", "check", "expected"),
                         [pytest.param(*case, id=f"{i:02d}-{case[3][:40]}") for i, case in enumerate(BROKEN)])
def test_each_check_catches_its_fault(target: str, mutation: Mutation, check: Check, expected: str, tmp_path: Path,
                                      keda_crd: Path) -> None:
    docs = render(target)  # intact, it passes every check (the tests above)
    mutation(docs)
    problems = check(target, docs, tmp_path, keda_crd)
    assert any(expected in p for p in problems), problems
