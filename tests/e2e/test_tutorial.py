"""docs/tutorial.md, run as a reader would on the real local stack: every command block in the page executed in
order, its output compared with what the page shows (tests/e2e/doc_steps.py says how), so the page cannot rot.

The project is the page's ``shop`` under a name of its own (its databases, topics and keys carry it) and the api on
a free port; both are swapped into the commands and into the output the page shows before they are compared.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from redis import Redis

from cbt.adapters.kafka_admin import delete_topics
from cbt.adapters.spark import SessionPool
from cbt.contract.topics import Topics
from cbt.dev.pipeline import free_port
from tests.conftest import Endpoints
from tests.e2e.doc_steps import Command, File, matches, steps
from tests.e2e.harness import PROJECT

pytestmark = pytest.mark.e2e

PAGE = PROJECT / "docs" / "tutorial.md"
PAGE_NAME = "shop"
PAGE_API = "127.0.0.1:8080"
UNTIL_MATCH_S = 240.0
RUN_S = 180.0


@dataclass
class Reader:
    """A reader's shell: a current folder, the environment, the services left running in the background."""

    home: Path
    env: dict[str, str]
    swaps: list[tuple[re.Pattern[str], str]]
    background: subprocess.Popen[str] | None = None
    logs: list[Path] = field(default_factory=list)
    cwd: Path = field(init=False)

    def __post_init__(self) -> None:
        self.cwd = self.home

    def swap(self, text: str) -> str:
        for pattern, value in self.swaps:
            text = pattern.sub(value, text)
        return text

    def run(self, command: str) -> str:
        if command.startswith("cd "):
            self.cwd = (self.cwd / command[3:].strip()).resolve()
            return ""
        done = subprocess.run(["bash", "-c", command], cwd=self.cwd, env=self.env, capture_output=True, text=True,
                              timeout=RUN_S)
        failed = f"(exit code {done.returncode})\n" if done.returncode else ""
        return done.stdout + done.stderr + failed

    def start_in_background(self, command: str) -> None:
        self.stop_background()
        log = self.home / f"background-{len(self.logs)}.log"
        self.logs.append(log)
        with log.open("w") as out:
            self.background = subprocess.Popen(["bash", "-c", f"exec {command}"], cwd=self.cwd, env=self.env,
                                               stdout=out, stderr=subprocess.STDOUT, text=True,
                                               start_new_session=True)

    def stop_background(self) -> None:
        if self.background is None:
            return
        os.killpg(self.background.pid, signal.SIGINT)  # the reader's Ctrl-C
        try:
            self.background.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.background.pid, signal.SIGKILL)
            self.background.wait()
        self.background = None


@pytest.fixture
def reader(endpoints: Endpoints, spark_sessions: SessionPool, tmp_path: Path) -> Iterator[Reader]:
    name, port = f"tut{uuid.uuid4().hex[:8]}", free_port()
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "CBT__KAFKA__BOOTSTRAP_SERVERS": endpoints.kafka_bootstrap, "CBT__REDIS__URL": endpoints.redis_url,
           "CBT__SPARK__REMOTE": endpoints.spark_remote, "CBT__API__ADDR": f"127.0.0.1:{port}"}
    swaps = [(re.compile(rf"(?<![A-Za-z0-9]){PAGE_NAME}(?![A-Za-z0-9])"), name),
             (re.compile(re.escape(PAGE_API)), f"127.0.0.1:{port}")]
    shell = Reader(tmp_path, env, swaps)
    try:
        yield shell
    finally:
        shell.stop_background()
        for log in shell.logs:
            shutil.copy(log, PROJECT / "var" / "e2e-logs" / f"{name}-{log.name}")
        spark = spark_sessions.session("tests")
        for database in (f"{name}_raw", name, f"{name}_admin"):
            spark.sql(f"DROP DATABASE IF EXISTS `{database}` CASCADE")
        redis = Redis.from_url(endpoints.redis_url)
        keys = list(redis.scan_iter(match=f"{name}:*"))
        if keys:
            redis.delete(*keys)
        redis.close()
        delete_topics(endpoints.kafka_bootstrap, Topics(f"{name}.").all(("default",)))


def test_every_command_of_the_tutorial_prints_what_the_page_shows(reader: Reader, endpoints: Endpoints) -> None:
    (PROJECT / "var" / "e2e-logs").mkdir(parents=True, exist_ok=True)
    for step in steps(PAGE.read_text()):
        where = f"docs/tutorial.md:{step.line}"
        if isinstance(step, File):
            target = reader.cwd / step.path
            assert target.is_file(), f"{where}: the page replaces {step.path}, which the project does not have"
            target.write_text(reader.swap(step.text))
            continue
        command, expected = reader.swap(step.command), tuple(reader.swap(line) for line in step.expected)
        if step.mode == "stack-is-up":
            assert _stack_is_up(endpoints), f"{where}: the suite's stack stands in for `{command}`"
        elif step.mode == "installed":
            assert shutil.which("cbt", path=reader.env["PATH"]), f"{where}: `cbt` is not on the PATH"
        elif step.mode == "background":
            reader.start_in_background(command)
        else:
            _run_until_it_matches(reader, step, command, expected, where)


def _run_until_it_matches(reader: Reader, step: Command, command: str, expected: tuple[str, ...],
                          where: str) -> None:
    deadline = time.monotonic() + (UNTIL_MATCH_S if step.mode == "until-match" else 0)
    while True:
        output = reader.run(command)
        if matches(expected, output):
            return
        if time.monotonic() >= deadline:
            shown = "\n".join(expected)
            pytest.fail(f"{where}: `{command}` printed\n{output}\nwhere the page shows\n{shown}")
        time.sleep(2)


def _stack_is_up(endpoints: Endpoints) -> bool:
    from cbt.dev.process import port_open

    hosts = [endpoints.kafka_bootstrap, endpoints.redis_url.split("//")[1].split("/")[0],
             endpoints.spark_remote.split("//")[1]]
    return all(port_open(h.rsplit(":", 1)[0], int(h.rsplit(":", 1)[1])) for h in hosts)
