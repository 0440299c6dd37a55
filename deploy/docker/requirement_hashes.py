"""Hashes for the images' requirement files (deploy/docker/context.sh), so every third-party package an image
installs is the file uv.lock names, checked by ``pip install --require-hashes``.

  locked OUT IN... [--extra FILE]   every ``name==version`` of the IN files, once, with the hashes uv.lock records for
                                    it (or FILE's, for the build backend, which uv.lock does not hold): context.sh
                                    downloads the wheelhouse with ``pip wheel --require-hashes -r OUT``, so each file
                                    is checked against the lock on the way in
  pin WHEELHOUSE FILE...            rewrite each FILE's ``name==version`` lines with the sha256 of that wheel in
                                    WHEELHOUSE: the image installs exactly the files checked above (for a package
                                    uv.lock has as a source archive only, the wheel built here from the checked
                                    archive)

Problems name the file and line: ``requirements/worker.txt:3: foo==1.0: not in uv.lock``; exit status 1."""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
import tomllib
from pathlib import Path

PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)")
HASH = re.compile(r"--hash=(sha256:[0-9a-f]{64})")


class Problems(Exception):
    """Lines that cannot be pinned, each ``path:line: requirement: problem``."""


def normalize(name: str) -> str:
    """A distribution name as the lock and wheel file names compare it (PEP 503, then ``_`` for wheels)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def lock_hashes(lock: Path) -> dict[tuple[str, str], list[str]]:
    """(name, version) -> the hashes of every archive uv.lock records for it (source archive and wheels)."""
    found: dict[tuple[str, str], list[str]] = {}
    for package in tomllib.loads(lock.read_text())["package"]:
        files = [package.get("sdist", {}), *package.get("wheels", [])]
        hashes = [f["hash"] for f in files if "hash" in f]
        if hashes and "version" in package:
            found[(normalize(package["name"]), package["version"])] = hashes
    return found


def hashed_file(path: Path) -> dict[tuple[str, str], list[str]]:
    """(name, version) -> hashes of a requirement file written with hashes (``--hash`` on continuation lines)."""
    found: dict[tuple[str, str], list[str]] = {}
    current: tuple[str, str] | None = None
    for line in path.read_text().splitlines():
        pin = PIN.match(line.strip())
        if pin:
            current = (normalize(pin[1]), pin[2])
            found[current] = []
        if current is not None:
            found[current] += HASH.findall(line)
    return found


def pins(path: Path) -> list[tuple[int, str, str]]:
    """(line number, name, version) of every pinned requirement of a file."""
    return [(number, pin[1], pin[2]) for number, line in enumerate(path.read_text().splitlines(), 1)
            if (pin := PIN.match(line.strip()))]


def locked(out: Path, inputs: list[Path], lock: Path, extra: Path | None) -> None:
    known = lock_hashes(lock)
    known.update(hashed_file(extra) if extra else {})
    lines, problems, seen = [], [], set()
    for path in inputs:
        for number, name, version in pins(path):
            key = (normalize(name), version)
            if key in seen:
                continue
            seen.add(key)
            if key not in known:
                where = f"uv.lock nor {extra}" if extra else "uv.lock"
                problems.append(f"{path}:{number}: {name}=={version}: not in {where}")
                continue
            lines.append(" \\\n    ".join([f"{name}=={version}", *(f"--hash={h}" for h in known[key])]))
    if problems:
        raise Problems("\n".join(problems))
    out.write_text("".join(f"{line}\n" for line in sorted(lines, key=str.lower)))


def wheel_hashes(wheelhouse: Path) -> dict[tuple[str, str], list[str]]:
    """(name, version) -> sha256 of each wheel in the folder (``name-version-tags.whl``)."""
    found: dict[tuple[str, str], list[str]] = {}
    for wheel in sorted(wheelhouse.glob("*.whl")):
        name, version = wheel.name.split("-")[:2]
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        found.setdefault((normalize(name), version), []).append(f"sha256:{digest}")
    return found


def pin(wheelhouse: Path, files: list[Path]) -> None:
    built = wheel_hashes(wheelhouse)
    problems = []
    for path in files:
        out = []
        for number, name, version in pins(path):
            hashes = built.get((normalize(name), version))
            if not hashes:
                problems.append(f"{path}:{number}: {name}=={version}: no wheel in {wheelhouse}")
                continue
            out.append(" \\\n    ".join([f"{name}=={version}", *(f"--hash={h}" for h in hashes)]))
        path.write_text("".join(f"{line}\n" for line in out))
    if problems:
        raise Problems("\n".join(problems))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    lock_cmd = commands.add_parser("locked")
    lock_cmd.add_argument("out", type=Path)
    lock_cmd.add_argument("inputs", type=Path, nargs="+")
    lock_cmd.add_argument("--lock", type=Path, default=Path("uv.lock"))
    lock_cmd.add_argument("--extra", type=Path)
    pin_cmd = commands.add_parser("pin")
    pin_cmd.add_argument("wheelhouse", type=Path)
    pin_cmd.add_argument("files", type=Path, nargs="+")
    args = parser.parse_args(argv)
    try:
        if args.command == "locked":
            locked(args.out, args.inputs, args.lock, args.extra)
        else:
            pin(args.wheelhouse, args.files)
    except Problems as e:
        print(e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
