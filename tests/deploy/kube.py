"""Rendering the Kubernetes manifests (deploy/kubernetes/) and reading them as a pod would see them.

Offline: kustomize renders, and a pod's ConfigMap volumes are written into a folder so the project's own config
loader and model loader read exactly what the container would read. The pinned tools come from
deploy/kubernetes/tools.sh (the Go module proxy, once per machine)."""

from __future__ import annotations

import argparse
import functools
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from cbt.cli.run_cmd import add_run_options

REPO = Path(__file__).resolve().parents[2]
KUBE = REPO / "deploy" / "kubernetes"
TOOLS = KUBE / "tools.sh"
TARGETS = ("base", "overlays/example", "overlays/example-hpa")
"""Every kustomization a user applies (the base alone is rendered and validated too)."""
SERVICES = ("coordinator", "worker", "bounds-cache", "invalidator", "api")

Doc = dict[str, Any]


def tool(name: str) -> Path:
    """The pinned tool's path (``kustomize`` or ``keda-crd``), installed by tools.sh when missing."""
    done = subprocess.run(["bash", str(TOOLS), name], capture_output=True, text=True, timeout=900, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"deploy/kubernetes/tools.sh {name} failed:\n{done.stderr}")
    return Path(done.stdout.strip().splitlines()[-1])


@functools.cache
def _rendered_text(target: str) -> str:
    done = subprocess.run([str(tool("kustomize")), "build", "--load-restrictor", "LoadRestrictionsNone",
                           str(KUBE / target)], capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"kustomize build {target} failed:\n{done.stderr}")
    return done.stdout


def render(target: str) -> list[Doc]:
    """The objects ``kubectl kustomize --load-restrictor LoadRestrictionsNone deploy/kubernetes/<target>`` prints
    (a fresh copy each call: the example component reads the models from the repository's models/)."""
    return [doc for doc in yaml.safe_load_all(_rendered_text(target)) if doc]


def find(docs: list[Doc], kind: str, name: str | None = None) -> list[Doc]:
    return [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]


def one(docs: list[Doc], kind: str, name: str) -> Doc:
    found = find(docs, kind, name)
    assert len(found) == 1, f"expected one {kind} {name}, found {len(found)}"
    return found[0]


def configmap(docs: list[Doc], name: str) -> Doc | None:
    """The ConfigMap a pod refers to by ``name`` (kustomize rewrote both to the hashed name)."""
    return next((d for d in find(docs, "ConfigMap") if d["metadata"]["name"] == name), None)


def pod_spec(workload: Doc) -> Doc:
    spec: Doc = workload["spec"]["template"]["spec"]
    return spec


def containers(workload: Doc) -> list[Doc]:
    spec = pod_spec(workload)
    return [*spec.get("initContainers", []), *spec["containers"]]


def workloads(docs: list[Doc]) -> Iterator[Doc]:
    yield from (d for d in docs if d["kind"] in ("Deployment", "StatefulSet", "DaemonSet", "Job"))


def service_deployments(docs: list[Doc]) -> Iterator[tuple[str, Doc]]:
    """(service, Deployment) for each cbt service Deployment in the render."""
    for service in SERVICES:
        for deployment in find(docs, "Deployment", f"cbt-{service}"):
            yield service, deployment


def service_container(deployment: Doc) -> Doc:
    cbt: Doc = next(c for c in pod_spec(deployment)["containers"] if c["name"] == "cbt")
    return cbt


def plain_env(container: Doc) -> dict[str, str]:
    """The container's environment as the pod would see it: literal values, and a stand-in for each value from a
    Secret (``secret-<name>-<key>``; other ``valueFrom`` sources, the downward API, are left out)."""
    env = {}
    for entry in container.get("env", []):
        secret = entry.get("valueFrom", {}).get("secretKeyRef")
        if "value" in entry:
            env[entry["name"]] = str(entry["value"])
        elif secret is not None and not secret.get("optional"):
            env[entry["name"]] = f"secret-{secret['name']}-{secret['key']}"
    return env


@dataclass(frozen=True)
class RunArgs:
    config: str | None
    health_addr: str | None
    metrics_addr: str | None


def run_args(container: Doc) -> RunArgs:
    """The service command's options as ``cbt-<service>`` parses them (``cbt.cli.run_cmd.add_run_options``)."""
    argv = [*container.get("command", []), *container.get("args", [])]
    parser = argparse.ArgumentParser(exit_on_error=False, add_help=False)
    add_run_options(parser)
    options = parser.parse_args(argv[1:])
    return RunArgs(options.config, options.health_addr, options.metrics_addr)


def materialize(docs: list[Doc], workload: Doc, container: Doc, root: Path) -> list[str]:
    """Write the container's ConfigMap mounts under ``root`` (``/app/x`` -> ``root/app/x``), as the kubelet would;
    returns the problems met (a mount with no volume, a volume's ConfigMap or key missing from the render)."""
    volumes = {v["name"]: v for v in pod_spec(workload).get("volumes", [])}
    problems = []
    for mount in container.get("volumeMounts", []):
        volume = volumes.get(mount["name"])
        if volume is None:
            problems.append(f"{container['name']}: mount {mount['name']} has no volume")
            continue
        target = root / mount["mountPath"].lstrip("/")
        if "configMap" not in volume:
            target.mkdir(parents=True, exist_ok=True)
            continue
        files, missing = _configmap_files(docs, volume["configMap"])
        problems += missing
        if "subPath" in mount:
            if mount["subPath"] not in files:
                problems.append(f"{container['name']}: subPath {mount['subPath']} is not in its ConfigMap")
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(files[mount["subPath"]])
            continue
        for path, text in files.items():
            (target / path).parent.mkdir(parents=True, exist_ok=True)
            (target / path).write_text(text)
    return problems


def _configmap_files(docs: list[Doc], source: Doc) -> tuple[dict[str, str], list[str]]:
    cm = configmap(docs, source["name"])
    if cm is None:
        return {}, [f"ConfigMap {source['name']} is not in the render"]
    data: dict[str, str] = cm.get("data", {})
    if "items" not in source:
        return dict(data), []
    missing = [f"ConfigMap {source['name']} has no key {i['key']}" for i in source["items"] if i["key"] not in data]
    return {i["path"]: data[i["key"]] for i in source["items"] if i["key"] in data}, missing
