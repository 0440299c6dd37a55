"""Who may connect to whom under a render's NetworkPolicies, evaluated offline as the Kubernetes network model defines
it for one namespace: a pod selected by no policy of a direction is open in that direction; selected by some, a
connection must match a rule of one of them, on both sides (the source's egress, the target's ingress). Peers are
matched by ``podSelector`` (in the namespace) or by ``namespaceSelector`` (with an optional ``podSelector``) for a
source in another namespace, an ``Outside`` (the Ingress controller, a stray pod elsewhere); ``None`` is a source
outside the cluster, matching only rules without ``from``."""

from __future__ import annotations

from dataclasses import dataclass

from tests.deploy.kube import Doc, containers, find, workloads

SERVICES = ("coordinator", "worker", "bounds-cache", "invalidator", "api")
SPARK = ("spark-master", "spark-worker", "spark-connect")
COMPONENT = "app.kubernetes.io/component"
Labels = dict[str, str]


@dataclass(frozen=True)
class Outside:
    """A pod of another namespace: that namespace's labels and its own."""

    namespace: tuple[tuple[str, str], ...]
    pod: tuple[tuple[str, str], ...]


INGRESS_CONTROLLER = Outside(
    (("kubernetes.io/metadata.name", "ingress-nginx"),),
    (("app.kubernetes.io/name", "ingress-nginx"), ("app.kubernetes.io/component", "controller")))
"""ingress-nginx as its own chart installs it: the controller the example's Ingress is written for."""
STRAY = Outside((("kubernetes.io/metadata.name", "default"),), (("app", "anything"),))
NEIGHBOUR = Outside(INGRESS_CONTROLLER.namespace, (("app", "anything"),))
"""Another pod in the Ingress controller's namespace."""
Source = Labels | Outside | None


def _matches(selector: Doc, labels: Labels) -> bool:
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for expression in selector.get("matchExpressions", []):
        key, operator, values = expression["key"], expression["operator"], expression.get("values", [])
        present = key in labels
        if (operator == "In" and labels.get(key) not in values) or (operator == "NotIn" and labels.get(key) in values) \
                or (operator == "Exists" and not present) or (operator == "DoesNotExist" and present):
            return False
    return True


def _peer_matches(peers: list[Doc] | None, labels: Source) -> bool:
    if peers is None:  # no from/to: every peer
        return True
    if isinstance(labels, Outside):
        return any("namespaceSelector" in p and _matches(p["namespaceSelector"], dict(labels.namespace))
                   and _matches(p.get("podSelector", {}), dict(labels.pod)) for p in peers)
    return labels is not None and any(
        "podSelector" in p and "namespaceSelector" not in p and _matches(p["podSelector"], labels) for p in peers)


def _port_matches(ports: list[Doc] | None, number: int, name: str | None) -> bool:
    if ports is None:
        return True
    for entry in ports:
        port = entry.get("port")
        if port is None or port == number or (name is not None and port == name):
            return True
        if isinstance(port, int) and port <= number <= entry.get("endPort", port):
            return True
    return False


def _allowed(docs: list[Doc], direction: str, selected: Labels, peer: Source, number: int,
             name: str | None) -> bool:
    key = "ingress" if direction == "Ingress" else "egress"
    side = "from" if direction == "Ingress" else "to"
    policies = [p for p in find(docs, "NetworkPolicy")
                if direction in p["spec"].get("policyTypes", ["Ingress"]) and _matches(p["spec"]["podSelector"],
                                                                                         selected)]
    if not policies:
        return True
    return any(_peer_matches(rule.get(side), peer) and _port_matches(rule.get("ports"), number, name)
               for policy in policies for rule in policy["spec"].get(key, []))


def may_connect(docs: list[Doc], source: Source, target: Labels, number: int, name: str | None = None) -> bool:
    """Whether a pod labelled ``source`` (``Outside``: of another namespace; ``None``: outside the cluster) may open
    ``number`` (the container port named ``name``) on a pod labelled ``target``."""
    egress = not isinstance(source, dict) or _allowed(docs, "Egress", source, target, number, name)
    return egress and _allowed(docs, "Ingress", target, source, number, name)


