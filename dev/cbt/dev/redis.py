"""Redis from Debian's ``redis-server``, on loopback, append-only file on."""

from __future__ import annotations

import os
import shutil
import subprocess

import redis

from cbt.base.errors import InfraError
from cbt.dev.layout import HOST, Layout
from cbt.dev.process import ManagedProcess


class RedisServer:
    name = "redis"
    port_env = "CBT_DEV_REDIS_PORT"
    needs: tuple[str, ...] = ()
    detail = ""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.home = layout.var / "redis"
        self.process = ManagedProcess(self.name, self.home / "redis.pid", self.home / "redis.log")

    @property
    def endpoint(self) -> str:
        return self.layout.redis_url

    @property
    def port(self) -> int:
        return self.layout.redis_port

    def install(self) -> None:
        """Install Debian's redis-server when it is missing (needs root or sudo)."""
        if shutil.which("redis-server"):
            return
        sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "redis-server"]):
            if subprocess.run([*sudo, *cmd], env=env, capture_output=True, check=False).returncode != 0:
                raise InfraError("redis: redis-server is missing and 'apt-get install redis-server' failed")

    def start(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        argv = [
            "redis-server", "--bind", HOST, "--port", str(self.layout.redis_port), "--dir", str(self.home),
            "--appendonly", "yes", "--appendfsync", "everysec", "--save", "", "--daemonize", "no",
            "--protected-mode", "yes", "--maxmemory-policy", "noeviction",
        ]
        self.process.start(argv, cwd=self.home)

    def is_ready(self) -> bool:
        try:
            return bool(redis.Redis.from_url(self.endpoint, socket_timeout=1.0).ping())
        except redis.RedisError:
            return False

    def after_ready(self) -> None:
        return None
