"""deploy/docker/, checked offline: the images install third-party packages only with hashes taken from uv.lock
(context.sh + requirement_hashes.py, then ``pip install --require-hashes``), and the registry's base images of
CBT_IMAGE_BASES=official only when pinned by digest (official-bases.sh refuses the rest with file and line)."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.deploy.kube import REPO

DOCKER = REPO / "deploy" / "docker"
DIGEST = "sha256:" + "0123456789abcdef" * 4
DOCKERFILES = sorted(DOCKER.glob("*.Dockerfile")) + sorted((DOCKER / "base").glob("*.Dockerfile"))


def official_bases(tmp_path: Path, text: str | None) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin"}
    if text is not None:
        (tmp_path / "bases.txt").write_text(text)
        env["CBT_OFFICIAL_BASES"] = str(tmp_path / "bases.txt")
    return subprocess.run(["bash", str(DOCKER / "official-bases.sh")], capture_output=True, text=True, env=env,
                          timeout=30, check=False)


def base_arguments() -> set[str]:
    """The build arguments the Dockerfiles' FROM lines name (``FROM ${PYTHON_BASE}``)."""
    return {m for f in DOCKERFILES for m in re.findall(r"^FROM \$\{([A-Z_]+)\}", f.read_text(), re.MULTILINE)}


def test_every_base_image_is_a_build_argument_so_build_sh_chooses_it() -> None:
    stages: set[str] = set()
    for dockerfile in DOCKERFILES:
        for line in re.findall(r"^FROM .*$", dockerfile.read_text(), re.MULTILINE):
            image = line.split()[1]
            assert image.startswith("${") or image in stages, f"{dockerfile.name}: {line}: a hard-coded base image"
            stages.update(line.split()[3:4])  # FROM x AS <stage>
    assert base_arguments() == {"PYTHON_BASE", "JRE_BASE", "DEBIAN_BASE"}


def test_the_shipped_official_bases_are_refused_until_pinned_by_digest(tmp_path: Path) -> None:
    """No digest is invented here (these machines cannot pull): the official build fails clearly instead."""
    done = official_bases(tmp_path, None)
    assert done.returncode == 2 and done.stdout == ""
    for name in base_arguments():
        assert re.search(rf"^deploy/docker/official-bases.txt:\d+: {name}: \S+ is not pinned by digest", done.stderr,
                         re.MULTILINE), done.stderr


def test_pinned_official_bases_become_build_arguments(tmp_path: Path) -> None:
    text = "".join(f"{name}=registry.example:5000/library/{name.lower()}:1@{DIGEST}\n" for name in base_arguments())
    done = official_bases(tmp_path, "# pinned\n" + text)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.split()
    assert lines[::2] == ["--build-arg"] * len(base_arguments())
    assert set(lines[1::2]) == set(text.split())


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param(f"PYTHON_BASE=python:3.11-slim-bookworm@{DIGEST}\nJRE_BASE=eclipse-temurin:17-jre@{DIGEST}\n",
                 "bases.txt: DEBIAN_BASE: missing (a base of ", id="missing-base"),
    pytest.param("PYTHON_BASE=python@sha256:abc\n", "bases.txt:1: PYTHON_BASE: python@sha256:abc is not pinned",
                 id="short-digest"),
    pytest.param("python base\n", "bases.txt:1: expected NAME=image@sha256:<digest>, got 'python base'",
                 id="not-a-pair"),
])
def test_a_bad_official_bases_file_is_named_with_its_line(tmp_path: Path, text: str, expected: str) -> None:
    done = official_bases(tmp_path, text)
    assert done.returncode == 2 and expected in done.stderr, done.stderr


def test_every_pip_install_of_requirements_checks_hashes() -> None:
    installs = [(f.name, line) for f in DOCKERFILES for line in f.read_text().splitlines()
                if re.search(r"pip install .*-r ", line)]
    assert installs, "the service images install their requirements with pip"
    assert [(name, line) for name, line in installs if "--require-hashes" not in line] == []


def test_the_build_backend_file_pins_the_version_the_distributions_build_with() -> None:
    wanted = set(re.findall(r"hatchling==[\d.]+", "".join(
        p.read_text() for p in [REPO / "shared" / "pyproject.toml", *REPO.glob("services/*/pyproject.toml")])))
    pinned = (DOCKER / "build-requirements.txt").read_text()
    assert len(wanted) == 1 and next(iter(wanted)) in pinned
    lines = pinned.splitlines()
    pins = [i for i, line in enumerate(lines) if re.match(r"[a-z][\w.-]*==", line)]
    assert pins and all(re.fullmatch(r"\s+--hash=sha256:[0-9a-f]{64}( \\)?", lines[i + 1]) for i in pins)


# requirement_hashes.py on a small lock and wheelhouse


def hashes(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(DOCKER / "requirement_hashes.py"), *map(str, args)],
                          capture_output=True, text=True, timeout=30, check=False)


LOCK = f"""version = 1
[[package]]
name = "Foo_Bar"
version = "1.0"
sdist = {{ url = "x", hash = "sha256:{'1' * 64}" }}
wheels = [{{ url = "y", hash = "sha256:{'2' * 64}" }}]

[[package]]
name = "baz"
version = "2.0"
sdist = {{ url = "z", hash = "sha256:{'3' * 64}" }}
"""


def test_locked_takes_every_hash_from_the_lock_and_names_what_it_lacks(tmp_path: Path) -> None:
    lock = tmp_path / "uv.lock"
    lock.write_text(LOCK)
    (tmp_path / "a.txt").write_text("foo-bar==1.0\nbaz==2.0\n")
    (tmp_path / "b.txt").write_text("baz==2.0\n")
    done = hashes("locked", tmp_path / "out.txt", tmp_path / "a.txt", tmp_path / "b.txt", "--lock", lock)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out.txt").read_text() == (
        f"baz==2.0 \\\n    --hash=sha256:{'3' * 64}\n"
        f"foo-bar==1.0 \\\n    --hash=sha256:{'1' * 64} \\\n    --hash=sha256:{'2' * 64}\n")
    (tmp_path / "b.txt").write_text("# build\nbaz==2.1\n")
    done = hashes("locked", tmp_path / "out.txt", tmp_path / "a.txt", tmp_path / "b.txt", "--lock", lock)
    assert done.returncode == 1 and f"{tmp_path / 'b.txt'}:2: baz==2.1: not in uv.lock" in done.stderr


def test_pin_writes_the_hash_of_each_wheel_and_names_a_missing_one(tmp_path: Path) -> None:
    wheelhouse = tmp_path / "wheels"
    wheelhouse.mkdir()
    (wheelhouse / "foo_bar-1.0-py3-none-any.whl").write_bytes(b"checked wheel")
    requirements = tmp_path / "worker.txt"
    requirements.write_text("foo-bar==1.0\n")
    assert hashes("pin", wheelhouse, requirements).returncode == 0
    digest = hashlib.sha256(b"checked wheel").hexdigest()
    assert requirements.read_text() == f"foo-bar==1.0 \\\n    --hash=sha256:{digest}\n"
    requirements.write_text("foo-bar==1.0\nbaz==2.0\n")
    done = hashes("pin", wheelhouse, requirements)
    assert done.returncode == 1 and f"{requirements}:2: baz==2.0: no wheel in {wheelhouse}" in done.stderr
