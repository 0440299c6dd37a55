"""CBT's own React frontend (ethpandaops/cbt ``frontend/``) as a client of this deployment: built from CBT's source,
served against the api's CBT-compatible routes, driven with Playwright, its dashboard, DAG and a model page
screenshotted into docs/img/cbt-frontend-*.png, and what rendered reported.

Not part of ``make test``: it needs CBT's source and the npm registry (pnpm and ~800 packages). The part that runs
without fetching is the contract test, tests/integration/test_cbt_api.py.

    .venv/bin/python -m bench.cbt_frontend --cbt-git /path/to/cbt(.git) [--skip-build]

Steps: ``git archive`` of CBT's ``frontend/`` at ``--commit`` into var/cbt-frontend/; ``pnpm install
--frozen-lockfile`` (pnpm run through npx at the version CBT's package.json names) and ``vite build`` (CBT's own
config; ``tsc`` is skipped); the example pipeline (the e2e harness, without its slowest models) caught up over four
minutes of source rows on the local stack, with an api process; a small server for the built files that passes
``/api/v1/…`` to the api's ``/cbt/api/v1/…`` (the base whose ``/models`` keeps CBT's ``type`` enum, which the
frontend checks with zod; CBT's Go binary served the files and the API from one origin the same way); Debian's
Chromium through Playwright for Python.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, sync_playwright

from cbt.adapters.spark import SessionPool
from cbt.dev.layout import Layout
from cbt.dev.pipeline import free_port
from tests.conftest import Endpoints
from tests.e2e.api_stack import ApiStack, api_deployment
from tests.e2e.harness import PROJECT, T0

CBT_COMMIT = "109267226f0ff4d782b3c3a16ed5b67c8375deac"
"""The CBT commit whose frontend is built (the one tests/fixtures/cbt/openapi.yaml comes from)."""
PNPM = "pnpm@10.30.1"
"""CBT's package.json ``packageManager``."""
WORK = PROJECT / "var" / "cbt-frontend"
IMAGES = PROJECT / "docs" / "img"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
VIEWPORT = {"width": 1440, "height": 900}
SOURCE_END = T0 + 240
LAST_SLOT_END = SOURCE_END - 12 + 1
LEAN = ("block_gas", "block_propagation_five_minute", "entity_leaderboard")
"""As tests/e2e/test_api.py: the example pipeline without its slowest models."""
API_PREFIX = "/api/v1/"
COMPAT_PREFIX = "/cbt/api/v1/"


def build(cbt_git: Path, commit: str) -> Path:
    """CBT's frontend built with its own lock file and vite config; the folder of the built files."""
    source = WORK / "src"
    shutil.rmtree(source, ignore_errors=True)
    source.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(cbt_git), "archive", commit, "frontend"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(source)], input=archive, check=True)
    frontend = source / "frontend"
    (frontend / ".npmrc").unlink(missing_ok=True)  # its use-node-version would fetch a Node build
    env = {**os.environ, "CI": "true"}
    subprocess.run(["npx", "-y", PNPM, "install", "--frozen-lockfile"], cwd=frontend, check=True, env=env)
    subprocess.run(["npx", "-y", PNPM, "exec", "vite", "build", "--mode", "production"], cwd=frontend, check=True,
                   env=env)
    return frontend / "build" / "frontend"


def _handler(static: Path, api_base: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        """The built files (any other path: index.html, the app routes itself); ``/api/v1/…`` to the api."""

        def do_GET(self) -> None:
            if self.path.startswith(API_PREFIX):
                self._proxy()
                return
            target = (static / self.path.split("?")[0].lstrip("/")).resolve()
            if not target.is_file() or static not in target.parents:
                target = static / "index.html"
            kind = {".js": "text/javascript", ".css": "text/css", ".html": "text/html", ".png": "image/png",
                    ".svg": "image/svg+xml", ".woff2": "font/woff2", ".json": "application/json"}
            self._send(200, kind.get(target.suffix, "application/octet-stream"), target.read_bytes())

        def do_POST(self) -> None:
            self._proxy()

        def _proxy(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            request = urllib.request.Request(api_base + COMPAT_PREFIX + self.path.removeprefix(API_PREFIX),
                                             data=self.rfile.read(length) if length else None, method=self.command)
            try:
                with urllib.request.urlopen(request, timeout=120) as answer:
                    self._send(answer.status, answer.headers.get("Content-Type", ""), answer.read())
            except urllib.error.HTTPError as e:
                self._send(e.code, e.headers.get("Content-Type", ""), e.read())

        def _send(self, status: int, kind: str, body: bytes) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the page was closed (after its screenshot) while a request was answered

        def log_message(self, format: str, *args: Any) -> None:
            del format, args

    return Handler


@contextmanager
def serving(static: Path, api_base: str) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), _handler(static.resolve(), api_base))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


@dataclass
class Visit:
    name: str
    url: str
    errors: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)
    api_calls: list[str] = field(default_factory=list)
    text: str = ""


def visit(page: Page, name: str, url: str, ready: str, full_page: bool = False) -> Visit:
    """Open ``url``, wait for ``ready`` (a selector) and the network to settle, screenshot it."""
    seen = Visit(name, url)
    page.on("pageerror", lambda error: seen.errors.append(f"uncaught: {error}"))
    page.on("console", lambda m: seen.errors.append(f"console: {m.text}") if m.type == "error" else None)
    page.on("response", lambda r: (seen.api_calls.append(f"{r.status} {r.url.split('/api/v1', 1)[-1]}")
                                   if "/api/v1/" in r.url else None))
    page.on("requestfailed", lambda r: seen.failed_requests.append(r.url))
    page.goto(url)
    page.wait_for_selector(ready, timeout=60_000)
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(1500)  # charts and the DAG layout animate in
    IMAGES.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(IMAGES / f"cbt-frontend-{name}.png"), full_page=full_page)
    seen.text = page.inner_text("body")[:600]
    return seen


def drive(frontend_url: str, stack: ApiStack) -> list[Visit]:
    model = stack.model("block_propagation_minute")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        context = browser.new_context(viewport=VIEWPORT)  # type: ignore[arg-type]
        visits = []
        for name, path, ready in (("dashboard", "/", "text=@every 1m"),  # the scheduled run's card, read last
                                  ("dag", "/dag", ".react-flow__node"),
                                  ("model", f"/model/{model}", f"text={model}")):
            page = context.new_page()
            visits.append(visit(page, name, frontend_url + path, ready, full_page=name == "model"))
            page.close()
        browser.close()
    return visits


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cbt-git", type=Path, help="a clone of ethpandaops/cbt (bare or not)")
    parser.add_argument("--commit", default=CBT_COMMIT)
    parser.add_argument("--skip-build", action="store_true", help=f"reuse {WORK}/src/frontend/build/frontend")
    args = parser.parse_args()
    static = WORK / "src" / "frontend" / "build" / "frontend"
    if not args.skip_build:
        if args.cbt_git is None:
            parser.error("--cbt-git is needed to build (or --skip-build to reuse the last build)")
        static = build(args.cbt_git, args.commit)
    layout = Layout.from_env()
    endpoints = Endpoints(layout.kafka_bootstrap, layout.redis_url, layout.spark_remote)
    sessions = SessionPool(endpoints.spark_remote)
    try:
        with (api_deployment(endpoints, sessions, t0=T0, source_end=SOURCE_END, last_slot_end=LAST_SLOT_END,
                             disabled=LEAN) as stack, serving(static, stack.base) as url):
            visits = drive(url, stack)
    finally:
        sessions.close()
    print(json.dumps([vars(v) for v in visits], indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