def pods(docs: list[Doc]) -> dict[str, tuple[Labels, dict[str, int]]]:
    """Component -> (pod labels, container port name -> number), for every workload of the render."""
    found = {}
    for workload in workloads(docs):
        labels = workload["spec"]["template"]["metadata"]["labels"]
        ports = {p["name"]: p["containerPort"] for c in containers(workload) for p in c.get("ports", []) if "name" in p}
        found[labels.get(COMPONENT, workload["metadata"]["name"])] = (labels, ports)
    return found


def network_problems(docs: list[Doc]) -> list[str]:
    """The trust model holds: everything is denied by default; Spark Connect, Kafka and Redis (when the render has
    them) take connections from the cbt services (and Spark from its own cluster) only; every service reaches each
    of them; the api's HTTP port and every service's health and metrics ports are open."""
    problems = []
    if not any(p["spec"]["podSelector"] == {} and set(p["spec"].get("policyTypes", [])) == {"Ingress", "Egress"}
               and not p["spec"].get("ingress") and not p["spec"].get("egress") for p in find(docs, "NetworkPolicy")):
        problems.append("no default-deny NetworkPolicy (podSelector {}, Ingress and Egress, no rules)")
    everyone = pods(docs)
    guarded = {"spark-connect": ("connect", SERVICES + SPARK), "kafka": ("kafka", SERVICES),
               "redis": ("redis", SERVICES)}
    for component, (port_name, trusted) in guarded.items():
        if component not in everyone:
            continue
        target, ports = everyone[component]
        if port_name not in ports:
            problems.append(f"{component}: no container port named {port_name}")
            continue
        number = ports[port_name]
        for source_name, (source, _) in [*everyone.items(), ("outside", ({}, {}))]:
            open_to = may_connect(docs, source if source_name != "outside" else None, target, number, port_name)
            if open_to and source_name not in trusted:
                problems.append(f"{source_name} may connect to {component}:{number}")
            if not open_to and source_name in SERVICES:
                problems.append(f"{source_name} may not connect to {component}:{number}")
    for service in SERVICES:
        if service not in everyone:
            continue
        labels, ports = everyone[service]
        for name in ("health", "metrics"):
            if name not in ports:
                problems.append(f"{service}: no container port named {name}")
            elif not may_connect(docs, None, labels, ports[name], name):
                problems.append(f"{service}: port {name} ({ports[name]}) is closed to probes and scrapes")
    if "api" in everyone:
        labels, ports = everyone["api"]
        if "http" not in ports:
            problems.append("api: no container port named http")
        else:
            if not may_connect(docs, INGRESS_CONTROLLER, labels, ports["http"], "http"):
                problems.append(f"api: port http ({ports['http']}) is closed to the Ingress controller")
            for source_name, source in (("a pod of another namespace", STRAY), ("outside the cluster", None),
                                        ("another pod of the controller's namespace", NEIGHBOUR),
                                        *((n, lab) for n, (lab, _) in everyone.items())):
                if may_connect(docs, source, labels, ports["http"], "http"):
                    problems.append(f"api: port http ({ports['http']}) is open to {source_name}, not only to the "
                                    "Ingress controller (a client past it gets a bucket of its own address)")
    return problems


def tls_problems(docs: list[Doc]) -> list[str]:
    """Every Ingress serves HTTPS only: a TLS certificate Secret whose hosts cover every rule's host, and a redirect
    of plain HTTP (bearer tokens travel in a header)."""
    problems = []
    for ingress in find(docs, "Ingress"):
        name, spec = ingress["metadata"]["name"], ingress["spec"]
        tls = spec.get("tls") or []
        if not tls or not all(entry.get("secretName") for entry in tls):
            problems.append(f"Ingress {name}: no TLS certificate (spec.tls with a secretName)")
            continue
        covered = {host for entry in tls for host in entry.get("hosts", [])}
        hosts = {rule["host"] for rule in spec.get("rules", []) if "host" in rule}
        if (hosts - covered and any(entry.get("hosts") for entry in tls)) or (hosts and not covered):
            problems.append(f"Ingress {name}: hosts {sorted(hosts - covered)} have no TLS certificate")
        annotations = ingress["metadata"].get("annotations", {})
        if annotations.get("nginx.ingress.kubernetes.io/force-ssl-redirect") != "true":
            problems.append(f"Ingress {name}: plain HTTP is not redirected to HTTPS")
    return problems
