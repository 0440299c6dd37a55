"""Each service's distribution installs alone into an empty virtualenv and runs there.

``uv pip install ./shared ./services/<name>`` (wheels, as outside this workspace) into a fresh environment,
constrained by the workspace lock: every module of the library and the service imports with only the declared
dependencies, no Spark jars come along (services reach Spark through Spark Connect with ``pyspark-client``), that
client talks to the test stack's Spark Connect server, and ``cbt-<name>`` starts the service on the real stack: it
answers ``/readyz`` and stops cleanly on SIGTERM.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from cbt.config.settings import load_config
from cbt.dev.demo_ops import Namespace, clear
from cbt.dev.pipeline import free_port
from tests.conftest import Endpoints
from tests.e2e.harness import CONFIG, overrides_for

ROOT = Path(__file__).resolve().parents[2]
UV = Path(sys.executable).parent / "uv"
SERVICES = {"coordinator": "coordinator", "worker": "worker", "bounds-cache": "bounds_cache",
            "invalidator": "invalidator", "api": "api"}
IMPORT_EVERY_MODULE = (
    "import importlib, pkgutil, cbt\n"
    "names = sorted(m.name for m in pkgutil.walk_packages(cbt.__path__, 'cbt.') if not m.name.endswith('__main__'))\n"
    "for name in names: importlib.import_module(name)\n"
    "print(' '.join(names))\n"
)

pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class LoneEnv:
    service: str
    path: Path

    def env(self, **extra: str) -> dict[str, str]:
        return {**{k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}, **extra}

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.path / "bin" / argv[0]), *argv[1:]], capture_output=True, text=True,
                              check=check, env=self.env(), cwd=self.path, timeout=300)

    def size_mb(self) -> int:
        return int(subprocess.run(["du", "-sm", str(self.path)], capture_output=True, text=True, check=True)
                   .stdout.split()[0])


@pytest.fixture(scope="session")
def lock_constraints(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("lone") / "constraints.txt"
    subprocess.run([str(UV), "export", "--frozen", "--all-packages", "--no-dev", "--no-hashes", "--no-emit-workspace",
                    "--no-header", "-o", str(out)], cwd=ROOT, check=True, capture_output=True)
    return out


@pytest.fixture(scope="module", params=sorted(SERVICES))
def lone_env(request: pytest.FixtureRequest, lock_constraints: Path, tmp_path_factory: pytest.TempPathFactory,
             ) -> Iterator[LoneEnv]:
    service: str = request.param
    path = tmp_path_factory.mktemp(f"lone-{service}") / "venv"
    subprocess.run([str(UV), "venv", "-q", "--python", sys.executable, str(path)], check=True)
    # As a user outside this workspace would: built wheels (not editable), no workspace settings or sources.
    subprocess.run([str(UV), "pip", "install", "-q", "--no-config", "--no-sources", "--python",
                    str(path / "bin" / "python"), "-c", str(lock_constraints),
                    str(ROOT / "shared"), str(ROOT / "services" / service)], check=True, cwd=path.parent)
    env = LoneEnv(service, path)
    _record_size(env)
    yield env


def _record_size(env: LoneEnv) -> None:
    """Sizes go to var/reports/lone-install-sizes.json (docs/benchmarks.md quotes them); nothing is asserted on them."""
    report = ROOT / "var" / "reports" / "lone-install-sizes.json"
    report.parent.mkdir(parents=True, exist_ok=True)
    sizes = json.loads(report.read_text()) if report.exists() else {}
    sizes[env.service] = env.size_mb()
    report.write_text(json.dumps(sizes, indent=2, sort_keys=True) + "\n")


def test_the_service_command_and_cbt_run_answer(lone_env: LoneEnv) -> None:
    own = lone_env.run(f"cbt-{lone_env.service}", "--help")
    assert f"usage: cbt-{lone_env.service}" in own.stdout
    assert "usage: cbt run" in lone_env.run("cbt", "run", lone_env.service, "--help").stdout


def test_every_module_imports_with_only_the_declared_dependencies(lone_env: LoneEnv) -> None:
    modules = lone_env.run("python", "-c", IMPORT_EVERY_MODULE).stdout.split()
    own = f"cbt.{SERVICES[lone_env.service]}"
    assert f"{own}.app" in modules and "cbt.models.loader" in modules and "cbt.adapters.spark" in modules
    foreign = {f"cbt.{name}" for name in SERVICES.values()} - {own} | {"cbt.dev"}
    assert [m for m in modules if ".".join(m.split(".")[:2]) in foreign] == []


def test_nothing_of_the_local_stack_comes_along(lone_env: LoneEnv) -> None:
    assert not list(lone_env.path.glob("lib/python*/site-packages/pyspark/jars")), "Spark jars in a service image"
    missing = lone_env.run("cbt", "dev", "up", check=False)
    assert missing.returncode != 0 and "invalid choice: 'dev'" in missing.stderr
    other = next(name for name in SERVICES if name != lone_env.service)
    refused = lone_env.run("cbt", "run", other, "--config", str(ROOT / "config.yaml"), check=False)
    assert refused.returncode == 1 and f"the {other} service is not installed" in refused.stderr


def test_the_spark_connect_client_reaches_the_server(lone_env: LoneEnv, endpoints: Endpoints) -> None:
    """Every service runs Spark statements: queries, scans, or the admin tables' reads and commits."""
    probe = ("from cbt.adapters.spark import connect\n"
             f"s = connect({endpoints.spark_remote!r})\n"
             "print(s.sql('SELECT 40 + 2 AS answer').collect()[0]['answer'])\n"
             "s.stop()\n")
    assert lone_env.run("python", "-c", probe).stdout.strip() == "42"


def test_the_service_runs_on_the_stack_and_stops_on_sigterm(lone_env: LoneEnv, endpoints: Endpoints,
                                                             spark: SparkSession) -> None:
    tag = f"tlone{uuid.uuid4().hex[:8]}"
    overrides = {**overrides_for(tag, endpoints.kafka_bootstrap, endpoints.redis_url, endpoints.spark_remote),
                 "CBT__API__ADDR": f"127.0.0.1:{free_port()}"}  # (the api's HTTP port; 8080 may be taken)
    port = free_port()
    log = lone_env.path / f"{lone_env.service}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([str(lone_env.path / "bin" / f"cbt-{lone_env.service}"), "--config", str(CONFIG),
                                 "--health-addr", f"127.0.0.1:{port}"], env=lone_env.env(**overrides),
                                stdout=out, stderr=subprocess.STDOUT, cwd=CONFIG.parent)
    try:
        ready = _wait_ready(f"http://127.0.0.1:{port}/readyz", proc, timeout_s=120)
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        config = load_config(CONFIG, environ={**os.environ, **overrides})
        clear(Namespace.from_config(config), spark, config)
    output = log.read_text(errors="replace")[-3000:]
    assert ready, output
    assert code == 0, output


def _wait_ready(url: str, proc: subprocess.Popen[bytes], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return True
        except OSError:
            pass
        time.sleep(0.5)
    return False
