"""CBT's ``config.yaml`` as ours (docs/coming-from-cbt.md#configuration): each key that has a counterpart is
carried over, each that has none is a note saying so and what to do."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from cbt.base.yamldoc import Loc, SourceMap
from cbt.config.interval_types import Transformation
from cbt.import_cbt.report import Note

_NO_EFFECT = "no effect here: left out"
_CLICKHOUSE_ONLY = {
    "insertTimeout": "one timeout covers every statement here (spark.query_timeout_s): left out",
    "debug": "Spark's own logging shows statements: left out",
    "keepAlive": _NO_EFFECT,
    "maxOpenConns": _NO_EFFECT,
    "maxIdleConns": _NO_EFFECT,
    "connMaxLifetime": _NO_EFFECT,
    "insecureSkipVerify": "TLS to Spark Connect is set in spark.remote's URL: left out",
}
_OVERRIDE_FIELDS = ("interval", "schedules", "limits", "schedule", "tags", "lag", "cache")


@dataclass
class ConvertedConfig:
    config: dict[str, Any]
    external_paths: list[str]
    transformation_paths: list[str]
    placeholders: dict[str, str]
    """``{{external}}`` / ``{{transformation}}`` → the default databases (when set)."""
    env_names: frozenset[str]
    notes: list[Note] = field(default_factory=list)


class _Mapper:
    def __init__(self, data: dict[str, Any], smap: SourceMap, path: str) -> None:
        self.data, self.smap, self.path = data, smap, path
        self.out: dict[str, Any] = {}
        self.notes: list[Note] = []

    def note(self, loc: Loc, what: str, todo: str) -> None:
        self.notes.append(Note(self.path, self.smap.locate(loc).line, what, todo))

    def put(self, keys: tuple[str, ...], value: Any) -> None:
        node = self.out
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node[keys[-1]] = value

    def section(self, name: str) -> dict[str, Any]:
        value = self.data.get(name)
        return value if isinstance(value, dict) else {}


def convert_config(data: dict[str, Any], smap: SourceMap, path: str) -> ConvertedConfig:
    """``data``: CBT's parsed config; ``smap``: where its keys are (for notes)."""
    m = _Mapper(data, smap, path)
    handlers = {
        "logging": _logging,
        "metricsAddr": _address,
        "healthCheckAddr": _address,
        "pprofAddr": _pprof,
        "clickhouse": _clickhouse,
        "redis": _redis,
        "scheduler": _scheduler,
        "worker": _worker,
        "models": _models,
        "frontend": _frontend,
        "api": _frontend,
        "management": _management,
        "interval_types": _interval_types,
    }
    for key in data:
        handler = handlers.get(key)
        if handler is None:
            m.note((key,), f"unknown key {key}", "not a CBT setting known to the importer: left out")
        else:
            handler(m, key)
    models = m.section("models")
    placeholders = {}
    for kind, placeholder in (("external", "{{external}}"), ("transformations", "{{transformation}}")):
        database = (models.get(kind) or {}).get("defaultDatabase") if isinstance(models.get(kind), dict) else None
        if database:
            placeholders[placeholder] = str(database)
    env = models.get("env")
    env_names = frozenset(str(name) for name in env) if isinstance(env, dict) else frozenset()
    return ConvertedConfig(
        m.out, _paths(models, "external"), _paths(models, "transformations"), placeholders, env_names, m.notes
    )


def _paths(models: dict[str, Any], kind: str) -> list[str]:
    section = models.get(kind) if isinstance(models.get(kind), dict) else {}
    paths = section.get("paths") if isinstance(section, dict) else None
    return [str(p) for p in paths] if isinstance(paths, list) and paths else [f"models/{kind}"]


def _logging(m: _Mapper, key: str) -> None:
    m.put(
        ("logging", "level"),
        {"warn": "warning", "trace": "debug", "fatal": "critical", "panic": "critical"}.get(
            str(m.data[key]), str(m.data[key])
        ),
    )


def _address(m: _Mapper, key: str) -> None:
    ours = {"metricsAddr": "metrics_addr", "healthCheckAddr": "health_addr"}[key]
    m.put((ours,), str(m.data[key]))
    m.note(
        (key,),
        key,
        f"every service here serves its own {ours} at the port plus its offset (coordinator +0, "
        "worker +1, bounds-cache +2, invalidator +3, api +4): open those ports",
    )


def _pprof(m: _Mapper, key: str) -> None:
    if m.data[key]:
        m.note((key,), key, "no profiling endpoint here (py-spy attaches to a running service): left out")


def _clickhouse(m: _Mapper, key: str) -> None:
    section = m.section(key)
    for name, value in section.items():
        loc = (key, name)
        if name == "url":
            m.put(("spark", "remote"), "sc://127.0.0.1:15002")
            m.note(
                loc,
                "clickhouse.url",
                "the models run on Spark: set spark.remote to your Spark Connect server "
                "(written as sc://127.0.0.1:15002)",
            )
        elif name in ("cluster", "localSuffix"):
            if value:
                m.note(loc, f"clickhouse.{name}", "Delta has no clusters or local tables: left out")
        elif name == "queryTimeout":
            m.put(("spark", "query_timeout_s"), value)
        elif name == "admin" and isinstance(value, dict):
            for table in ("incremental", "scheduled"):
                if isinstance(value.get(table), dict):
                    m.put(("admin", table), dict(value[table]))
        elif name in _CLICKHOUSE_ONLY:
            m.note(loc, f"clickhouse.{name}", _CLICKHOUSE_ONLY[name])
        else:
            m.note(loc, f"unknown key clickhouse.{name}", "not a CBT setting known to the importer: left out")


def _redis(m: _Mapper, key: str) -> None:
    for name, value in m.section(key).items():
        if name == "url":
            m.put(("redis", "url"), value)
        else:
            m.note((key, name), f"unknown key redis.{name}", "not a CBT setting known to the importer: left out")


def _scheduler(m: _Mapper, key: str) -> None:
    for name, value in m.section(key).items():
        loc = (key, name)
        if name == "consolidation":
            m.put(("scheduler", "consolidation"), value)
        elif name == "concurrency":
            m.note(
                loc,
                "scheduler.concurrency",
                "the coordinator plans on events, not in a pool of scheduling "
                "tasks: left out (worker.concurrency bounds the work)",
            )
        elif name == "shutdownTimeout":
            m.note(loc, "scheduler.shutdownTimeout", "the coordinator stops at once (its state is durable): left out")
        else:
            m.note(loc, f"unknown key scheduler.{name}", "not a CBT setting known to the importer: left out")


def _worker(m: _Mapper, key: str) -> None:
    for name, value in m.section(key).items():
        loc = (key, name)
        if name == "concurrency":
            m.put(("worker", "concurrency"), value)
        elif name == "shutdownTimeout":
            m.put(("worker", "shutdown_timeout_s"), value)
        elif name == "tags" and isinstance(value, list) and value:
            m.put(("worker", "pools"), {"tagged": {"tags": [str(t) for t in value], "match": "any"}})
            m.put(("worker", "consume"), ["tagged"])
            m.note(
                loc,
                "worker.tags",
                "became pool 'tagged' (models with any of the tags) consumed by this worker; "
                "run other workers with worker.consume: [default] for the other models",
            )
        elif name != "tags":
            m.note(loc, f"unknown key worker.{name}", "not a CBT setting known to the importer: left out")


def _models(m: _Mapper, key: str) -> None:
    section = m.section(key)
    for kind in ("external", "transformations"):
        value = section.get(kind)
        if not isinstance(value, dict):
            continue
        m.put(("models", kind, "paths"), [f"models/{kind}"])
        for name, item in value.items():
            if name == "defaultDatabase":
                m.put(("models", kind, "default_database"), item)
            elif name == "defaultCluster":
                if item:
                    m.note((key, kind, name), f"models.{kind}.defaultCluster", "Delta has no clusters: left out")
            elif name != "paths":
                m.note((key, kind, name), f"unknown key models.{kind}.{name}", "left out")
    if isinstance(section.get("env"), dict):
        m.put(("models", "env"), {str(k): str(v) for k, v in section["env"].items()})
    if isinstance(section.get("overrides"), dict):
        m.put(("models", "overrides"), _overrides(m, section["overrides"]))
    for name in section:
        if name not in ("external", "transformations", "env", "overrides"):
            m.note((key, name), f"unknown key models.{name}", "not a CBT setting known to the importer: left out")


def _overrides(m: _Mapper, overrides: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for model, override in overrides.items():
        if not isinstance(override, dict):
            m.note(("models", "overrides", model), f"models.overrides.{model}", "not a mapping: left out")
            continue
        ours: dict[str, Any] = {}
        if "enabled" in override:
            ours["enabled"] = override["enabled"]
        config = override.get("config")
        if isinstance(config, dict):
            for name, value in config.items():
                if name in _OVERRIDE_FIELDS:
                    ours.setdefault("config", {})[name] = value
                else:
                    m.note(
                        ("models", "overrides", model, "config", name),
                        f"models.overrides.{model}.config.{name}",
                        "an override here changes interval, schedules, limits, schedule, tags, lag or cache: left out",
                    )
        out[str(model)] = ours
    return out


def _frontend(m: _Mapper, key: str) -> None:
    section = m.section(key)
    if "addr" in section:
        m.put(("api", "addr"), section["addr"])
    if section.get("enabled") is False:
        m.note(
            (key, "enabled"),
            f"{key}.enabled: false",
            "the api service serves the API and the web UI: do not run it where CBT ran without them",
        )


def _management(m: _Mapper, key: str) -> None:
    m.note(
        (key,),
        "management",
        "no management UI or GitHub login here: mutating API calls need a bearer token from api.auth.tokens; left out",
    )


def _interval_types(m: _Mapper, key: str) -> None:
    """Carried over as they are (our config reads CBT's form); a transformation our expression language does not
    accept (CEL beyond arithmetic) is reported and left out."""
    kept: dict[str, list[Any]] = {}
    for kind, steps in m.section(key).items():
        for i, step in enumerate(steps if isinstance(steps, list) else []):
            try:
                Transformation.model_validate(step)
            except ValidationError as e:
                problem = "; ".join(str(err["msg"]).removeprefix("Value error, ") for err in e.errors())
                m.note(
                    (key, kind, i),
                    f"{key}.{kind}[{i}]",
                    f"not converted ({problem}): rewrite it in our expression language (docs/web-ui.md); left out",
                )
                continue
            kept.setdefault(str(kind), []).append(step)
    if kept:
        m.put(("interval_types",), kept)
